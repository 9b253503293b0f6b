package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// session warm sends the launch the profile and flags resolve to, with
// this shell's environment (what a create from it sends), the profile's
// warm count unless --spares is given, and --idle in milliseconds; a
// profile on another host is refused before any request.
func TestSessionWarm(t *testing.T) {
	profiles := filepath.Join(t.TempDir(), "profiles.toml")
	os.WriteFile(profiles, []byte("[profiles.quick]\nharness = \"codex\"\nmodel = \"gpt-5\"\nwarm = 2\n[profiles.far]\nharness = \"codex\"\nhost = \"me@devbox\"\nwarm = 1\n"), 0o600)
	vars := map[string]string{"DLGT_PROFILES": profiles}
	environ := []string{"PATH=/bin", "SECRET=mine"}
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionWarm, rpc.SessionWarmResult{Shape: "abc", Spares: 2, Ready: 1, Starting: 1, RSSBytes: 64 << 20, IdleMS: 1_800_000})
	cwd := t.TempDir()

	e, out, _ := cliEnv(t, d, vars, environ, "")
	code, stdout := runCLI(t, e, out, "session", "warm", "--profile", "quick", "--cwd", cwd, "--idle", "30m", "-o", "text")
	if code != 0 || stdout != "shape abc: 2 spares kept (1 ready, 1 starting), 64.0 MiB resident, idle after 1800s\n" {
		t.Fatalf("exit %d %q", code, stdout)
	}
	var p rpc.SessionWarmParams
	if raw := d.Params(rpc.MethodSessionWarm); len(raw) != 1 || json.Unmarshal(raw[0], &p) != nil {
		t.Fatalf("params %s", raw)
	}
	if p.Harness != "codex" || p.Model != "gpt-5" || p.Cwd != cwd || p.Spares != 2 || p.IdleMS != 1_800_000 || p.Environment["SECRET"] != "mine" || len(p.Environment) != 2 {
		t.Fatalf("params %+v", p)
	}

	e, out, _ = cliEnv(t, d, vars, environ, "")
	if code, _ := runCLI(t, e, out, "session", "warm", "--profile", "quick", "--spares", "0"); code != 0 {
		t.Fatalf("--spares 0: exit %d", code)
	}
	if raw := d.Params(rpc.MethodSessionWarm); len(raw) != 2 || !strings.Contains(string(raw[1]), `"spares":0`) {
		t.Fatalf("--spares 0 sent %s", raw)
	}

	e, out, _ = cliEnv(t, d, vars, environ, "")
	if code, _ := runCLI(t, e, out, "session", "warm", "--profile", "far"); code != cli.ExitError || len(d.Params(rpc.MethodSessionWarm)) != 2 {
		t.Fatalf("a remote profile: exit %d, %d requests", code, len(d.Params(rpc.MethodSessionWarm)))
	}
}
