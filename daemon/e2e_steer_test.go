package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Steering and queueing with the real CLIs against their mock models:
// the first prompt's answer is a shell tool call that marks it started
// and then sleeps, which gives the window. A steer sent then must be in
// the model's next request of the same turn (the tool result's), and the
// turn's result is that turn's; a queue becomes the next execution with
// its own result; a steer naming an ended execution is refused and
// nothing reaches the CLI; Gemini CLI refuses steers (it queues what is
// typed during a turn) but queues like the others.
//
//	go test -race -count=1 -run 'TestE2ESteer' ./daemon/

// steerScript is the mock's script for these tests.
var steerScript = mockapi.Script{
	mockapi.Prefix("STEER-TURN", mockapi.Reply{Tool: "touch started && sleep 6", Text: "TURN-DONE"}),
	mockapi.Prefix("QUEUE-TURN", mockapi.Reply{Tool: "touch started2 && sleep 4", Text: "QUEUE-FIRST-DONE"}),
	mockapi.Prefix("QUEUED-NEXT", mockapi.Reply{Text: "QUEUED-DONE"}),
	// Codex's next request after a steer ends in the steer's own user
	// message, which the mock reads as that request's prompt.
	mockapi.Prefix("STEER-ME", mockapi.Reply{Text: "STEERED-DONE"}),
}

// steerRow is one real CLI under these tests.
type steerRow struct {
	name    string
	harness string
	options []string
	rig     func(t *testing.T, script mockapi.Script) (*e2eRig, *mockapi.Server)
	steers  bool
	// steered is the turn's final text after a steer: the mock's answer
	// to the request that carried it.
	steered string
	// toolOutput marks the tool's result in a request body; the steer
	// comes after it.
	toolOutput string
}

var steerRows = []steerRow{
	{name: "claude", harness: "claude", options: e2eClaudeCLI.runOptions, steers: true,
		// Claude Code puts the steer in the tool result's user message.
		steered: "TURN-DONE", toolOutput: `"tool_result"`, rig: claudeRigMock},
	{name: "codex", harness: "codex", steers: true,
		// Codex sends it as a user message after the function call output.
		steered: "STEERED-DONE", toolOutput: `"function_call_output"`, rig: codexRigMock},
	{name: "gemini", harness: "gemini", rig: geminiRigMock},
}

// steerRig is a row's real CLI against its mock, under a daemon, and the
// directory its one Session runs in: TestE2ESteer and TestSteerLatencyBench
// share it.
type steerRig struct {
	*e2eRig
	mock  *mockapi.Server
	row   steerRow
	title string
	cwd   string
	id    string // the Session, once turn has made it
}

// startSteerRig is row's rig with its mock scripted by script and a
// daemon; its Session will be called title.
func startSteerRig(t *testing.T, row steerRow, script mockapi.Script, title string) *steerRig {
	t.Helper()
	e, mock := row.rig(t, script)
	e.td = startTestDaemonWith(t, e.env)
	return &steerRig{e2eRig: e, mock: mock, row: row, title: title, cwd: t.TempDir()}
}

// turn starts prompt: in a new Session (session.create) the first time,
// else as the Session's next execution (session.send).
func (s *steerRig) turn(t *testing.T, prompt, reqID string) (r rpc.Receipt) {
	t.Helper()
	if s.id == "" {
		s.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: s.title, Harness: s.row.harness, Cwd: s.cwd, Prompt: prompt,
			RequestID: reqID, Environment: s.env, HarnessOptions: s.row.options,
		}, &r)
		s.id = r.Session.ID
		return r
	}
	s.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: s.id, Prompt: prompt, RequestID: reqID}, &r)
	return r
}

// steer is the session.send that steers execution seq with prompt.
func (s *steerRig) steer(prompt, reqID string, seq uint64) rpc.SessionSendParams {
	return rpc.SessionSendParams{Session: s.id, Prompt: prompt, RequestID: reqID, Steer: &rpc.SteerOption{ExecutionSeq: seq}}
}

// queue sends prompt to run after the running execution, and returns the
// receipt unchecked.
func (s *steerRig) queue(t *testing.T, prompt, reqID string) (q rpc.Receipt) {
	t.Helper()
	s.call(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: s.id, Prompt: prompt, RequestID: reqID, Queue: true}, &q)
	return q
}

func TestE2ESteer(t *testing.T) {
	for _, row := range steerRows {
		t.Run(row.name, func(t *testing.T) { runE2ESteer(t, row) })
	}
}

