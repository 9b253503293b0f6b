package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/rpc"
)

// maxCalls bounds the tool calls a session tracks between two results.
const maxCalls = 256

// hookCall is a tool call the harness reported (tool.call events) whose
// end has not been seen.
type hookCall struct {
	// acpID is the editor's id of the call: the harness's, or that of
	// the permission request it was joined to.
	acpID string
	name  string
	// asked: a permission request of the editor is this call.
	asked bool
}

// watchTools follows the Session's tool.call events (event.subscribe
// with tool_calls) and reports each as tool_call / tool_call_update. A
// session this connection created follows them from the Session's start;
// others from the subscription on.
func (a *agent) watchTools(ctx context.Context, s *session, ref string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		p := rpc.EventReadParams{Session: ref, ToolCalls: true}
		s.mu.Lock()
		if s.toolBased {
			after := s.toolSeq
			p.ToolAfter = &after
		}
		s.mu.Unlock()
		onAck := func(ack rpc.SubscribeAck) {
			s.mu.Lock()
			if ack.ToolAfter != nil && !s.toolBased {
				s.toolSeq, s.toolBased = *ack.ToolAfter, true
			}
			s.mu.Unlock()
		}
		for ev, err := range s.cl.EventFollow(ctx, p, onAck) {
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				fmt.Fprintf(a.opts.Stderr, "dlgt acp: following the tool calls of %s: %v\n", ref, err)
				if rpc.AsError(err).Code == rpc.CodeInvalidArgument {
					// A daemon that predates tool_calls (a --host
					// machine not yet upgraded): no tool calls to show.
					return
				}
				break
			}
			backoff = 100 * time.Millisecond
			a.reportTool(s, ev)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// catchUpTools reports the tool calls the daemon recorded that the
// watcher has not yet (read with event.read), so a turn's tool calls
// reach the editor before its answer.
func (a *agent) catchUpTools(ctx context.Context, s *session) {
	s.mu.Lock()
	ref, based, after := s.ref, s.toolBased, s.toolSeq
	s.mu.Unlock()
	if !based || ref == "" {
		return // the watcher has not started yet: it will report them
	}
	noLifecycle := ^uint64(0)
	evs, err := s.cl.EventRead(ctx, rpc.EventReadParams{Session: ref, ToolCalls: true, After: &noLifecycle, ToolAfter: &after})
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(a.opts.Stderr, "dlgt acp: reading the tool calls of %s: %v\n", ref, err)
		}
		return
	}
	for _, ev := range evs {
		a.reportTool(s, ev)
	}
}

// reportTool reports one tool.call event to the editor, once (events are
// taken in tool_seq order, from the watcher and catchUpTools alike). A
// call's start is a tool_call (in_progress), unless a permission request
// already showed it (then it is that call); its end a tool_call_update
// with the status and raw output.
func (a *agent) reportTool(s *session, ev rpc.Event) {
	if ev.Type != rpc.EventToolCall || ev.ToolCall == nil || ev.ToolCall.ID == "" {
		return
	}
	s.toolMu.Lock()
	defer s.toolMu.Unlock()
	s.mu.Lock()
	if ev.ToolSeq <= s.toolSeq && s.toolBased {
		s.mu.Unlock()
		return
	}
	s.toolSeq, s.toolBased = ev.ToolSeq, true
	upd, ok := s.toolUpdateLocked(ev)
	s.mu.Unlock()
	if ok {
		a.update(s.id, upd)
	}
}

