package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

func TestSessionReadText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	text := "All done.\nTwo findings."
	now := time.Now().UnixMilli()
	u := &rpc.Usage{InputTokens: 1200, CacheReadInputTokens: 30000, CacheCreationInputTokens: 500, OutputTokens: 340, ReasoningOutputTokens: 120, TotalTokens: 32040, Requests: 3}
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{
		Session: rpc.Session{ID: "codex:1111", Alias: "review", Title: "Review", Harness: "codex", State: rpc.StateIdle, UpdatedAtMS: now},
		Result: &rpc.Result{ExecutionSeq: 2, Status: "completed", FinalText: &text, FinalTextSource: "hook",
			StartedAtMS: now - 4200, CompletedAtMS: now, Usage: u.JSON()},
	})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "read", "review", "-o", "text")
	for _, want := range []string{
		"session  review (codex:1111)\n", "state    idle", "result   #2 completed", "after 4.2s",
		"usage    32,040 tokens in 3 model requests (input 1,200, cache read 30,000, cache write 500, output 340 of which 120 reasoning)\n",
		"final text (hook):\n" + text + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("exit %d, text lacks %q:\n%s", code, want, stdout)
		}
	}
	if code != cli.ExitOK || strings.Contains(stdout, `"ok"`) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}

	// JSON stays the default and carries the usage object as it is.
	e, out, _ = cliEnv(t, d, nil, nil, "")
	code, stdout = runCLI(t, e, out, "session", "read", "review")
	var doc struct {
		OK bool `json:"ok"`
		rpc.SessionReadResult
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != cli.ExitOK || !doc.OK {
		t.Fatalf("json: exit %d %v %q", code, err, stdout)
	}
	if doc.Result == nil {
		t.Fatalf("json without a result: %q", stdout)
	}
	if got, err := rpc.DecodeUsage(doc.Result.Usage); err != nil || got == nil || *got != *u {
		t.Fatalf("json usage %s, want %s", doc.Result.Usage, u.JSON())
	}

	// A failed turn the provider recorded nothing for; no result at all.
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{
		Session: rpc.Session{ID: "claude:2222", Title: "T", Harness: "claude", State: rpc.StateIdle},
		Result:  &rpc.Result{ExecutionSeq: 1, Status: "failed", Error: &rpc.ResultError{Code: "provider_error", Message: "overloaded"}},
	})
	e, out, _ = cliEnv(t, d, nil, nil, "")
	_, stdout = runCLI(t, e, out, "session", "read", "claude:2222", "-o", "text")
	for _, want := range []string{"error    provider_error: overloaded\n", "usage    not recorded by the harness\n", "final text: none recorded\n"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("failed result text lacks %q:\n%s", want, stdout)
		}
	}
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: rpc.Session{ID: "claude:3333", Title: "T", Harness: "claude", State: rpc.StateStarting}})
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if _, stdout = runCLI(t, e, out, "session", "read", "claude:3333", "-o", "text"); !strings.Contains(stdout, "result   none retained yet\n") {
		t.Fatalf("no result:\n%s", stdout)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "read", "x", "-o", "yaml"); code != cli.ExitError || !strings.Contains(stdout, "INVALID_ARGUMENT") {
		t.Fatalf("-o yaml: exit %d %q", code, stdout)
	}
}

// A blocked Session's text forms say what it asks and how to answer it:
// session read shows the request (tool and input) and the commands, and
// fetch a next: line with them; a block dlgt cannot answer names attach
// alone.
func TestBlockedTextSaysHowToAnswer(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	now := time.Now().UnixMilli()
	blocked := rpc.Session{ID: "claude:3333", Alias: "fix", Title: "Fix", Harness: "claude", State: rpc.StateBlocked, UpdatedAtMS: now,
		Pending: &rpc.Pending{ID: "prq_1", Kind: rpc.PendingPermission, Tool: "Bash", Input: "rm -rf build", AskedAtMS: now}}
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: blocked})
	d.Set(rpc.MethodSessionFetch, rpc.FetchDocument{SchemaVersion: 1, Reason: rpc.ReasonBlocked, Cursor: "5",
		Sessions: []rpc.FetchSession{{Session: blocked}}})
	answer := "dlgt session respond fix --allow (or --deny --message WHY), or in its terminal: dlgt session attach fix\n"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"session", "read", "fix", "-o", "text"}, []string{"pending  permission to run Bash: rm -rf build (asked ", "answer   " + answer}},
		{[]string{"session", "fetch", "fix", "--cursor", "4", "-o", "text"}, []string{"  pending: permission to run Bash: rm -rf build\n", "  next: " + answer}},
	} {
		e, out, _ := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, tc.args...)
		for _, w := range tc.want {
			if code != cli.ExitOK || !strings.Contains(stdout, w) {
				t.Fatalf("%v: exit %d, lacks %q:\n%s", tc.args, code, w, stdout)
			}
		}
	}
	blocked.Pending = nil
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: blocked})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "read", "fix", "-o", "text"); code != cli.ExitOK || !strings.Contains(stdout, "answer   only in its terminal: dlgt session attach fix\n") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}
