package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFullDlgt: the full dlgt is the one beside dlgtc when there is one
// (an executable file), else PATH's, else none.
func TestFullDlgt(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "dlgtc")
	onPath := func(string) (string, error) { return "/opt/bin/dlgt", nil }
	none := func(string) (string, error) { return "", errors.New("not found") }
	if got := fullDlgt(self, onPath); got != "/opt/bin/dlgt" {
		t.Fatalf("nothing beside: %q, want PATH's", got)
	}
	if got := fullDlgt(self, none); got != "" {
		t.Fatalf("none anywhere: %q", got)
	}
	beside := filepath.Join(dir, "dlgt")
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := fullDlgt(self, onPath); got != "/opt/bin/dlgt" {
		t.Fatalf("a non-executable file beside: %q, want PATH's", got)
	}
	os.Chmod(beside, 0o755)
	if got := fullDlgt(self, onPath); got != beside {
		t.Fatalf("beside: %q, want %q", got, beside)
	}
	os.Remove(beside)
	os.Mkdir(beside, 0o755)
	if got := fullDlgt(self, none); got != "" {
		t.Fatalf("a directory named dlgt beside: %q", got)
	}
}