// toolUpdateLocked is the update for ev, and records the call. s.mu held.
func (s *session) toolUpdateLocked(ev rpc.Event) (sdk.SessionUpdate, bool) {
	tc := ev.ToolCall
	if s.calls == nil || len(s.calls) >= maxCalls {
		s.calls = map[string]*hookCall{}
	}
	if s.tools == nil {
		s.tools = map[string]sdk.ToolCallStatus{}
	}
	kind := toolKind(ev.Tool)
	detail := ev.Command
	if detail == "" {
		detail = string(tc.Input)
	}
	title := toolTitle(ev.Tool, detail)
	input := rawInput(ev)
	c := s.calls[tc.ID]
	if tc.Status == rpc.ToolStatusStarted {
		if c != nil {
			return sdk.SessionUpdate{}, false
		}
		c = &hookCall{acpID: tc.ID, name: ev.Tool}
		s.calls[tc.ID] = c
		if id := s.unjoinedPermissionLocked(ev.Tool); id != "" {
			// The editor was asked about this call before its start
			// was seen: it is that call.
			c.acpID, c.asked = id, true
			return sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateRawInput(input)), true
		}
		// A harness that asks for approvals may be about to ask
		// (its tool hook comes first): pending until an answer or its
		// end; one that does not runs the call now.
		status := sdk.ToolCallStatusInProgress
		if s.asks {
			status = sdk.ToolCallStatusPending
		}
		s.tools[tc.ID] = status
		return sdk.StartToolCall(sdk.ToolCallId(tc.ID), title, sdk.WithStartKind(kind),
			sdk.WithStartStatus(status), sdk.WithStartRawInput(input)), true
	}
	status := sdk.ToolCallStatusCompleted
	if tc.Status == rpc.ToolStatusFailed {
		status = sdk.ToolCallStatusFailed
	}
	output := rawOutput(tc)
	if c == nil {
		// Its start was not seen (recorded before this connection
		// followed the Session): the whole call at once.
		return sdk.StartToolCall(sdk.ToolCallId(tc.ID), title, sdk.WithStartKind(kind), sdk.WithStartStatus(status),
			sdk.WithStartRawInput(input), sdk.WithStartRawOutput(output)), true
	}
	delete(s.calls, tc.ID)
	s.tools[c.acpID] = status
	return sdk.UpdateToolCall(sdk.ToolCallId(c.acpID), sdk.WithUpdateStatus(status), sdk.WithUpdateRawOutput(output)), true
}

// unjoinedPermissionLocked is the id of a permission request shown for a
// tool named name whose call's start has not been seen, and takes it.
// s.mu held.
func (s *session) unjoinedPermissionLocked(name string) string {
	for id, tool := range s.permTools {
		if tool == name {
			delete(s.permTools, id)
			return id
		}
	}
	return ""
}

// joinHookCallLocked is the id of a started call of tool name that no
// permission request showed yet, for the request about it; "" when there
// is none (the request is then a call of its own until a start joins it).
// s.mu held.
func (s *session) joinHookCallLocked(name string) string {
	for _, c := range s.calls {
		if !c.asked && c.name == name {
			c.asked = true
			return c.acpID
		}
	}
	return ""
}

// rawInput is a tool.call's input as the editor gets it: the harness's
// JSON, or, when dlgt cut it, the cut text flagged.
func rawInput(ev rpc.Event) any {
	tc := ev.ToolCall
	if tc.InputTruncated {
		return map[string]any{"tool": ev.Tool, "input": tc.Input, "truncated": true}
	}
	if len(tc.Input) == 0 {
		return map[string]any{"tool": ev.Tool}
	}
	return tc.Input
}

// rawOutput is a tool.call's output (or error) as the editor gets it.
func rawOutput(tc *rpc.ToolCallEvent) any {
	out := map[string]any{}
	if len(tc.Output) > 0 {
		out["output"] = json.RawMessage(tc.Output)
	}
	if tc.OutputTruncated {
		out["truncated"] = true
	}
	if tc.Error != "" {
		out["error"] = tc.Error
	}
	return out
}

// replayedTools are the updates that replay result r's kept tool calls
// (rpc.Result tool_calls) on session/load: each call once, as a
// tool_call with its last status; a call whose end the daemon did not
// see (declined at the harness's dialog) ends with the turn, as a
// followed one does (finish).
func replayedTools(r rpc.Result) []sdk.SessionUpdate {
	out := make([]sdk.SessionUpdate, 0, len(r.ToolCalls))
	for _, c := range r.ToolCalls {
		if c.ID == "" {
			continue
		}
		ev := rpc.Event{Tool: c.Tool, Command: c.Command, ToolCall: &rpc.ToolCallEvent{
			ID: c.ID, Status: c.Status, Input: c.Input, InputTruncated: c.InputTruncated, Error: c.Error}}
		status := sdk.ToolCallStatusCompleted
		switch {
		case c.Status == rpc.ToolStatusFailed:
			status = sdk.ToolCallStatusFailed
		case c.Status == rpc.ToolStatusStarted && r.Status != rpc.StatusCompleted:
			status = sdk.ToolCallStatusFailed
		}
		detail := c.Command
		if detail == "" {
			detail = string(c.Input)
		}
		opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(toolKind(c.Tool)), sdk.WithStartStatus(status), sdk.WithStartRawInput(rawInput(ev))}
		if c.Error != "" {
			opts = append(opts, sdk.WithStartRawOutput(rawOutput(ev.ToolCall)))
		}
		out = append(out, sdk.StartToolCall(sdk.ToolCallId(c.ID), toolTitle(c.Tool, detail), opts...))
	}
	return out
}
