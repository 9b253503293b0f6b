package main

import (
	"strings"
	"testing"
	"time"

	"dlgt/rpc"
)

func TestRelTime(t *testing.T) {
	now := time.UnixMilli(1_000_000_000_000)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{0, "just now"}, {30 * time.Second, "30s ago"}, {5 * time.Minute, "5m ago"},
		{3 * time.Hour, "3h ago"}, {72 * time.Hour, "3d ago"}, {-time.Minute, "now"},
	} {
		if got := relTime(now.Add(-tc.ago).UnixMilli(), now); got != tc.want {
			t.Errorf("%v ago: %q, want %q", tc.ago, got, tc.want)
		}
	}
	if relTime(0, now) != "-" {
		t.Error("a zero time is not -")
	}
}

func TestSessionListText(t *testing.T) {
	d := newFakeDaemon(t)
	now := time.Now().UnixMilli()
	d.set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{
		{ID: "claude:1111", Alias: "review", Title: "Review the diff", Harness: "claude", State: rpc.StateBusy, CreatedAtMS: now - 3*60_000, UpdatedAtMS: now - 1000},
		{ID: "codex:2222", Title: "a title\nwith a newline", Harness: "codex", State: rpc.StateIdle, CreatedAtMS: now - 2*3_600_000, UpdatedAtMS: now - 2*3_600_000},
	}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "list", "-o", "text")
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[0], "SESSION") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	// Aligned: every column starts at the same offset on every line.
	col := strings.Index(lines[0], "STATE")
	for _, l := range lines[1:] {
		if len(l) < col || l[col-2:col] != "  " || l[col] == ' ' {
			t.Fatalf("column STATE not aligned:\n%s", stdout)
		}
	}
	for _, want := range []string{"review", "busy", "3m ago", "just now", "codex:2222", "idle", "2h ago", "a title with a newline"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("table lacks %q:\n%s", want, stdout)
		}
	}
	// JSON stays the default.
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "list"); code != exitOK || !strings.HasPrefix(stdout, `{"ok":true,"sessions":[`) {
		t.Fatalf("default output: %q", stdout)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "list", "-o", "yaml"); code != exitError || !strings.Contains(stdout, "INVALID_ARGUMENT") {
		t.Fatalf("-o yaml: exit %d %q", code, stdout)
	}
}

func TestSessionFetchText(t *testing.T) {
	d := newFakeDaemon(t)
	text := "All done.\nTwo findings:\n- one\n- two"
	off, complete := 0, true
	d.set(rpc.MethodSessionFetch, rpc.FetchDocument{SchemaVersion: 1, Reason: rpc.ReasonResult, Cursor: "42", Gaps: []rpc.Gap{},
		Sessions: []rpc.FetchSession{{
			Session: rpc.Session{ID: "claude:1111", Alias: "review", Title: "Review", Harness: "claude", State: rpc.StateIdle},
			Events:  []rpc.Event{{Seq: 7, Type: "session.idle", ExecutionSeq: 2, ResultStatus: "completed"}},
			Results: []rpc.Result{{ExecutionSeq: 2, Status: "completed", FinalText: &text, FinalTextOffset: &off, FinalTextComplete: &complete, CompletedAtMS: time.Now().UnixMilli()}},
		}}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "fetch", "review", "-o", "text")
	for _, want := range []string{"review  idle  claude", "event 7 session.idle #2 completed", "result #2 completed", text + "\n", "reason result, cursor 42\n"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("exit %d, text lacks %q:\n%s", code, want, stdout)
		}
	}
	if code != exitOK || strings.Contains(stdout, `"ok"`) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}
