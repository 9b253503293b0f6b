package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/fakeclaude"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Steering and queueing with the fake Claude, which takes a prompt
// entered during a tool call into the turn's next request (its
// transcript's tool result message) as Claude Code 2.1.332 does. The
// real CLIs' tests are in e2e_steer_test.go.

// createIn starts a fake Claude Session in cwd with prompt.
func (td *testDaemon) createIn(t testing.TB, reqID, cwd, prompt string) rpc.Receipt {
	t.Helper()
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "steer test", Harness: "claude", Cwd: cwd, Prompt: prompt,
		RequestID: reqID, Environment: td.env,
	}, &r)
	return r
}

// waitFile waits until path exists (a scripted tool's mark that it runs).
func waitFile(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(lifecycleGuard)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSteerSeen waits for the execution.steered event that says the
// harness's record holds the steer, and returns the steered events.
func waitSteerSeen(t testing.TB, td *testDaemon, id string, seq uint64) []rpc.Event {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var steered []rpc.Event
		seen := false
		for _, e := range td.events(t, id) {
			if e.Type == rpc.EventExecutionSteered {
				steered = append(steered, e)
				seen = seen || (e.Reason == rpc.SteerSeen && e.ExecutionSeq == seq)
			}
		}
		if seen {
			return steered
		}
		if time.Now().After(deadline) {
			t.Fatalf("no execution.steered %s event: %+v", rpc.SteerSeen, steered)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantRPCError checks err is an *rpc.Error with code (and field, if any).
func wantRPCError(t testing.TB, err error, code rpc.Code, field string) *rpc.Error {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != code || re.Field != field {
		t.Fatalf("error = %v, want %s (field %q)", err, code, field)
	}
	return re
}

// fakeTranscript is the fake Claude's transcripts under the daemon's
// client HOME, concatenated.
func fakeTranscript(t testing.TB, env map[string]string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(env["HOME"], ".claude", "projects", "*", "*.jsonl"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

func TestSteerRunningTurnFake(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	r := td.createIn(t, "steer-1", cwd, "[[tool touch started && sleep 2]] [[reply TURN-DONE]] first")
	id := r.Session.ID
	waitFile(t, filepath.Join(cwd, "started"))

	var sr rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "STEER-ME now", RequestID: "steer-2",
		Steer: &rpc.SteerOption{ExecutionSeq: r.ExecutionSeq}}, &sr)
	if !sr.Steered || sr.ExecutionSeq != r.ExecutionSeq || sr.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("steer receipt = %+v", sr)
	}
	// The same request_id replays the receipt; nothing is typed twice.
	var again rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "STEER-ME now", RequestID: "steer-2",
		Steer: &rpc.SteerOption{ExecutionSeq: r.ExecutionSeq}}, &again)
	if !again.Replayed || !again.Steered || again.ExecutionSeq != r.ExecutionSeq {
		t.Fatalf("replayed steer receipt = %+v", again)
	}

	_, res := td.waitResult(t, id, r.Cursor)
	if res.ExecutionSeq != r.ExecutionSeq || res.Status != rpc.StatusCompleted || fetchdoc.DerefText(&res) != "TURN-DONE" {
		t.Fatalf("result = %+v text %q", res, fetchdoc.DerefText(&res))
	}
	tr := fakeTranscript(t, td.env)
	if n := strings.Count(tr, strings.ReplaceAll(fakeclaude.SteerPrefix, "\n", `\n`)+"STEER-ME now"); n != 1 {
		t.Fatalf("the steer is in the turn's tool result message %d times, want 1:\n%s", n, tr)
	}
	rd := td.waitState(t, id, rpc.StateIdle)
	if rd.Result == nil || rd.Result.ExecutionSeq != r.ExecutionSeq {
		t.Fatalf("the steer made another execution: %+v", rd.Result)
	}
	// Announced when typed, then when the harness's transcript has it.
	steered := waitSteerSeen(t, td, id, r.ExecutionSeq)
	if len(steered) != 2 || steered[0].ExecutionSeq != r.ExecutionSeq || steered[0].Reason != rpc.SteerDelivered || steered[1].Reason != rpc.SteerSeen {
		t.Fatalf("steered events = %+v", steered)
	}

	// The execution has ended: a steer naming it, or one not started,
	// is refused and nothing reaches the harness.
	before := fakeTranscript(t, td.env)
	for _, seq := range []uint64{r.ExecutionSeq, r.ExecutionSeq + 1} {
		err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "too late", RequestID: "steer-late-" + itoa(seq),
			Steer: &rpc.SteerOption{ExecutionSeq: seq}}, &rpc.Receipt{})
		wantRPCError(t, err, rpc.CodeInvalidArgument, "steer.execution_seq")
	}
	time.Sleep(300 * time.Millisecond)
	if after := fakeTranscript(t, td.env); after != before {
		t.Fatalf("a refused steer reached the harness:\n%s", strings.TrimPrefix(after, before))
	}
	if rd := td.read(t, id); rd.Session.State != rpc.StateIdle || rd.Result.ExecutionSeq != r.ExecutionSeq {
		t.Fatalf("after refused steers: %s, result %d", rd.Session.State, rd.Result.ExecutionSeq)
	}
}

