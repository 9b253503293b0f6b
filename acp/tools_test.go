package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/rpc"
)

// toolUpdate is one tool_call or tool_call_update of a session, flattened.
type toolUpdate struct {
	start  bool
	id     string
	title  string
	kind   sdk.ToolKind
	status sdk.ToolCallStatus
	input  string
	output string
}

// toolUpdates are the tool updates of session id, in order.
func (e *editor) toolUpdates(id sdk.SessionId) []toolUpdate {
	e.stub.mu.Lock()
	defer e.stub.mu.Unlock()
	var out []toolUpdate
	js := func(v any) string {
		if v == nil {
			return ""
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	for _, n := range e.stub.updates {
		switch u := n.Update; {
		case n.SessionId != id:
		case u.ToolCall != nil:
			out = append(out, toolUpdate{true, string(u.ToolCall.ToolCallId), u.ToolCall.Title, u.ToolCall.Kind, u.ToolCall.Status, js(u.ToolCall.RawInput), js(u.ToolCall.RawOutput)})
		case u.ToolCallUpdate != nil:
			t := toolUpdate{id: string(u.ToolCallUpdate.ToolCallId), input: js(u.ToolCallUpdate.RawInput), output: js(u.ToolCallUpdate.RawOutput)}
			if u.ToolCallUpdate.Status != nil {
				t.status = *u.ToolCallUpdate.Status
			}
			out = append(out, t)
		}
	}
	return out
}

// A tool the harness runs (the fake Claude's PreToolUse and PostToolUse,
// or PostToolUseFailure for a command that fails) reaches the editor as a
// tool_call and a tool_call_update with its input and output, before the
// prompt's answer.
func TestToolCallUpdates(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	if r, err := e.prompt(ctx, id, "[[tool echo hi]] run it"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", r, err)
	}
	ups := e.toolUpdates(id)
	if len(ups) != 2 {
		t.Fatalf("tool updates %+v, want a start and an end", ups)
	}
	start, end := ups[0], ups[1]
	if !start.start || !strings.HasPrefix(start.id, "toolu_") || start.title != "echo hi" || start.kind != sdk.ToolKindExecute ||
		start.status != sdk.ToolCallStatusInProgress || !strings.Contains(start.input, `"command":"echo hi"`) {
		t.Errorf("start %+v", start)
	}
	if end.start || end.id != start.id || end.status != sdk.ToolCallStatusCompleted || !strings.Contains(end.output, `"stdout":"hi"`) {
		t.Errorf("end %+v", end)
	}

	if r, err := e.prompt(ctx, id, "[[tool echo oops >&2; exit 3]] again"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", r, err)
	}
	ups = e.toolUpdates(id)[2:]
	if len(ups) != 2 || ups[0].id == start.id || ups[1].id != ups[0].id || ups[1].status != sdk.ToolCallStatusFailed ||
		!strings.Contains(ups[1].output, `"error":"Exit code 3\noops"`) {
		t.Errorf("failed call %+v", ups)
	}
}

// A turn's tool calls are kept with its result and stored: after a
// daemon restart, a new connection's session/load replays each turn as
// its prompt, its tool calls with their last status, and its answer; a
// turn without stored tool calls (none ran, as in a result an older
// daemon stored) loads as before. session.fetch carries them only when
// asked; session.read's result has them.
func TestLoadReplaysStoredToolCalls(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e, id := w.opened(ctx, "[[reply first answer]]")
	for _, p := range []string{"[[tool echo hi]] run it", "[[tool echo oops >&2; exit 3]] again"} {
		if r, err := e.prompt(ctx, id, p); err != nil || r.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("prompt %q: %+v, %v", p, r, err)
		}
	}
	live := e.toolUpdates(id)
	if len(live) != 4 {
		t.Fatalf("live tool updates %+v", live)
	}
	before, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil {
		t.Fatal(err)
	}
	ref := before.Session.ID // the alias is gone once the Session stops
	e.quit()
	w.restart()

	e2 := w.loaded(ctx, id)
	got := e2.replay(id)
	all, err := w.c.Results(ctx, ref, 0)
	if err != nil || len(all.Results) != 3 {
		t.Fatalf("results: %+v, %v", all, err)
	}
	text := func(i int) string { return "agent: " + *all.Results[i].FinalText }
	want := []string{
		"user: [[reply first answer]]", "agent: first answer",
		"user: [[tool echo hi]] run it",
		`tool completed execute echo hi {"command":"echo hi","description":"Run the scripted command"} null`,
		text(1),
		"user: [[tool echo oops >&2; exit 3]] again",
		`tool failed execute echo oops >&2; exit 3 {"command":"echo oops \u003e\u00262; exit 3","description":"Run the scripted command"} {"error":"Exit code 3\noops"}`,
		text(2),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("replayed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The ids are the harness's, as the live updates had them.
	ups := e2.toolUpdates(id)
	if len(ups) != 2 || ups[0].id != live[0].id || ups[1].id != live[2].id {
		t.Errorf("replayed ids %+v, live %+v", ups, live)
	}

	// The public RPC: session.read's result has the last turn's calls;
	// session.fetch only with tool_calls.
	rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: ref})
	if err != nil || rd.Result == nil || len(rd.Result.ToolCalls) != 1 || rd.Result.ToolCalls[0].Status != rpc.ToolStatusFailed ||
		rd.Result.ToolCalls[0].Tool != "Bash" || rd.Result.ToolCalls[0].ID != live[2].id {
		t.Fatalf("session.read: %+v, %v", rd, err)
	}
	for _, tools := range []bool{false, true} {
		res, err := w.c.ResultsPaged(ctx, ref, 0, 0, tools)
		if err != nil || len(res.Results) != 3 {
			t.Fatalf("results: %+v, %v", res, err)
		}
		n := 0
		for _, r := range res.Results {
			n += len(r.ToolCalls)
		}
		if want := map[bool]int{false: 0, true: 2}[tools]; n != want || res.Results[0].ToolCalls != nil {
			t.Errorf("tool_calls %v: %d calls (%+v), want %d", tools, n, res.Results, want)
		}
	}
}
