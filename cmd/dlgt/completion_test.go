package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// complete runs cobra's hidden completion command and returns the
// candidates (without descriptions) and the directive line.
func complete(t *testing.T, e *env, args ...string) ([]string, string) {
	t.Helper()
	var out strings.Builder
	e.Stdout = &out
	if code := run(append([]string{"__complete"}, args...), e); code != cli.ExitOK {
		t.Fatalf("__complete %v: exit %d", args, code)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	var names []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names, lines[len(lines)-1]
}

func TestCompletionDynamic(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{
		{ID: "claude:1111", Alias: "review", Title: "Review", Harness: "claude", State: rpc.StateIdle},
		{ID: "codex:2222", Title: "Tests", Harness: "codex", State: rpc.StateBusy},
	}})
	profiles := filepath.Join(t.TempDir(), "profiles.toml")
	os.WriteFile(profiles, []byte("[profiles.review]\nharness = \"codex\"\n[profiles.quick]\nharness = \"claude\"\n"), 0o600)
	vars := map[string]string{"DLGT_PROFILES": profiles}
	e, _, _ := cliEnv(t, d, vars, nil, "")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"session", "read", ""}, []string{"review", "claude:1111", "codex:2222"}},
		{[]string{"session", "fetch", "c"}, []string{"claude:1111", "codex:2222"}},
		{[]string{"session", "attach", "rev"}, []string{"review"}},
		{[]string{"scrollback", "codex"}, []string{"codex:2222"}},
		{[]string{"events", "--session", ""}, []string{"review", "claude:1111", "codex:2222"}},
		{[]string{"session", "create", "--harness", ""}, []string{"claude", "codex", "gemini", "copilot"}},
		{[]string{"session", "create", "--profile", ""}, []string{"quick", "review"}},
	} {
		got, directive := complete(t, e, tc.args...)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || directive != ":4" {
			t.Errorf("%v: %v %s, want %v :4", tc.args, got, directive, tc.want)
		}
	}
	// Models follow the chosen harness.
	codex, _ := complete(t, e, "session", "create", "--harness", "codex", "--model", "")
	claude, _ := complete(t, e, "session", "create", "--harness", "claude", "--model", "")
	if len(codex) == 0 || len(claude) == 0 || strings.Join(codex, ",") == strings.Join(claude, ",") {
		t.Errorf("models: codex %v, claude %v", codex, claude)
	}
	// A second argument completes nothing.
	if got, _ := complete(t, e, "session", "read", "review", ""); len(got) != 0 {
		t.Errorf("second argument: %v", got)
	}
}

// With no daemon running, completion offers no Sessions and starts none.
func TestCompletionNeverStartsADaemon(t *testing.T) {
	vars := map[string]string{}
	e, _, _ := testEnv(t, vars, "")
	vars["DLGT_NO_AUTOSTART"] = "0" // would start one, were completion to connect
	e.Exe = "/bin/false"
	got, directive := complete(t, e, "session", "read", "")
	if len(got) != 0 || directive != ":4" {
		t.Fatalf("%v %s", got, directive)
	}
	if _, err := os.Stat(filepath.Join(vars["DLGT_HOME"], "run")); !os.IsNotExist(err) {
		t.Fatalf("completion created the run directory (started a daemon?): %v", err)
	}
}

// Only an active alias addresses a Session (a stopped or failed Session's
// alias is NOT_FOUND, and may name another Session by now): completion
// offers the aliases of Sessions that are not terminal, and every Session's
// id.
func TestCompletionOffersOnlyActiveAliases(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{
		{ID: "claude:1111", Alias: "review", Title: "Review", Harness: "claude", State: rpc.StateStopped},
		{ID: "codex:2222", Alias: "tests", Title: "Tests", Harness: "codex", State: rpc.StateFailed},
		{ID: "claude:3333", Alias: "review", Title: "Review again", Harness: "claude", State: rpc.StateIdle},
		{ID: "claude:4444", Alias: "docs", Title: "Docs", Harness: "claude", State: rpc.StateStarting},
	}})
	e, _, _ := cliEnv(t, d, nil, nil, "")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"session", "read", ""}, []string{"claude:1111", "codex:2222", "review", "claude:3333", "docs", "claude:4444"}},
		{[]string{"session", "read", "t"}, nil},
		{[]string{"events", "--session", "rev"}, []string{"review"}},
	} {
		got, directive := complete(t, e, tc.args...)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || directive != ":4" {
			t.Errorf("%v: %v %s, want %v :4", tc.args, got, directive, tc.want)
		}
	}
}
