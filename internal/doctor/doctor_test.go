package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"io"
	"log/slog"
)

// DLGT_HOOKS is command (the default) or http; anything else is
// INVALID_ARGUMENT, which the hooks check reports as a failure.
func TestHTTPHooks(t *testing.T) {
	for v, want := range map[string]bool{"": false, "command": false, "http": true} {
		if got, err := HTTPHooks(v); err != nil || got != want {
			t.Errorf("%q: %v %v", v, got, err)
		}
	}
	if _, err := HTTPHooks("HTTP"); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Errorf("HTTP: %v", err)
	}
	c := hookCheck(func(k string) string { return map[string]string{"DLGT_HOOKS": "tcp"}[k] })
	if c.OK || !strings.Contains(c.Detail, `DLGT_HOOKS="tcp"`) || c.Fix == "" {
		t.Errorf("hook check: %+v", c)
	}
}

// A local run with no daemon: every state directory check, the daemon
// check passes (client commands start one), and a loose state directory
// fails with the chmod that fixes it.
func TestRunLocal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o755)
	vars := map[string]string{"DLGT_HOME": home, "PATH": t.TempDir()}
	getenv := func(k string) string { return vars[k] }
	c, err := client.New(client.Options{Getenv: getenv, NoAutostart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checks := Run(context.Background(), Options{Getenv: getenv, Client: c, Extra: []Check{{Name: "extra", OK: true}}})
	byName := map[string]Check{}
	var names []string
	for _, ch := range checks {
		byName[ch.Name] = ch
		names = append(names, ch.Name)
	}
	if strings.Join(names, ",") != "extra,hooks.claude,daemon,state_dir" {
		t.Fatalf("checks %v", names)
	}
	if d := byName["daemon"]; !d.OK || !strings.Contains(d.Detail, "no daemon is running") {
		t.Errorf("daemon: %+v", d)
	}
	if s := byName["state_dir"]; s.OK || s.Fix != "chmod 700 "+home {
		t.Errorf("state_dir: %+v", s)
	}
}

// A worktree directory under $DLGT_HOME/worktrees that no Session of the
// running daemon claims is listed as stale (a warning); without a daemon
// doctor says how many there are and that it cannot tell more.
func TestWorktreesStale(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	sockDir, err := os.MkdirTemp("", "dlgt-d")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	vars := map[string]string{"DLGT_HOME": home, "DLGT_SOCKET": filepath.Join(sockDir, "d.sock"), "PATH": t.TempDir()}
	getenv := func(k string) string { return vars[k] }
	p, err := statedir.ResolvePaths(getenv, statedir.Version)
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(home, "worktrees", "proj-0a1b2c3d", "dlgt-gone")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Options{Getenv: getenv, NoAutostart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	find := func() Check {
		for _, ch := range Run(context.Background(), Options{Getenv: getenv, Client: c}) {
			if ch.Name == "worktrees" {
				return ch
			}
		}
		t.Fatal("no worktrees check")
		return Check{}
	}
	if w := find(); !w.OK || !w.Warning || !strings.Contains(w.Detail, "1 worktree under") {
		t.Fatalf("without a daemon: %+v", w)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- daemon.Run(ctx, daemon.Config{Paths: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func() { close(ready) }})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	if w := find(); !w.OK || !w.Warning || !strings.Contains(w.Detail, "1 no Session claims: "+stale) || !strings.Contains(w.Fix, "git worktree remove") {
		t.Fatalf("with the daemon: %+v", w)
	}
}

// An installed Gemini CLI with no sign-in chosen is a warning naming
// `gemini` and the variables it takes (the issue: doctor said ok and the
// create waited 39 s); chosen with its key, the check passes quietly; not
// installed, there is no sign-in check.
func TestSignInGemini(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(t.TempDir(), "gemini")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 0.61.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DLGT_HOME": filepath.Join(t.TempDir(), "d"), "HOME": home, "PATH": t.TempDir(), "DLGT_GEMINI_BIN": bin}
	getenv := func(k string) string { return vars[k] }
	signIn := func() (Check, bool) {
		c, err := client.New(client.Options{Getenv: getenv, NoAutostart: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, ch := range Run(context.Background(), Options{Getenv: getenv, Client: c, Harnesses: harness.All()}) {
			if ch.Name == "sign_in.gemini" {
				return ch, true
			}
		}
		return Check{}, false
	}
	c, ok := signIn()
	if !ok || !c.OK || !c.Warning || !strings.Contains(c.Detail, "Gemini CLI is not signed in") ||
		!strings.Contains(c.Fix, "run `gemini` once") || !strings.Contains(c.Fix, "GEMINI_API_KEY") || !strings.Contains(c.Fix, "GOOGLE_CLOUD_PROJECT") {
		t.Errorf("no sign-in: %+v (reported %v)", c, ok)
	}
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o600)
	vars["GEMINI_API_KEY"] = "k"
	if c, ok := signIn(); !ok || !c.OK || c.Warning {
		t.Errorf("signed in: %+v (reported %v)", c, ok)
	}
	delete(vars, "DLGT_GEMINI_BIN")
	if c, ok := signIn(); ok {
		t.Errorf("not installed, yet reported: %+v", c)
	}
}
