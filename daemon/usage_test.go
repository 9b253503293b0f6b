package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
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

// A turn the transcript records nothing of (Claude Code keeping no
// transcript, a format the adapter does not read) does not hold its
// result: it goes out as soon as the Stop hook arrives, usage null. The
// daemon used to hold every such result 5 s waiting for the turn's end.
func TestResultNotHeldForAnUnrecordedTurn(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "unrec-1", "hello there") // the transcript exists
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	wantUsage(t, "first turn", &res, mockUsage("MOCK-REPLY: hello there"))

	const prompt = "[[notranscript]] keep no record"
	var r2 rpc.Receipt
	sent := time.Now()
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: prompt, RequestID: "unrec-2"}, &r2)
	// The fake prints the reply just before it runs the Stop hook.
	td.waitScreen(t, r.Session.ID, mockapi.DefaultText(prompt))
	shown := time.Now()
	_, res2 := td.waitResult(t, r.Session.ID, r2.Cursor)
	held := time.Since(shown)
	t.Logf("send -> result %v, reply on screen -> result %v", time.Since(sent).Round(time.Millisecond), held.Round(time.Millisecond))
	if res2.Status != rpc.StatusCompleted || res2.FinalText == nil || *res2.FinalText != mockapi.DefaultText(prompt) {
		t.Fatalf("result %+v", res2)
	}
	if string(res2.Usage) != "null" {
		t.Fatalf("usage %s, want null: the transcript holds nothing of the turn", res2.Usage)
	}
	// Generous against a loaded machine; the old wait was 5 s.
	if held > 2500*time.Millisecond {
		t.Fatalf("the result came %v after the reply was on screen: held for the transcript", held)
	}
}

// A turn whose prompt is in the transcript but whose reply lands only
// after the Stop hook ran (Claude Code's queued writes) is still waited
// for, and its usage counted.
func TestResultWaitsForALateTurnEnd(t *testing.T) {
	td := startTestDaemon(t)
	const prompt = "[[lateend 300]] written late"
	r := td.create(t, "late-1", prompt)
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	wantUsage(t, "late end", &res, mockUsage(mockapi.DefaultText(prompt)))
}

// A result's usage is its own turn's even when the turn id the daemon took
// names another turn (Claude Code's UserPromptSubmit for a prompt taken
// while the previous turn was ending names that turn): from where the
// transcript stood when the execution started, the turn there is its own.
func TestExecUsageUnderAnotherTurnsID(t *testing.T) {
	line := func(m map[string]any) string {
		b, _ := json.Marshal(m)
		return string(b) + "\n"
	}
	turn := func(id string, out int) string {
		return line(map[string]any{"type": "user", "promptId": id, "uuid": "u-" + id, "message": map[string]any{"role": "user", "content": "hi"}}) +
			line(map[string]any{"type": "assistant", "uuid": "a-" + id, "message": map[string]any{
				"id": "msg_" + id, "model": "claude-opus-5-5", "stop_reason": "end_turn",
				"usage": map[string]any{"input_tokens": 10, "output_tokens": out},
			}})
	}
	earlier := turn("earlier", 2)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(earlier+turn("own", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &session{h: harness.Claude{}, gen: &generation{transcript: path}}
	want := rpc.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13, Requests: 1}
	for _, id := range []string{"own", "earlier", "another"} {
		e := &execution{usagePath: path, usageFrom: int64(len(earlier)), turnID: id}
		raw, _ := s.execTurnLocked(e)
		u, err := rpc.DecodeUsage(raw)
		if err != nil || u == nil || *u != want {
			t.Errorf("turn id %q: usage %+v (%v), want %+v", id, u, err, want)
		}
	}
}

// A turn Claude Code ends with StopFailure (every continuation of a cut
// answer was cut) whose transcript lines land after the hook ran: the
// result's stop_reason is read once they have landed, as a Stop's usage
// is, not at once (which found the turn open and no reason).
func TestStopFailureWaitsForTheTranscript(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "late-fail-1", "[[fail]] [[cut]] [[lateend 1500]] write it all")
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusFailed || res.StopReason != rpc.StopMaxTokens || res.Error == nil ||
		!strings.Contains(res.Error.Message, "MOCK-FAIL") {
		t.Fatalf("result %+v (error %+v), want failed with stop_reason max_tokens", res, res.Error)
	}
	// The cut message's usage is counted: the transcript was read after
	// it landed.
	if string(res.Usage) == "null" {
		t.Errorf("usage null: the transcript was read before the turn landed")
	}
}
