package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
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
