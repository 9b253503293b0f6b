package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

type doctorDoc struct {
	OK     bool          `json:"ok"`
	Checks []doctorCheck `json:"checks"`
}

func runDoctor(t *testing.T, vars map[string]string) (int, doctorDoc, map[string]doctorCheck) {
	t.Helper()
	e, out, errb := testEnv(t, vars, "")
	code := run([]string{"doctor"}, e)
	var doc doctorDoc
	if strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("stdout %q is not one line (stderr %q)", out, errb)
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	byName := map[string]doctorCheck{}
	for _, c := range doc.Checks {
		byName[c.Name] = c
		if !c.OK && c.Fix == "" {
			t.Errorf("failed check %s has no fix hint", c.Name)
		}
	}
	return code, doc, byName
}

func fakeBinary(t *testing.T, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorHealthy(t *testing.T) {
	dir := shortDir(t)
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	fakeBinary(t, bin, "claude", "echo '"+harness.ClaudeTestedVersion+" (Claude Code)'")
	codex := fakeBinary(t, dir, "mycodex", "echo 'codex-cli 0.1.2'")
	sock := filepath.Join(dir, "s")
	serveAt(t, sock, func(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		return rpc.DaemonStatus{Version: statedir.Version, Commit: "abc", PID: 42, Sessions: 3}, nil
	})
	code, doc, c := runDoctor(t, map[string]string{"DLGT_HOME": home, "PATH": bin, "DLGT_CODEX_BIN": codex, "DLGT_SOCKET": sock})
	if code != cli.ExitOK || !doc.OK {
		t.Fatalf("exit %d doc %+v", code, doc)
	}
	if cl := c["harness.claude"]; !cl.OK || !strings.Contains(cl.Detail, "(the tested version)") || cl.Fix != "" {
		t.Errorf("claude = %+v", cl)
	}
	if cx := c["harness.codex"]; !cx.OK || !strings.Contains(cx.Detail, "0.1.2") || !strings.Contains(cx.Detail, "tested with") || cx.Fix == "" {
		t.Errorf("codex (untested version) = %+v", cx)
	}
	if d := c["daemon"]; !d.OK || !strings.Contains(d.Detail, "pid 42") || !strings.Contains(d.Detail, statedir.Version) {
		t.Errorf("daemon = %+v", d)
	}
	if s := c["state_dir"]; !s.OK || !strings.Contains(s.Detail, "0700") {
		t.Errorf("state_dir = %+v", s)
	}
	if s := c["run_dir"]; !s.OK || !strings.Contains(s.Detail, "does not exist yet") {
		t.Errorf("run_dir = %+v", s)
	}
}

func TestDoctorFailures(t *testing.T) {
	dir := shortDir(t)
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755) // too open
	broken := fakeBinary(t, dir, "claude", "echo boom >&2; exit 3")
	code, doc, c := runDoctor(t, map[string]string{
		"DLGT_HOME": home, "PATH": filepath.Join(dir, "empty"), "DLGT_CLAUDE_BIN": broken,
		"DLGT_CODEX_BIN": filepath.Join(dir, "missing-codex"),
		"DLGT_SOCKET":    filepath.Join(dir, "nobody.sock"),
	})
	if code != cli.ExitError || doc.OK {
		t.Fatalf("exit %d doc %+v", code, doc)
	}
	if cl := c["harness.claude"]; cl.OK || !strings.Contains(cl.Detail, "boom") {
		t.Errorf("claude = %+v", cl)
	}
	if cx := c["harness.codex"]; cx.OK || !strings.Contains(cx.Fix, "DLGT_CODEX_BIN") {
		t.Errorf("codex = %+v", cx)
	}
	if d := c["daemon"]; d.OK || !strings.Contains(d.Detail, "DLGT_SOCKET") {
		t.Errorf("daemon = %+v", d)
	}
	if s := c["state_dir"]; s.OK || s.Fix != "chmod 700 "+home || !strings.Contains(s.Detail, "0755") {
		t.Errorf("state_dir = %+v", s)
	}
}