func runE2ESteer(t *testing.T, row steerRow) {
	e := startSteerRig(t, row, steerScript, "steer "+row.name)
	mock, cwd := e.mock, e.cwd
	r := e.turn(t, "STEER-TURN run the tool", row.name+"-steer-1")
	id := e.id
	waitFile(t, cwd+"/started")

	steer := e.steer("STEER-ME now", row.name+"-steer-2", r.ExecutionSeq)
	if !row.steers {
		before := len(mock.Requests())
		wantRPCError(t, e.td.call(rpc.MethodSessionSend, steer, &rpc.Receipt{}), rpc.CodeInvalidArgument, "steer")
		if _, res := e.waitResult(t, id, r.Cursor); res.ExecutionSeq != r.ExecutionSeq || fetchdoc.DerefText(&res) != "TURN-DONE" {
			t.Fatalf("result = %+v %q", res, fetchdoc.DerefText(&res))
		}
		for _, q := range mock.Requests()[before:] {
			if strings.Contains(string(q.Body), "STEER-ME") {
				t.Fatalf("a refused steer reached the model: %s request", q.Kind)
			}
		}
	} else {
		sent := time.Now()
		var sr rpc.Receipt
		e.call(t, rpc.MethodSessionSend, steer, &sr)
		t.Logf("latency: session.send steer -> receipt (dlgt's share: typing it) %v", time.Since(sent).Round(time.Millisecond))
		if !sr.Steered || sr.ExecutionSeq != r.ExecutionSeq {
			t.Fatalf("steer receipt = %+v", sr)
		}
		_, res := e.waitResult(t, id, r.Cursor)
		if res.ExecutionSeq != r.ExecutionSeq || res.Status != rpc.StatusCompleted || fetchdoc.DerefText(&res) != row.steered {
			t.Fatalf("the turn's result = %+v %q, want execution %d's %s", res, fetchdoc.DerefText(&res), r.ExecutionSeq, row.steered)
		}
		carried := steerCarrier(t, mock, row.toolOutput)
		t.Logf("latency: steer sent -> in the model's request %v (the tool's sleep included)", carried.Received.Sub(sent).Round(time.Millisecond))
		// The CLI's own record (transcript, rollout) shows it too.
		waitSteerSeen(t, e.td, id, r.ExecutionSeq)
	}
	rd := e.read(t, id)
	if rd.Result == nil || rd.Result.ExecutionSeq != r.ExecutionSeq {
		t.Fatalf("after the steer the last result is %+v, want execution %d's", rd.Result, r.ExecutionSeq)
	}

	// A steer naming the ended execution: refused, nothing typed.
	before := len(mock.Requests())
	late := steer
	late.RequestID = row.name + "-steer-late"
	code, field := rpc.CodeInvalidArgument, "steer.execution_seq"
	if !row.steers {
		field = "steer"
	}
	wantRPCError(t, e.td.call(rpc.MethodSessionSend, late, &rpc.Receipt{}), code, field)

	// A queue sent during the next turn becomes the execution after it.
	q0 := e.turn(t, "QUEUE-TURN again", row.name+"-queue-1")
	waitFile(t, cwd+"/started2")
	q := e.queue(t, "QUEUED-NEXT please", row.name+"-queue-2")
	if q0.ExecutionSeq != r.ExecutionSeq+1 {
		t.Fatalf("the send after the steered turn is execution %d, want %d: the steer made an execution of its own", q0.ExecutionSeq, r.ExecutionSeq+1)
	}
	if !q.Queued || q.ExecutionSeq != q0.ExecutionSeq+1 {
		t.Fatalf("queued receipt = %+v (the running one is %d)", q, q0.ExecutionSeq)
	}
	if got := e.read(t, id).Session.Queued; len(got) != 1 || got[0].ExecutionSeq != q.ExecutionSeq {
		t.Fatalf("session.read queued = %+v", got)
	}
	_, res0 := e.waitResult(t, id, q0.Cursor)
	if res0.ExecutionSeq != q0.ExecutionSeq || fetchdoc.DerefText(&res0) != "QUEUE-FIRST-DONE" {
		t.Fatalf("the running turn's result = %+v %q", res0, fetchdoc.DerefText(&res0))
	}
	_, res := e.waitResult(t, id, q.Cursor)
	if res.ExecutionSeq != q.ExecutionSeq || res.Status != rpc.StatusCompleted || fetchdoc.DerefText(&res) != "QUEUED-DONE" {
		t.Fatalf("the queued execution's result = %+v %q", res, fetchdoc.DerefText(&res))
	}
	for _, m := range mock.Requests()[before:] {
		if strings.Contains(string(m.Body), "STEER-ME now") && m.Kind == mockapi.KindPrompt && m.Prompt == "STEER-ME now" {
			t.Fatal("the refused late steer reached the model")
		}
		if m.Kind == mockapi.KindPrompt && m.Prompt == "QUEUED-NEXT please" {
			t.Logf("latency: previous result -> queued execution's first model request %v",
				m.Received.Sub(time.UnixMilli(res0.CompletedAtMS)).Round(time.Millisecond))
		}
	}
	if n := e.waitPrompt(t, "QUEUED-NEXT please"); n != 1 {
		t.Fatalf("the queued prompt reached the model %d times, want once", n)
	}
}

// steerCarrier returns the first request of mock that carried the steer
// "STEER-ME now", and fails unless it is the steered turn's next one: the
// turn's prompt, the tool's result (toolOutput marks it), then the steer.
func steerCarrier(t *testing.T, mock *mockapi.Server, toolOutput string) *mockapi.Request {
	t.Helper()
	for _, q := range mock.Requests() {
		if !strings.Contains(string(q.Body), "STEER-ME now") {
			continue
		}
		body := string(q.Body)
		turn, out, st := strings.Index(body, "STEER-TURN"), strings.Index(body, toolOutput), strings.Index(body, "STEER-ME now")
		if turn < 0 || out < turn || st < out {
			t.Fatalf("the request carrying the steer is not the turn's next one (prompt at %d, tool output at %d, steer at %d): %.2000s", turn, out, st, body)
		}
		return &q
	}
	t.Fatal("no model request carried the steer")
	return nil
}
