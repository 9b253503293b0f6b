package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// A Codex rollout file (codex-cli 0.171.0 shape): the final text of the
// turn that carried the prompt is recovered when the Stop hook has none.
func TestCodexRecoverFromRollout(t *testing.T) {
	lines := `{"type":"session_meta","payload":{"id":"t1"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n</environment_context>"}]}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"first"}]}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"REPLY-1"}]}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"second\nprompt"}]}}
{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}"}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"REPLY-2"}]}}
{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":"REPLY-2"}}
`
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if text, ok := recoverFromTranscript(path, "second\nprompt"); !ok || text != "REPLY-2" {
		t.Fatalf("got %q %v", text, ok)
	}
	if _, ok := recoverFromTranscript(path, "never sent"); ok {
		t.Fatal("recovered text for a prompt that is not in the rollout")
	}
}

// The tail reads only complete lines appended after it started.
func TestTranscriptTailLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(path, []byte("old line\n"), 0o600)
	tl := &transcriptTail{path: path, offset: 9}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	f.WriteString("a\nb")
	if got := tl.read(); len(got) != 1 || string(got[0]) != "a" {
		t.Fatalf("got %q", got)
	}
	f.WriteString("c\n\nd\n")
	if got := tl.read(); len(got) != 2 || string(got[0]) != "bc" || string(got[1]) != "d" {
		t.Fatalf("got %q", got)
	}
}