func TestDoctorNotInstalledIsNotAFailure(t *testing.T) {
	dir := shortDir(t)
	code, doc, c := runDoctor(t, map[string]string{"DLGT_HOME": filepath.Join(dir, "fresh"), "PATH": filepath.Join(dir, "empty")})
	if code != cli.ExitOK || !doc.OK {
		t.Fatalf("exit %d doc %+v", code, doc)
	}
	if cl := c["harness.claude"]; !cl.OK || !strings.Contains(cl.Detail, "not installed") || !strings.Contains(cl.Fix, harness.ClaudeTestedVersion) {
		t.Errorf("claude = %+v", cl)
	}
	if d := c["daemon"]; !d.OK || !strings.Contains(d.Detail, "no daemon is running") {
		t.Errorf("daemon = %+v", d)
	}
}

func TestDoctorVersionMismatchedDaemon(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s")
	serveAt(t, sock, func(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		return rpc.DaemonStatus{Version: "0.0.1-old", PID: 7}, nil
	})
	code, _, c := runDoctor(t, map[string]string{"DLGT_HOME": filepath.Join(dir, "h"), "PATH": filepath.Join(dir, "empty"), "DLGT_SOCKET": sock})
	if code != cli.ExitError {
		t.Fatalf("exit %d", code)
	}
	if d := c["daemon"]; d.OK || !strings.Contains(d.Detail, "0.0.1-old") {
		t.Errorf("daemon = %+v", d)
	}
}

// hooks.claude says how Claude Code's hooks would reach a daemon started
// from here: with DLGT_HOOKS=http, a warning when the user's Claude
// settings stop http hooks; a failure for a DLGT_HOOKS the daemon refuses.
func TestDoctorClaudeHookTransport(t *testing.T) {
	dir := shortDir(t)
	home := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	base := map[string]string{"DLGT_HOME": filepath.Join(dir, "state"), "PATH": filepath.Join(dir, "empty"), "HOME": home, "DLGT_HOOKS": "http"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for bk, bv := range base {
			m[bk] = bv
		}
		m[k] = v
		return m
	}

	_, _, c := runDoctor(t, base)
	if h := c["hooks.claude"]; !h.OK || h.Warning || !strings.Contains(h.Detail, "127.0.0.1") {
		t.Errorf("no settings: %+v", h)
	}
	settings := filepath.Join(home, ".claude", "settings.json")
	os.WriteFile(settings, []byte(`{"allowedHttpHookUrls":["https://hooks.example/*"]}`), 0o600)
	code, _, c := runDoctor(t, base)
	if h := c["hooks.claude"]; !h.OK || !h.Warning || !strings.Contains(h.Detail, "allowedHttpHookUrls") || !strings.Contains(h.Fix, "http://127.0.0.1:*") {
		t.Errorf("settings forbidding http hooks: %+v", h)
	}
	if code != cli.ExitOK {
		t.Errorf("a warning failed doctor: exit %d", code)
	}
	os.Remove(settings)
	for _, v := range []string{"command", ""} {
		if _, _, c := runDoctor(t, with("DLGT_HOOKS", v)); !c["hooks.claude"].OK || !strings.Contains(c["hooks.claude"].Detail, "forwarder") {
			t.Errorf("DLGT_HOOKS=%q: %+v", v, c["hooks.claude"])
		}
	}
	if code, _, c := runDoctor(t, with("DLGT_HOOKS", "sometimes")); c["hooks.claude"].OK || code != cli.ExitError {
		t.Errorf("DLGT_HOOKS=sometimes: exit %d, %+v", code, c["hooks.claude"])
	}
}

// A daemon given a DLGT_HOOKS it does not know refuses to start, with a
// typed error naming the value.
func TestDaemonRefusesUnknownHooksValue(t *testing.T) {
	dir := shortDir(t)
	e, out, _ := testEnv(t, map[string]string{"DLGT_HOME": filepath.Join(dir, "state"), "DLGT_HOOKS": "sometimes"}, "")
	if code := run([]string{"daemon"}, e); code == cli.ExitOK {
		t.Fatalf("daemon started with DLGT_HOOKS=sometimes: %s", out)
	}
	if !strings.Contains(out.String(), `"code":"INVALID_ARGUMENT"`) || !strings.Contains(out.String(), "sometimes") {
		t.Fatalf("output %q, want INVALID_ARGUMENT naming the value", out)
	}
}
