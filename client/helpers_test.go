package client_test

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
	"github.com/dlgt-dev/dlgt/internal/harnesstest/fakeclaude"
	"github.com/dlgt-dev/dlgt/internal/hookfwd"
	"github.com/dlgt-dev/dlgt/statedir"
)

// The test binary doubles as the fake Claude Code, the hook forwarder and
// (for autostart) `dlgt daemon`, selected by DLGT_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("DLGT_TEST_ROLE") {
	case "claude":
		os.Exit(fakeclaude.Main(os.Args[1:]))
	case "hook":
		os.Exit(hookMain(os.Args[1:]))
	case "daemon":
		os.Exit(daemonMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// hookMain is `dlgt hook --socket S --launch L EVENT`.
func hookMain(args []string) int {
	var socket, launch, event string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--socket":
			i++
			socket = args[i]
		case "--launch":
			i++
			launch = args[i]
		default:
			event = args[i]
		}
	}
	// The production forwarder: it waits for a pending request's answer
	// and prints the decision (hookfwd.Main).
	return hookfwd.Main([]string{"--socket", socket, "--launch", launch, event}, os.Stdin, os.Stdout, os.Stderr)
}

// daemonMain is `dlgt daemon` as an autostart runs it: the paths from
// the environment, until it is stopped or 2 minutes have passed. It
// refuses DLGT_HOST, which an autostart must not pass on.
func daemonMain(args []string) int {
	if len(args) != 1 || args[0] != "daemon" {
		fmt.Fprintln(os.Stderr, "want: daemon")
		return 2
	}
	if h := os.Getenv("DLGT_HOST"); h != "" {
		fmt.Fprintln(os.Stderr, "the daemon was started with DLGT_HOST", h)
		return 1
	}
	p, err := statedir.ResolvePaths(os.Getenv, statedir.Version)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := runDaemon(ctx, p, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runDaemon runs a daemon on p with this binary as hook forwarder.
func runDaemon(ctx context.Context, p statedir.Paths, ready func()) error {
	exe, _ := os.Executable()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return daemon.Run(ctx, daemon.Config{Paths: p, Logger: log, Ready: ready, Options: daemon.Options{
		HookCommand: []string{"env", "DLGT_TEST_ROLE=hook", exe}, StopGrace: 2 * time.Second,
	}})
}

// fakeClaudeEnviron is a client environment whose claude is the fake
// (this binary in its claude role), fast to start and to go idle.
func fakeClaudeEnviron(dir string) []string {
	exe, _ := os.Executable()
	os.MkdirAll(dir, 0o700)
	bin := filepath.Join(dir, "claude")
	script := fmt.Sprintf("#!/bin/sh\nDLGT_TEST_ROLE=claude exec %q \"$@\"\n", exe)
	os.WriteFile(bin, []byte(script), 0o755)
	userHome := filepath.Join(dir, "user")
	os.MkdirAll(userHome, 0o700)
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + userHome, "DLGT_CLAUDE_BIN=" + bin,
		"FAKECLAUDE_STARTUP_MS=20", "FAKECLAUDE_IDLE_MS=300", "FAKECLAUDE_PERMISSION_NOTIFY_MS=100",
		"GORACE=atexit_sleep_ms=0",
	}
}

// shortDir is a temporary directory with a short path (Unix socket
// paths are limited to about 100 bytes).
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dlc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startDaemon runs an in-process daemon of this version on the state
// directory home until the test ends.
func startDaemon(t testing.TB, home string) statedir.Paths {
	t.Helper()
	p, err := statedir.ResolvePaths(env(map[string]string{"DLGT_HOME": home}), statedir.Version)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() { done <- runDaemon(ctx, p, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the daemon did not stop")
		}
	})
	return p
}

// env is a Getenv of exactly vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// environ is an Environ of exactly vars.
func environ(vars map[string]string) func() []string {
	return func() []string {
		out := make([]string, 0, len(vars))
		for k, v := range vars {
			out = append(out, k+"="+v)
		}
		sort.Strings(out)
		return out
	}
}
