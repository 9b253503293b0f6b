package cli

import (
	"bytes"
	"strings"
	"testing"
)

func testEnv() (*Env, *bytes.Buffer) {
	var out bytes.Buffer
	vars := map[string]string{"DLGT_NO_AUTOSTART": "1", "DLGT_HOME": "/nonexistent/dlgt-own-test"}
	return &Env{Getenv: func(k string) string { return vars[k] }, Environ: func() []string { return nil },
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}, &out
}

// TestOwn: the socket-only tree runs its own leaf commands and --version;
// help, groups, completion, the full binary's commands and unknown ones
// are the full dlgt's.
func TestOwn(t *testing.T) {
	e, _ := testEnv()
	root := NewRoot(e, nil)
	for _, tc := range []struct {
		args []string
		own  bool
	}{
		{[]string{"--version"}, true},
		{[]string{"-v"}, true},
		{[]string{"version"}, true},
		{[]string{"version", "--help"}, true},
		{[]string{"session", "list", "--all"}, true},
		{[]string{"--host", "devbox", "session", "list"}, true},
		{[]string{"session", "create", "--harness", "claude", "--request-id", "r", "--", "hi"}, true},
		{[]string{"session", "fetch", "x", "--wait", "10s"}, true},
		{[]string{"session", "send", "x", "--request-id", "r", "--", "hi"}, true},
		{[]string{"session", "cancel", "x"}, true},
		{[]string{"session", "stop", "x"}, true},
		{[]string{"session", "respond", "x", "--allow"}, true},
		{[]string{"events"}, true},
		{[]string{"harnesses"}, true},
		{[]string{}, false},
		{[]string{"--help"}, false},
		{[]string{"--version", "--help"}, false},
		{[]string{"session"}, false},
		{[]string{"session", "--help"}, false},
		{[]string{"session", "attach", "x"}, false},
		{[]string{"help", "session", "list"}, false},
		{[]string{"completion", "bash"}, false},
		{[]string{"__complete", "session", "fetch", ""}, false},
		{[]string{"daemon"}, false},
		{[]string{"daemon", "status"}, false},
		{[]string{"mcp"}, false},
		{[]string{"skill", "install"}, false},
		{[]string{"ui"}, false},
		{[]string{"hook", "--socket", "s", "Stop"}, false},
		{[]string{"nosuch"}, false},
	} {
		if got := Own(root, tc.args); got != tc.own {
			t.Errorf("Own(%q) = %v, want %v", tc.args, got, tc.own)
		}
	}
}

// TestRunOwn: a command the tree holds runs and prints; any other prints
// nothing and reports that it did not run.
func TestRunOwn(t *testing.T) {
	e, out := testEnv()
	if code, ran := RunOwn([]string{"version", "-o", "text"}, e); !ran || code != ExitOK || !strings.HasPrefix(out.String(), "dlgt ") {
		t.Fatalf("version: ran %v exit %d output %q", ran, code, out)
	}
	e, out = testEnv()
	if _, ran := RunOwn([]string{"daemon", "status"}, e); ran || out.Len() != 0 {
		t.Fatalf("daemon status: ran %v output %q", ran, out)
	}
}
