package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The daemon injects dlgt-hook only when it sits beside dlgt, executable.
func TestHookCommandPrefersTheStandAloneForwarder(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "dlgt")
	fwd := filepath.Join(dir, hookBinary)
	if got, want := hookCommand(exe), []string{exe, "hook"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("no dlgt-hook: %q, want %q", got, want)
	}
	if err := os.WriteFile(fwd, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := hookCommand(exe), []string{exe, "hook"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("dlgt-hook not executable: %q, want %q", got, want)
	}
	if err := os.Chmod(fwd, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := hookCommand(exe), []string{fwd}; !reflect.DeepEqual(got, want) {
		t.Fatalf("dlgt-hook beside dlgt: %q, want %q", got, want)
	}
}

// `dlgt hook` reached through the command tree (tests call run) forwards
// like the fast path in main: bad input is reported on stderr, exit 0.
func TestHookCommandInTheTree(t *testing.T) {
	e, stdout, stderr := testEnv(t, nil, "not json")
	if rc := run([]string{"hook", "--socket", "/nonexistent.sock", "--launch", "internal:1", "Stop"}, e); rc != 0 {
		t.Fatalf("exit %d", rc)
	}
	if got := stderr.String(); !strings.Contains(got, "dlgt hook: hook input is not JSON") || stdout.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q", stdout, got)
	}
}
