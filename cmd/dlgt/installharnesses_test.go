package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/pty"
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

// fakeHarnessLayout is a bash script, `layout DIR PKG VERSION`, that lays
// out PKG at VERSION under the npm prefix DIR as npm would for the four
// pinned CLIs: package.json files, the platform packages and the binaries
// where .ci/install-harnesses looks for them. Each binary is a script that
// appends one line to $FAKE_LOG when run ("NAME ARGS", then " stdin-tty"
// when its stdin is a terminal and " ctty" when it has a controlling
// terminal) and prints what the real one prints for --version.
const fakeHarnessLayout = `#!/bin/bash
set -eu
nm=$1/node_modules pkg=$2 ver=$3
pj() { mkdir -p "$nm/$1"; printf '{\n  "name": "%s",\n  "version": "%s"\n}\n' "$1" "$2" >"$nm/$1/package.json"; }
cli() {
	mkdir -p "${1%/*}"
	{
		echo '#!/bin/bash'
		echo 's=; [ -t 0 ] && s+=" stdin-tty"; (exec 3</dev/tty) 2>/dev/null && s+=" ctty"'
		printf 'echo "%s $*$s" >>"$FAKE_LOG"\n' "$2"
		printf 'echo "%s"\n' "$3"
	} >"$1"
	chmod +x "$1"
}
case $pkg in
@anthropic-ai/claude-code)
	pj "$pkg" "$ver"; pj "$pkg-linux-x64" "$ver"
	cli "$nm/$pkg-linux-x64/claude" claude "$ver (Claude Code)" ;;
@openai/codex)
	pj "$pkg" "$ver"; pj "$pkg-linux-x64" "$ver-linux-x64"
	cli "$nm/$pkg-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" codex "codex-cli $ver" ;;
@google/gemini-cli)
	pj "$pkg" "$ver"
	cli "$nm/$pkg/bundle/gemini.js" gemini "$ver"
	mkdir -p "$nm/.bin"; ln -sf "../$pkg/bundle/gemini.js" "$nm/.bin/gemini" ;;
@github/copilot)
	pj "$pkg" "$ver"; pj "$pkg-linux-x64" "$ver"
	cli "$nm/$pkg-linux-x64/copilot" copilot "GitHub Copilot CLI $ver." ;;
*) echo "layout: unknown package $pkg" >&2; exit 1 ;;
esac
`

// fakeNpm stands in for npm on PATH: it logs its call like the fake
// binaries do, answers `config get registry`, and `install --prefix DIR
// PKG@VERSION...` lays the packages out with $FAKE_LAYOUT.
const fakeNpm = `#!/bin/bash
s=; [ -t 0 ] && s+=" stdin-tty"; (exec 3</dev/tty) 2>/dev/null && s+=" ctty"
echo "npm $1$s" >>"$FAKE_LOG"
if [[ $1 == config ]]; then echo http://127.0.0.1:9/; exit 0; fi
dir=
pkgs=()
while (($#)); do
	case $1 in
	--prefix) dir=$2; shift ;;
	@*@*) pkgs+=("$1") ;;
	esac
	shift
done
for p in "${pkgs[@]}"; do "$FAKE_LAYOUT" "$dir" "${p%@*}" "${p##*@}"; done
`

// installHarnessesFakes writes the fake npm and layout script into a new
// directory and returns the script's path, that directory (to put first on
// PATH), the log the fakes append to, and the pinned versions read from
// the script (claude, codex, gemini, copilot).
func installHarnessesFakes(t *testing.T) (script, bin, log string, pins [4]string) {
	t.Helper()
	for _, tool := range []string{"bash", "timeout", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(root, ".ci", "install-harnesses")
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"CLAUDE_VERSION", "CODEX_VERSION", "GEMINI_VERSION", "COPILOT_VERSION"} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(text)
		if m == nil {
			t.Fatalf("%s sets no %s", script, name)
		}
		pins[i] = string(m[1])
	}
	bin = t.TempDir()
	log = filepath.Join(bin, "calls.log")
	for name, body := range map[string]string{"npm": fakeNpm, "layout": fakeHarnessLayout} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// node is only looked for (Gemini CLI's interpreter), never run here.
	if err := os.WriteFile(filepath.Join(bin, "node"), []byte("#!/bin/sh\necho \"node $*\" >>\"$FAKE_LOG\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, bin, log, pins
}

func installHarnessesEnv(bin, log string) []string {
	return []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + filepath.Dir(log), "LANG=C.UTF-8",
		"FAKE_LOG=" + log, "FAKE_LAYOUT=" + filepath.Join(bin, "layout")}
}

