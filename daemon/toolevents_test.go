package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// toolEvents are the tool.call events among evs.
func toolEvents(evs []rpc.Event) []rpc.Event {
	var out []rpc.Event
	for _, e := range evs {
		if e.Type == rpc.EventToolCall {
			out = append(out, e)
		}
	}
	return out
}

// The fake Claude's tool calls (its PreToolUse, PostToolUse and
// PostToolUseFailure hooks, shaped as 2.1.332's) become tool.call events
// for a caller that asks, between the turn's lifecycle events, and nowhere
// else.
func TestToolCallEventsFromHooks(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "tool-1", "[[tool echo hi]] run it")
	id := r.Session.ID
	td.waitResult(t, id, r.Cursor)
	var r2 rpc.Receipt
	td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "[[tool echo oops >&2; exit 3]] again", RequestID: "tool-2"}, &r2)
	doc, _ := td.waitResult(t, id, r2.Cursor)

	var all []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: id, ToolCalls: true}, &all)
	tools := toolEvents(all)
	if len(tools) != 4 {
		t.Fatalf("tool.call events %+v, want 4 (all events: %v)", tools, eventTypes(all))
	}
	ok, failed := tools[:2], tools[2:]
	if ok[0].ToolCall.Status != rpc.ToolStatusStarted || ok[1].ToolCall.Status != rpc.ToolStatusCompleted ||
		ok[0].ToolCall.ID == "" || ok[0].ToolCall.ID != ok[1].ToolCall.ID || ok[0].Tool != "Bash" || ok[0].Command != "echo hi" ||
		ok[0].ExecutionSeq != 1 || ok[0].SessionID != id || ok[0].ToolSeq == 0 || ok[1].ToolSeq <= ok[0].ToolSeq {
		t.Errorf("first call: %+v / %+v", ok[0], ok[1])
	}
	var in struct{ Command string }
	if json.Unmarshal(ok[0].ToolCall.Input, &in) != nil || in.Command != "echo hi" {
		t.Errorf("input %s", ok[0].ToolCall.Input)
	}
	var out struct{ Stdout string }
	if json.Unmarshal(ok[1].ToolCall.Output, &out) != nil || out.Stdout != "hi" {
		t.Errorf("output %s", ok[1].ToolCall.Output)
	}
	if failed[1].ToolCall.Status != rpc.ToolStatusFailed || failed[1].ToolCall.Error != "Exit code 3\noops" ||
		failed[0].ToolCall.ID != failed[1].ToolCall.ID || failed[0].ToolCall.ID == ok[0].ToolCall.ID || failed[1].ExecutionSeq != 2 {
		t.Errorf("failed call: %+v %+v / %+v %+v", failed[0], failed[0].ToolCall, failed[1], failed[1].ToolCall)
	}
	// In recording order: after the turn's busy, before its idle.
	pos := func(typ string, exec uint64, from int) int {
		for i := from; i < len(all); i++ {
			if all[i].Type == typ && all[i].ExecutionSeq == exec {
				return i
			}
		}
		return -1
	}
	busy, idle := pos(rpc.EventSessionBusy, 1, 0), pos(rpc.EventSessionIdle, 1, 0)
	started := pos(rpc.EventToolCall, 1, 0)
	if busy < 0 || idle < 0 || !(busy < started && started < idle) {
		t.Errorf("order: %v", eventTypes(all))
	}

	// Not for a caller that does not ask, nor in session.fetch.
	if n := len(toolEvents(td.events(t, id))); n != 0 {
		t.Errorf("event.read without tool_calls carried %d tool.call events", n)
	}
	var fetched rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id}, &fetched)
	for _, s := range append(doc.Sessions, fetched.Sessions...) {
		if n := len(toolEvents(s.Events)); n != 0 {
			t.Errorf("session.fetch carried %d tool.call events", n)
		}
	}

	// tool_after continues after a tool call; after after a lifecycle
	// event.
	var rest []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: id, ToolCalls: true, ToolAfter: &ok[1].ToolSeq, After: &all[idle].Seq}, &rest)
	if got := toolEvents(rest); len(got) != 2 || got[0].ToolSeq != failed[0].ToolSeq {
		t.Errorf("from tool_after %d: %+v", ok[1].ToolSeq, got)
	}
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: id, ToolCalls: true, After: &all[idle].Seq}, &rest)
	if got := toolEvents(rest); len(got) != 2 || got[0].ToolSeq != failed[0].ToolSeq {
		t.Errorf("after %d: %+v", all[idle].Seq, got)
	}
}

// event.subscribe with tool_calls streams a live turn's tool calls.
func TestToolCallEventsSubscribe(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "sub-1", "hello")
	id := r.Session.ID
	td.waitResult(t, id, r.Cursor)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, td.paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ack, next, err := c.Subscribe(ctx, rpc.MethodEventSubscribe, rpc.EventReadParams{Session: id, ToolCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	var a rpc.SubscribeAck
	if json.Unmarshal(ack, &a) != nil || a.ToolAfter == nil {
		t.Fatalf("ack %s", ack)
	}
	var r2 rpc.Receipt
	td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "[[tool echo live]] go", RequestID: "sub-2"}, &r2)
	var got []string
	for {
		line, err := next()
		if err != nil {
			t.Fatalf("stream ended: %v after %v", err, got)
		}
		var ev rpc.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == rpc.EventToolCall {
			got = append(got, ev.ToolCall.Status+" "+ev.Command)
		} else {
			got = append(got, ev.Type)
		}
		if ev.Type == rpc.EventSessionIdle {
			break
		}
	}
	if strings.Join(got, ",") != "session.busy,started echo live,completed echo live,session.idle" {
		t.Errorf("stream: %q", got)
	}
}