func TestSteerQueueParamsRefused(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "sq-1", "[[slow 600000]] busy")
	id := r.Session.ID
	td.waitState(t, id, rpc.StateBusy)
	for _, c := range []struct {
		p     rpc.SessionSendParams
		code  rpc.Code
		field string
	}{
		{rpc.SessionSendParams{Steer: &rpc.SteerOption{ExecutionSeq: 1}, Queue: true}, rpc.CodeInvalidArgument, "steer"},
		{rpc.SessionSendParams{Steer: &rpc.SteerOption{}}, rpc.CodeInvalidArgument, "steer.execution_seq"},
		{rpc.SessionSendParams{Queue: true, Resume: true}, rpc.CodeInvalidArgument, "resume"},
		{rpc.SessionSendParams{Steer: &rpc.SteerOption{ExecutionSeq: 1}, Prompt: "\x1b[2J"}, rpc.CodeInvalidArgument, "prompt"},
		{rpc.SessionSendParams{Queue: true, Prompt: strings.Repeat("x", maxPromptBytes+1)}, rpc.CodeInvalidArgument, "prompt"},
		// Without either, exactly SESSION_BUSY.
		{rpc.SessionSendParams{}, rpc.CodeSessionBusy, ""},
	} {
		c.p.Session, c.p.RequestID = id, "sq-bad"
		if c.p.Prompt == "" {
			c.p.Prompt = "bad"
		}
		wantRPCError(t, td.call(rpc.MethodSessionSend, c.p, &rpc.Receipt{}), c.code, c.field)
	}
	if rd := td.read(t, id); len(rd.Session.Queued) != 0 || rd.Session.State != rpc.StateBusy {
		t.Fatalf("refused sends changed the Session: %+v", rd.Session)
	}
	if hasEvent(td.events(t, id), rpc.EventExecutionSteered) {
		t.Fatal("a refused steer was announced")
	}
}

// Gemini CLI takes text typed during a turn as a turn of its own, so
// its steering capability is false and a steer is refused before
// anything is typed.
func TestSteerRefusedWithoutCapability(t *testing.T) {
	if harness.Gemini.Info(harness.Gemini{}).Capabilities.Steering {
		t.Fatal("Gemini CLI claims steering")
	}
	s := &session{h: harness.Gemini{}, rec: sessionRecord{ID: "gemini:x", State: stBusy, LastExecSeq: 1}, exec: &execution{seq: 1}}
	_, err := steerableLocked(s, 1)
	wantRPCError(t, err, rpc.CodeInvalidArgument, "steer")
	for _, h := range []harness.Harness{harness.Claude{}, harness.Codex{}, harness.Gemini{}} {
		if !h.Info().Capabilities.Queue {
			t.Errorf("%s: queue capability false", h.Name())
		}
	}
}