// With the pinned versions installed, --export answers from the installed
// package.json files and the binaries' presence: it runs neither npm nor
// any CLI (each CLI's --version took 10 to 35 s in all, Gemini CLI's most).
func TestInstallHarnessesInstalledRunsNothing(t *testing.T) {
	script, bin, log, pins := installHarnessesFakes(t)
	prefix := filepath.Join(t.TempDir(), "prefix")
	for i, pkg := range []string{"@anthropic-ai/claude-code", "@openai/codex"} {
		if out, err := exec.Command(filepath.Join(bin, "layout"), prefix, pkg, pins[i]).CombinedOutput(); err != nil {
			t.Fatalf("layout %s: %v\n%s", pkg, err, out)
		}
	}
	if out, err := exec.Command(filepath.Join(bin, "layout"), filepath.Join(prefix, "gemini"), "@google/gemini-cli", pins[2]).CombinedOutput(); err != nil {
		t.Fatalf("layout gemini: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(bin, "layout"), filepath.Join(prefix, "copilot"), "@github/copilot", pins[3]).CombinedOutput(); err != nil {
		t.Fatalf("layout copilot: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", script, "--export", prefix)
	cmd.Env = installHarnessesEnv(bin, log)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	want := "export DLGT_CLAUDE_BIN=" + prefix + "/node_modules/@anthropic-ai/claude-code-linux-x64/claude\n" +
		"export DLGT_CODEX_BIN=" + prefix + "/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex\n" +
		"export DLGT_GEMINI_BIN=" + prefix + "/gemini/node_modules/.bin/gemini\n" +
		"export DLGT_COPILOT_BIN=" + prefix + "/copilot/node_modules/@github/copilot-linux-x64/copilot\n"
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	if calls, _ := os.ReadFile(log); len(calls) > 0 {
		t.Errorf("with everything installed the script still ran:\n%s", calls)
	}

	// One platform package at another version: npm runs for that prefix
	// only, and what it installed must answer --version.
	if out, err := exec.Command(filepath.Join(bin, "layout"), prefix, "@openai/codex", "0.0.1").CombinedOutput(); err != nil {
		t.Fatalf("layout: %v\n%s", err, out)
	}
	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command("bash", "--norc", "--noprofile", script, "--export", prefix)
	cmd.Env = installHarnessesEnv(bin, log)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	calls, _ := os.ReadFile(log)
	if got := string(calls); got != "npm config\nnpm install\nclaude --version\ncodex --version\n" {
		t.Errorf("after an outdated Codex the script ran:\n%s\nwant npm, then claude's and codex's --version (not gemini's nor copilot's)", got)
	}
}

// Installing under a terminal (as from an interactive shell, where a
// background job reading it is stopped): npm and every --version probe
// read stdin from /dev/null and have no controlling terminal, so none can
// be stopped by the terminal (SIGTTIN/SIGTTOU) nor read the user's keys.
func TestInstallHarnessesProbesDetachedFromTerminal(t *testing.T) {
	script, bin, log, _ := installHarnessesFakes(t)
	prefix := filepath.Join(t.TempDir(), "prefix")
	p, err := pty.Start(pty.Options{Argv: []string{"bash", "--norc", "--noprofile", script, "--export", prefix},
		Env: installHarnessesEnv(bin, log), Rows: 24, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := p.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-p.Done():
	case <-time.After(2 * time.Minute):
		p.Terminate(5 * time.Second)
		t.Fatal("install-harnesses did not end within 2 minutes under a terminal")
	}
	<-done
	if st := p.Wait(); st.Code != 0 {
		t.Fatalf("exit %v:\n%s", st, out.String())
	}
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	want := []string{"npm config", "npm install", "npm config", "npm install", "npm config", "npm install",
		"claude --version", "codex --version", "gemini --version", "copilot --version"}
	if len(lines) != len(want) {
		t.Fatalf("calls:\n%s\nwant %q", calls, want)
	}
	for i, line := range lines {
		if line != want[i] {
			t.Errorf("call %d: %q, want %q (no terminal on stdin, no controlling terminal)", i, line, want[i])
		}
	}
}
