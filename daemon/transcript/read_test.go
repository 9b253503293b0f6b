package transcript

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
)

// The reply is read from where the transcript stood when the execution
// started: the same prompt answered earlier is not this turn's reply; a
// transcript shorter than that offset (replaced) is read whole; a missing
// one gives nothing.
func TestReadReplyFromTheExecutionsStart(t *testing.T) {
	const earlier = `{"type":"user","message":{"role":"user","content":"again"}}
{"type":"assistant","message":{"role":"assistant","content":"OLD"}}
`
	const turn = `{"type":"user","message":{"role":"user","content":"again"}}
`
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(earlier+turn), 0o600); err != nil {
		t.Fatal(err)
	}
	from := int64(len(earlier))
	if text, ok := ReadReply(harness.Claude{}, path, from, "again"); ok {
		t.Fatalf("the earlier turn's reply %q taken for this one", text)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"assistant","message":{"role":"assistant","content":"NEW"}}` + "\n")
	f.Close()
	if text, ok := ReadReply(harness.Claude{}, path, from, "again"); !ok || text != "NEW" {
		t.Fatalf("got %q %v, want NEW", text, ok)
	}
	if text, ok := ReadReply(harness.Claude{}, path, 1<<20, "again"); !ok || text != "NEW" {
		t.Fatalf("a replaced transcript: got %q %v, want NEW", text, ok)
	}
	if _, ok := ReadReply(harness.Claude{}, filepath.Join(t.TempDir(), "none.jsonl"), 0, "again"); ok {
		t.Fatal("a missing transcript gave a reply")
	}
}

// The decision a Stop hook waits on for usage: only a turn the transcript
// shows started and not ended (TurnOpen) is waited for.
func TestReadTurnOpen(t *testing.T) {
	const turn = "6c6e35e5-eaed-4c79-b0d5-ef1f322f7bc5"
	line := func(m map[string]any) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	prompt := func(id string) string {
		return line(map[string]any{"type": "user", "promptId": id, "uuid": "u-" + id, "message": map[string]any{"role": "user", "content": "hi"}})
	}
	reply := func(id, stop string) string {
		return line(map[string]any{"type": "assistant", "uuid": "a-" + id, "message": map[string]any{
			"id": "msg_" + id, "model": "claude-opus-5-5", "stop_reason": stop,
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 2},
		}})
	}
	earlier := prompt("earlier") + reply("earlier", "end_turn")
	dir := t.TempDir()
	cases := []struct {
		name   string
		text   string
		from   int64
		turnID string
		src    harness.UsageSource
		want   bool
	}{
		{"prompt written, end not", earlier + prompt(turn), int64(len(earlier)), turn, harness.Claude{}, true},
		{"prompt written, no turn id", earlier + prompt(turn), int64(len(earlier)), "", harness.Claude{}, true},
		{"after a tool call", prompt(turn) + reply(turn, "tool_use"), 0, turn, harness.Claude{}, true},
		{"nothing of the turn", earlier, int64(len(earlier)), turn, harness.Claude{}, false},
		{"the turn since the start under another id", earlier + prompt(turn), int64(len(earlier)), "stale", harness.Claude{}, true},
		{"only another turn", earlier, 0, turn, harness.Claude{}, false},
		{"empty transcript", "", 0, turn, harness.Claude{}, false},
		{"end written", prompt(turn) + reply(turn, "end_turn"), 0, turn, harness.Claude{}, false},
		{"shorter than the start (replaced)", prompt(turn), 1 << 20, turn, harness.Claude{}, false},
		{"codex, turn started", `{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}` + "\n", 0, "t1", harness.Codex{}, false},
	}
	for i, c := range cases {
		path := filepath.Join(dir, fmt.Sprintf("t%d.jsonl", i))
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, st, _ := ReadTurn(c.src, path, c.from, c.turnID, c.from > 0); (st == harness.TurnOpen) != c.want {
			t.Errorf("%s: waits %v (turn %v), want %v", c.name, !c.want, st, c.want)
		}
	}
	if _, st, _ := ReadTurn(harness.Claude{}, filepath.Join(dir, "missing.jsonl"), 0, turn, true); st != harness.TurnUnseen {
		t.Error("no transcript file: waits, want not")
	}
}
