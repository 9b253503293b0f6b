package toolcalls

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// A harness that gives no call id (Gemini CLI): a call's end takes the id
// its start was given, matched by name and input.
func TestLogPairsCallsWithoutID(t *testing.T) {
	var l Log
	call := func(phase, name, input string) string {
		l.Add("u1", "gemini:s", 1, 7, &harness.ToolCall{Name: name, Phase: phase, Input: json.RawMessage(input)})
		got, _ := l.Read(l.Last()-1, "", 1)
		var ev rpc.Event
		json.Unmarshal(got[0].Data, &ev)
		if ev.Seq != 7 || ev.ToolCall.Status != phase {
			t.Fatalf("event %s", got[0].Data)
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
func TestLogBounds(t *testing.T) {
	var l Log
	big := `{"command":"` + strings.Repeat("é", rpc.MaxToolRaw) + `"}`
	l.Add("u", "s", 1, 1, &harness.ToolCall{ID: "x", Name: "Bash", Phase: harness.ToolStarted, Input: json.RawMessage(big), Output: json.RawMessage(`"short"`)})
	got, _ := l.Read(0, "", 10)
	var ev rpc.Event
	if err := json.Unmarshal(got[0].Data, &ev); err != nil {
		t.Fatal(err)
	}
	var s string
	if !ev.ToolCall.InputTruncated || json.Unmarshal(ev.ToolCall.Input, &s) != nil || len(s) > rpc.MaxToolRaw || !strings.HasPrefix(big, s) || len(s) < rpc.MaxToolRaw-2 {
		t.Errorf("input truncated=%v, %d bytes", ev.ToolCall.InputTruncated, len(s))
	}
	if ev.ToolCall.OutputTruncated || string(ev.ToolCall.Output) != `"short"` {
		t.Errorf("output %s", ev.ToolCall.Output)
	}
	for i := 0; i < LogCap+10; i++ {
		l.Add("u", "s", 1, 1, &harness.ToolCall{ID: "x", Name: "Bash", Phase: harness.ToolStarted, Input: json.RawMessage(big)})
	}
	if len(l.ents) > LogCap || l.bytes > LogBytes {
		t.Errorf("%d entries, %d bytes kept", len(l.ents), l.bytes)
	}
	if _, behind := l.Read(0, "", 1); !behind {
		t.Error("a reader before the evicted calls is not told")
	}
	if _, behind := l.Read(l.Last(), "", 1); behind {
		t.Error("a reader at the newest call is told it is behind")
	}
}

// Merge puts a call before the first lifecycle event recorded after
// it, and holds calls after a full page's last event for the next page.
func TestMerge(t *testing.T) {
	evs := []store.Event{{Seq: 3, Data: []byte("e3")}, {Seq: 5, Data: []byte("e5")}}
	tools := []Entry{{Seq: 1, Base: 2, Data: []byte("t1")}, {Seq: 2, Base: 3, Data: []byte("t2")}, {Seq: 3, Base: 5, Data: []byte("t3")}}
	lines, after, toolAfter := Merge(evs, tools, false, 0, 0)
	var got []string
	for _, l := range lines {
		got = append(got, string(l))
	}
	if strings.Join(got, ",") != "t1,e3,t2,e5,t3" || after != 5 || toolAfter != 3 {
		t.Errorf("merged %v after %d/%d", got, after, toolAfter)
	}
	lines, after, toolAfter = Merge(evs, tools, true, 0, 0)
	if len(lines) != 4 || after != 5 || toolAfter != 2 {
		t.Errorf("full page: %d lines after %d/%d", len(lines), after, toolAfter)
	}
}

// A turn keeps each call once with its last status, in start order, at
// most rpc.MaxResultToolCalls of them, each input bounded by
// rpc.MaxResultToolInput.
func TestTurnKeepsBoundedCalls(t *testing.T) {
	var l Log
	var turn Turn
	note := func(tc harness.ToolCall) {
		turn.Note(l.Add("u", "s", 1, 1, &tc), &tc)
	}
	big := `{"command":"` + strings.Repeat("é", rpc.MaxResultToolInput) + `"}`
	note(harness.ToolCall{ID: "a", Name: "Bash", Command: "x", Phase: harness.ToolStarted, Input: json.RawMessage(big)})
	note(harness.ToolCall{ID: "b", Name: "Read", Phase: harness.ToolStarted, Input: json.RawMessage(`{"path": "f"}`)})
	note(harness.ToolCall{ID: "a", Name: "Bash", Phase: harness.ToolFailed, Error: "exit 1"})
	note(harness.ToolCall{ID: "c", Name: "Edit", Phase: harness.ToolCompleted}) // its start came before the turn
	calls, cut := turn.Calls()
	if cut || len(calls) != 3 {
		t.Fatalf("calls %+v cut %v", calls, cut)
	}
	a, b, c := calls[0], calls[1], calls[2]
	var s string
	if a.ID != "a" || a.Tool != "Bash" || a.Command != "x" || a.Status != rpc.ToolStatusFailed || a.Error != "exit 1" ||
		!a.InputTruncated || json.Unmarshal(a.Input, &s) != nil || len(s) > rpc.MaxResultToolInput || !strings.HasPrefix(big, s) {
		t.Errorf("a %+v (%d bytes of input)", a, len(s))
	}
	if b.ID != "b" || b.Status != rpc.ToolStatusStarted || string(b.Input) != `{"path":"f"}` || b.InputTruncated {
		t.Errorf("b %+v", b)
	}
	if c.ID != "c" || c.Status != rpc.ToolStatusCompleted {
		t.Errorf("c %+v", c)
	}
	for i := 0; i < rpc.MaxResultToolCalls; i++ {
		note(harness.ToolCall{ID: fmt.Sprint("n", i), Name: "Bash", Phase: harness.ToolStarted})
	}
	calls, cut = turn.Calls()
	if !cut || len(calls) != rpc.MaxResultToolCalls || calls[0].ID != "a" {
		t.Errorf("%d calls kept, cut %v", len(calls), cut)
	}
	var empty Turn
	if calls, cut := empty.Calls(); calls != nil || cut {
		t.Errorf("an empty turn has %v, %v", calls, cut)
	}
}
