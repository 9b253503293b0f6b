package testkit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/statedir"
)

// RunDaemon runs a daemon on p, the test binary (in its hook role) as
// the hook forwarder, until ctx ends; ready (if set) is called once it
// serves.
func RunDaemon(ctx context.Context, p statedir.Paths, ready func()) error {
	return runDaemonLog(ctx, p, ready, io.Discard)
}

// runDaemonLog is RunDaemon logging to log (Debug and above).
func runDaemonLog(ctx context.Context, p statedir.Paths, ready func(), log io.Writer) error {
	exe, _ := os.Executable()
	return daemon.Run(ctx, daemon.Config{Paths: p, Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})), Ready: ready,
		Options: daemon.Options{HookCommand: []string{"env", RoleEnv + "=hook", exe}, StopGrace: 2 * time.Second}})
}

// Daemon is an in-process daemon StartDaemon started.
type Daemon struct {
	// Paths are its state directory's paths.
	Paths  statedir.Paths
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
}

// StartDaemon runs an in-process daemon of this version on the state
// directory home until the test ends (or Stop).
func StartDaemon(t testing.TB, home string) *Daemon {
	t.Helper()
	p, err := statedir.ResolvePaths(Getenv(map[string]string{"DLGT_HOME": home}), statedir.Version)
	if err != nil {
		t.Fatal(err)
	}
	// Its log goes to a file the test shows if it fails: a failure that
	// comes once in CI shows what the daemon did.
	logf, err := os.CreateTemp(t.TempDir(), "daemon-log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("daemon log:\n%s", b)
		}
		logf.Close()
	})
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Paths: p, t: t, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() { d.done <- runDaemonLog(ctx, p, func() { close(ready) }, logf) }()
	select {
	case <-ready:
	case err := <-d.done:
		t.Fatalf("daemon: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the daemon did not start")
	}
	t.Cleanup(d.Stop)
	return d
}

// Stop stops the daemon and waits (a minute at most) for it to end; once
// stopped, Stop does nothing.
func (d *Daemon) Stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		d.t.Error("the daemon did not stop")
	}
}

// FakeClaudeEnv is a launch environment whose claude is the test binary
// in its claude role (a script written in dir), fast to start and to go
// idle, with a user home of its own under dir.
func FakeClaudeEnv(dir string) map[string]string {
	exe, _ := os.Executable()
	os.MkdirAll(dir, 0o700)
	bin := filepath.Join(dir, "claude")
	os.WriteFile(bin, []byte(fmt.Sprintf("#!/bin/sh\n%s=claude exec %q \"$@\"\n", RoleEnv, exe)), 0o755)
	userHome := filepath.Join(dir, "user")
	os.MkdirAll(userHome, 0o700)
	return map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": userHome, "DLGT_CLAUDE_BIN": bin,
		"FAKECLAUDE_STARTUP_MS": "20", "FAKECLAUDE_IDLE_MS": "300", "FAKECLAUDE_PERMISSION_NOTIFY_MS": "100",
		"GORACE": "atexit_sleep_ms=0",
	}
}

// ShortDir is a temporary directory with a short path (Unix socket paths
// are limited to about 100 bytes), removed when the test ends.
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dlt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Getenv is a Getenv of exactly vars.
func Getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// Environ is an Environ of exactly vars, sorted.
func Environ(vars map[string]string) func() []string {
	return func() []string {
		out := make([]string, 0, len(vars))
		for k, v := range vars {
			out = append(out, k+"="+v)
		}
		sort.Strings(out)
		return out
	}
}
