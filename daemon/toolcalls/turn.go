package toolcalls

import (
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Turn is the tool calls of one execution as its result keeps them
// (rpc.Result's tool_calls): each call once, in the order it started,
// with its last status; at most rpc.MaxResultToolCalls, each input
// bounded by rpc.MaxResultToolInput. The zero value is ready.
type Turn struct {
	calls []rpc.ResultToolCall
	// cut: a call over the bound was left out.
	cut bool
}

// Note folds the recorded tool.call event ev of call tc (whose input is
// bounded again, from the harness's own) into the turn: a start adds the
// call, an end sets the status of the call with its id (or adds it, when
// its start came before the turn).
func (t *Turn) Note(ev *rpc.Event, tc *harness.ToolCall) {
	if ev == nil || ev.ToolCall == nil {
		return
	}
	for i := range t.calls {
		if c := &t.calls[i]; c.ID == ev.ToolCall.ID {
			if ev.ToolCall.Status != rpc.ToolStatusStarted {
				c.Status, c.Error = ev.ToolCall.Status, ev.ToolCall.Error
			}
			return
		}
	}
	if len(t.calls) >= rpc.MaxResultToolCalls {
		t.cut = true
		return
	}
	c := rpc.ResultToolCall{ID: ev.ToolCall.ID, Tool: ev.Tool, Command: ev.Command, Status: ev.ToolCall.Status, Error: ev.ToolCall.Error}
	c.Input, c.InputTruncated = boundRaw(tc.Input, rpc.MaxResultToolInput)
	t.calls = append(t.calls, c)
}

// Calls are the turn's calls (nil: none) and whether any was left out.
func (t *Turn) Calls() ([]rpc.ResultToolCall, bool) {
	if len(t.calls) == 0 {
		return nil, t.cut
	}
	return append([]rpc.ResultToolCall(nil), t.calls...), t.cut
}