func TestQueueRunsAsNextExecutionFake(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "q-1", "[[slow 1500]] first")
	id := r.Session.ID
	td.waitState(t, id, rpc.StateBusy)

	var q1, q2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "second", RequestID: "q-2", Queue: true}, &q1)
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "third", RequestID: "q-3", Queue: true}, &q2)
	if !q1.Queued || q1.ExecutionSeq != 2 || q1.Submission != rpc.SubmissionPending || !q2.Queued || q2.ExecutionSeq != 3 {
		t.Fatalf("queued receipts = %+v / %+v", q1, q2)
	}
	var replay rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "second", RequestID: "q-2", Queue: true}, &replay)
	if !replay.Replayed || replay.ExecutionSeq != 2 || replay.Submission != rpc.SubmissionPending {
		t.Fatalf("replayed queued receipt = %+v", replay)
	}
	rd := td.read(t, id)
	if len(rd.Session.Queued) != 2 || rd.Session.Queued[0].ExecutionSeq != 2 || rd.Session.Queued[0].Prompt != "second" || rd.Session.Queued[1].ExecutionSeq != 3 {
		t.Fatalf("session.read queued = %+v", rd.Session.Queued)
	}

	// Each receipt's cursor waits for its own execution's result.
	_, res2 := td.waitResult(t, id, q1.Cursor)
	if res2.ExecutionSeq != 2 || fetchdoc.DerefText(&res2) != "MOCK-REPLY: second" {
		t.Fatalf("queued result = %+v %q", res2, fetchdoc.DerefText(&res2))
	}
	_, res1 := td.waitResult(t, id, r.Cursor)
	if res1.ExecutionSeq != 1 || res1.Status != rpc.StatusCompleted {
		t.Fatalf("first result = %+v", res1)
	}
	_, res3 := td.waitResult(t, id, q2.Cursor)
	if res3.ExecutionSeq != 3 || fetchdoc.DerefText(&res3) != "MOCK-REPLY: third" {
		t.Fatalf("second queued result = %+v %q", res3, fetchdoc.DerefText(&res3))
	}
	rd = td.waitState(t, id, rpc.StateIdle)
	if len(rd.Session.Queued) != 0 {
		t.Fatalf("queue left: %+v", rd.Session.Queued)
	}
	var queuedEvents int
	for _, e := range td.events(t, id) {
		if e.Type == rpc.EventExecutionQueued {
			queuedEvents++
		}
	}
	if queuedEvents != 2 {
		t.Fatalf("%d execution.queued events, want 2", queuedEvents)
	}

	// On an idle Session queue is a plain send.
	var plain rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "fourth", RequestID: "q-4", Queue: true}, &plain)
	if plain.Queued || plain.ExecutionSeq != 4 {
		t.Fatalf("queue on an idle Session = %+v", plain)
	}
	if _, res := td.waitResult(t, id, plain.Cursor); fetchdoc.DerefText(&res) != "MOCK-REPLY: fourth" {
		t.Fatalf("result = %q", fetchdoc.DerefText(&res))
	}
}

func TestQueueBoundedAndClearedByCancel(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "qc-1", "[[slow 600000]] long")
	id := r.Session.ID
	td.waitState(t, id, rpc.StateBusy)
	var receipts []rpc.Receipt
	for i := 0; i < rpc.MaxQueued; i++ {
		var q rpc.Receipt
		td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "queued " + itoa(uint64(i)), RequestID: "qc-q" + itoa(uint64(i)), Queue: true}, &q)
		receipts = append(receipts, q)
	}
	err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "one too many", RequestID: "qc-over", Queue: true}, &rpc.Receipt{})
	wantRPCError(t, err, rpc.CodeSessionBusy, "")
	if n := len(td.read(t, id).Session.Queued); n != rpc.MaxQueued {
		t.Fatalf("%d queued, want %d", n, rpc.MaxQueued)
	}

	var cr rpc.SessionResult
	td.mustCall(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: id}, &cr)
	rd := td.waitState(t, id, rpc.StateIdle)
	if len(rd.Session.Queued) != 0 {
		t.Fatalf("cancel left the queue: %+v", rd.Session.Queued)
	}
	for _, q := range receipts {
		_, res := td.waitResult(t, id, q.Cursor)
		if res.ExecutionSeq != q.ExecutionSeq || res.Status != rpc.StatusCanceled || res.Error == nil || res.Error.Code != "canceled" {
			t.Fatalf("queued %d: result %+v", q.ExecutionSeq, res)
		}
	}
	// Nothing of the queue was typed: the fake saw one prompt.
	if tr := fakeTranscript(t, td.env); strings.Contains(tr, "queued 0") {
		t.Fatal("a canceled queued send reached the harness")
	}
	// The Session goes on from the next execution_seq.
	var next rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "after", RequestID: "qc-next"}, &next)
	if next.ExecutionSeq != uint64(rpc.MaxQueued)+2 {
		t.Fatalf("next execution_seq = %d", next.ExecutionSeq)
	}
}

// A queued send is stored with the Session: a daemon that goes away with
// it queued gives it a result on its way, never drops it unnoticed, and
// the restarted daemon still has that result.
func TestQueueNotLostAcrossDaemonRestart(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "qr-1", "[[slow 600000]] long")
	id := r.Session.ID
	td.waitState(t, id, rpc.StateBusy)
	var q rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "held", RequestID: "qr-2", Queue: true}, &q)
	td.stop()
	td.start()
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "after_execution": 0}, &doc)
	var got *rpc.Result
	for i := range doc.Sessions[0].Results {
		if doc.Sessions[0].Results[i].ExecutionSeq == q.ExecutionSeq {
			got = &doc.Sessions[0].Results[i]
		}
	}
	if got == nil || got.Status != rpc.StatusInterrupted || got.Error == nil || got.Error.Code != "queue_dropped" || got.Prompt == nil || *got.Prompt != "held" {
		t.Fatalf("queued send after restart: %+v", got)
	}
	if rd := td.read(t, id); len(rd.Session.Queued) != 0 {
		t.Fatalf("queue after restart: %+v", rd.Session.Queued)
	}
}
