package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
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

// A harness that gives no call id (Gemini CLI): a call's end takes the id
// its start was given, matched by name and input.
func TestToolLogPairsCallsWithoutID(t *testing.T) {
	var l toolLog
	call := func(phase, name, input string) string {
		l.add("u1", "gemini:s", 1, 7, &harness.ToolCall{Name: name, Phase: phase, Input: json.RawMessage(input)})
		got, _ := l.read(l.last()-1, "", 1)
		var ev rpc.Event
		json.Unmarshal(got[0].data, &ev)
		if ev.Seq != 7 || ev.ToolCall.Status != phase {
			t.Fatalf("event %s", got[0].data)
		}
		return ev.ToolCall.ID
	}
	a := call(harness.ToolStarted, "run_shell_command", `{"command":"a"}`)
	b := call(harness.ToolStarted, "run_shell_command", `{"command":"b"}`)
	c := call(harness.ToolStarted, "read_file", `{"path":"x"}`)
	if a == b || a == c || b == c || !strings.HasPrefix(a, "dlgt-tool-") {
		t.Fatalf("ids %q %q %q", a, b, c)
	}
	if got := call(harness.ToolCompleted, "run_shell_command", `{"command": "b"}`); got != b {
		t.Errorf("end of b took %q", got)
	}
	if got := call(harness.ToolCompleted, "read_file", `{}`); got != c {
		t.Errorf("end of c took %q", got)
	}
	if got := call(harness.ToolCompleted, "run_shell_command", `{"command":"a"}`); got != a {
		t.Errorf("end of a took %q", got)
	}
	if got := call(harness.ToolCompleted, "run_shell_command", `{"command":"a"}`); got == a || got == "" {
		t.Errorf("an end with no start took %q", got)
	}
	if len(l.open) != 0 {
		t.Errorf("open calls left: %v", l.open)
	}
}

// Input and output are bounded; the log is bounded and a reader behind it
// is told.
func TestToolLogBounds(t *testing.T) {
	var l toolLog
	big := `{"command":"` + strings.Repeat("é", rpc.MaxToolRaw) + `"}`
	l.add("u", "s", 1, 1, &harness.ToolCall{ID: "x", Name: "Bash", Phase: harness.ToolStarted, Input: json.RawMessage(big), Output: json.RawMessage(`"short"`)})
	got, _ := l.read(0, "", 10)
	var ev rpc.Event
	if err := json.Unmarshal(got[0].data, &ev); err != nil {
		t.Fatal(err)
	}
	var s string
	if !ev.ToolCall.InputTruncated || json.Unmarshal(ev.ToolCall.Input, &s) != nil || len(s) > rpc.MaxToolRaw || !strings.HasPrefix(big, s) || len(s) < rpc.MaxToolRaw-2 {
		t.Errorf("input truncated=%v, %d bytes", ev.ToolCall.InputTruncated, len(s))
	}
	if ev.ToolCall.OutputTruncated || string(ev.ToolCall.Output) != `"short"` {
		t.Errorf("output %s", ev.ToolCall.Output)
	}
	for i := 0; i < toolLogCap+10; i++ {
		l.add("u", "s", 1, 1, &harness.ToolCall{ID: "x", Name: "Bash", Phase: harness.ToolStarted, Input: json.RawMessage(big)})
	}
	if len(l.ents) > toolLogCap || l.bytes > toolLogBytes {
		t.Errorf("%d entries, %d bytes kept", len(l.ents), l.bytes)
	}
	if _, behind := l.read(0, "", 1); !behind {
		t.Error("a reader before the evicted calls is not told")
	}
	if _, behind := l.read(l.last(), "", 1); behind {
		t.Error("a reader at the newest call is told it is behind")
	}
}

// mergeTools puts a call before the first lifecycle event recorded after
// it, and holds calls after a full page's last event for the next page.
func TestMergeTools(t *testing.T) {
	evs := []store.Event{{Seq: 3, Data: []byte("e3")}, {Seq: 5, Data: []byte("e5")}}
	tools := []toolEntry{{seq: 1, base: 2, data: []byte("t1")}, {seq: 2, base: 3, data: []byte("t2")}, {seq: 3, base: 5, data: []byte("t3")}}
	lines, after, toolAfter := mergeTools(evs, tools, false, 0, 0)
	var got []string
	for _, l := range lines {
		got = append(got, string(l))
	}
	if strings.Join(got, ",") != "t1,e3,t2,e5,t3" || after != 5 || toolAfter != 3 {
		t.Errorf("merged %v after %d/%d", got, after, toolAfter)
	}
	lines, after, toolAfter = mergeTools(evs, tools, true, 0, 0)
	if len(lines) != 4 || after != 5 || toolAfter != 2 {
		t.Errorf("full page: %d lines after %d/%d", len(lines), after, toolAfter)
	}
}
