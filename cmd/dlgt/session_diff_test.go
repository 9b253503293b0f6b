package main

import (
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// --worktree without a value asks for the default branch, --worktree=NAME
// names it, no flag sends none; --no-worktree with --worktree is a usage
// error that reaches no daemon.
func TestCreateWorktreeFlag(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  string // in the create params; "" is no worktree key
	}{
		{[]string{"--worktree"}, `"worktree":{}`},
		{[]string{"--worktree=feature/x"}, `"worktree":{"branch":"feature/x"}`},
		{nil, ""},
	} {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodSessionCreate, rpc.Receipt{Session: rpc.Session{ID: "claude:1", State: "busy"}, ExecutionSeq: 1, Cursor: "1", Submission: "confirmed"})
		e, out, _ := cliEnv(t, d, nil, nil, "")
		args := append([]string{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r"}, c.flags...)
		if code, stdout := runCLI(t, e, out, append(args, "--", "go")...); code != 0 {
			t.Fatalf("%v: exit %d %s", c.flags, code, stdout)
		}
		p := d.Params(rpc.MethodSessionCreate)
		if len(p) != 1 || (c.want == "" && strings.Contains(string(p[0]), `"worktree":`)) || !strings.Contains(string(p[0]), c.want) {
			t.Fatalf("%v: params %s, want %s", c.flags, p, c.want)
		}
	}
	d := testkit.NewFakeDaemon(t)
	e, out, _ := cliEnv(t, d, nil, nil, "")
	if code, _ := runCLI(t, e, out, "session", "create", "--harness", "claude", "--title", "t", "--request-id", "r", "--worktree", "--no-worktree", "--", "go"); code != cli.ExitError || d.Count() != 0 {
		t.Fatalf("--worktree --no-worktree: exit %d, %d requests", code, d.Count())
	}
}

// session diff prints the raw diff by default, the stat with -o text and
// the document with -o json; stop passes --remove-worktree.
func TestSessionDiffOutputs(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	wt := rpc.Worktree{Path: "/s/worktrees/p-1/dlgt-x", Branch: "dlgt/x", BaseCommit: "0123456789abcdef0123", Repo: "/src/p"}
	d.Set(rpc.MethodSessionDiff, rpc.SessionDiffResult{Session: rpc.Session{ID: "claude:1", Alias: "x", State: "idle"}, Worktree: wt,
		Summary: rpc.DiffSummary{Files: 2, Insertions: 3, Deletions: 1, Committed: true}, Diff: "diff --git a/f b/f\n+new\n"})
	d.Set(rpc.MethodSessionStop, rpc.SessionResult{Session: rpc.Session{ID: "claude:1", State: "stopped"}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "diff", "x"); code != 0 || stdout != "diff --git a/f b/f\n+new\n" {
		t.Fatalf("raw: exit %d %q", code, stdout)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "diff", "x", "-o", "text"); code != 0 || !strings.Contains(stdout, "2 files changed, 3 insertions(+), 1 deletion(-), committed") || !strings.Contains(stdout, "branch dlgt/x") {
		t.Fatalf("text: exit %d %q", code, stdout)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "diff", "x", "-o", "json", "--max-bytes", "2048"); code != 0 || !strings.Contains(stdout, `"insertions":3`) {
		t.Fatalf("json: exit %d %q", code, stdout)
	}
	if p := d.Params(rpc.MethodSessionDiff); len(p) != 3 || !strings.Contains(string(p[2]), `"max_bytes":2048`) {
		t.Fatalf("diff params %s", p)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "stop", "x", "--remove-worktree"); code != 0 {
		t.Fatalf("stop: exit %d %q", code, stdout)
	}
	if p := d.Params(rpc.MethodSessionStop); len(p) != 1 || !strings.Contains(string(p[0]), `"remove_worktree":true`) {
		t.Fatalf("stop params %s", p)
	}
}
