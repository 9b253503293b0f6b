package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// .ci/install-harnesses with npm pointed at a registry nobody serves (a
// closed port on 127.0.0.1) and an empty prefix and cache gives up on its
// own with npm's errors and a message naming the registry, instead of
// waiting silently; past DLGT_NPM_TIMEOUT it stops npm. The README's
// `eval "$(.ci/install-harnesses --export)"` then sets nothing and leaves
// the shell's options as they were.
func TestInstallHarnessesFailsClearlyOffline(t *testing.T) {
	for _, tool := range []string{"bash", "npm", "node", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, ".ci", "install-harnesses")
	run := func(limit string) (int, string, string) {
		t.Helper()
		dir := t.TempDir()
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8",
			"npm_config_registry=http://127.0.0.1:9/", "npm_config_cache=" + filepath.Join(dir, "cache"),
			"npm_config_userconfig=" + filepath.Join(dir, "npmrc"), "SCRIPT=" + script, "PREFIX=" + filepath.Join(dir, "prefix")}
		if limit != "" {
			env = append(env, "DLGT_NPM_TIMEOUT="+limit)
		}
		// Generous: the point is that it ends by itself (here in about
		// half a minute: npm's quick retries) rather than after npm's own
		// minutes of retrying.
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "--norc", "--noprofile", "-c",
			`out=$("$SCRIPT" --export "$PREFIX"); st=$?; eval "$out"; echo "DLGT_CLAUDE_BIN=${DLGT_CLAUDE_BIN-unset}"; set -o | grep allexport; exit $st`)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("install-harnesses still ran after 4 minutes against a closed port:\n%s", stderr.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	check := func(name string, code int, stdout, stderr string, want ...string) {
		t.Helper()
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", name, code)
		}
		if !strings.Contains(stdout, "DLGT_CLAUDE_BIN=unset") || !strings.Contains(stdout, "allexport") || !strings.Contains(stdout, "off") {
			t.Errorf("%s: the eval set something or left allexport on:\n%s", name, stdout)
		}
		for _, w := range append(want, "http://127.0.0.1:9/", "install-harnesses: error:") {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", name, w, stderr)
			}
		}
	}
	code, stdout, stderr := run("")
	check("closed port", code, stdout, stderr, "ECONNREFUSED", "npm install failed")
	code, stdout, stderr = run("2")
	check("DLGT_NPM_TIMEOUT=2", code, stdout, stderr, "did not finish within 2s")
}
