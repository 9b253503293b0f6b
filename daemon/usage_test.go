package daemon

import (
	"testing"
	"unicode/utf8"

	"dlgt/internal/harnesstest/mockapi"
	"dlgt/rpc"
)

// mockUsage is what one reply streamed by mockapi with the default
// chunking costs, as the real CLIs record it (and the fake Claude does
// too): input 10, one output token per delta plus one, one request.
func mockUsage(reply string) rpc.Usage {
	out := int64((utf8.RuneCountInString(reply)+mockapi.DefaultChunk-1)/mockapi.DefaultChunk + 1)
	return rpc.Usage{InputTokens: 10, OutputTokens: out, TotalTokens: 10 + out, Requests: 1}
}

func resultUsage(t *testing.T, what string, r *rpc.Result) *rpc.Usage {
	t.Helper()
	if r == nil {
		t.Fatalf("%s: no result", what)
	}
	u, err := rpc.DecodeUsage(r.Usage)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return u
}

func wantUsage(t *testing.T, what string, r *rpc.Result, want rpc.Usage) {
	t.Helper()
	if u := resultUsage(t, what, r); u == nil || *u != want {
		t.Fatalf("%s: usage %s, want %s", what, r.Usage, want.JSON())
	}
}

// A result carries the usage its own turn recorded in the transcript,
// not the Session's running total; fetch and read return the same, and
// it survives a daemon restart with the rest of the result. A turn the
// provider recorded nothing for (a failed request) has usage null.
func TestResultUsageFromTranscript(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "use-1", "hello there")
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	wantUsage(t, "first turn", &res, mockUsage("MOCK-REPLY: hello there"))

	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "[[fail]] no luck", RequestID: "use-2"}, &r2)
	_, res2 := td.waitResult(t, r.Session.ID, r2.Cursor)
	if res2.Status != rpc.StatusFailed || resultUsage(t, "failed turn", &res2) != nil || string(res2.Usage) != "null" {
		t.Fatalf("failed turn: status %s usage %s, want failed and null", res2.Status, res2.Usage)
	}

	var r3 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "[[long 40]] a longer one", RequestID: "use-3"}, &r3)
	_, res3 := td.waitResult(t, r.Session.ID, r3.Cursor)
	long := *res3.FinalText
	wantUsage(t, "third turn", &res3, mockUsage(long))
	if mockUsage(long) == mockUsage("MOCK-REPLY: hello there") {
		t.Fatal("the two turns must cost differently for this test to tell them apart")
	}
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
	wantUsage(t, "read", read.Result, mockUsage(long))

	td.stop()
	td.start()
	read = rpc.SessionReadResult{}
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
	if read.Result == nil || read.Result.ExecutionSeq != 3 {
		t.Fatalf("read after restart: %+v", read)
	}
	wantUsage(t, "after a daemon restart", read.Result, mockUsage(long))
}
