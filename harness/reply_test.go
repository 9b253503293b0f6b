package harness

import (
	"strings"
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
	if text, ok := (Codex{}).LastReply(strings.NewReader(lines), "second\nprompt"); !ok || text != "REPLY-2" {
		t.Fatalf("got %q %v", text, ok)
	}
	if _, ok := (Codex{}).LastReply(strings.NewReader(lines), "never sent"); ok {
		t.Fatal("recovered text for a prompt that is not in the rollout")
	}
}

// A Claude Code transcript: the last assistant text after the prompt's
// user entry, text blocks joined; a reply to an earlier prompt is not it.
func TestClaudeLastReply(t *testing.T) {
	lines := `{"type":"user","message":{"role":"user","content":"first"}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ONE"}]}}
{"type":"user","message":{"role":"user","content":"second  \r\n"}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","name":"x"}]}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"TWO"},{"type":"text","text":"lines"}]}}
`
	if text, ok := (Claude{}).LastReply(strings.NewReader(lines), "second"); !ok || text != "TWO\nlines" {
		t.Fatalf("got %q %v", text, ok)
	}
	if _, ok := (Claude{}).LastReply(strings.NewReader(""), "second"); ok {
		t.Fatal("an empty transcript gave a reply")
	}
	for _, h := range []ReplyReader{Claude{}, Codex{}, Gemini{}, Copilot{}} {
		if _, ok := h.LastReply(strings.NewReader(lines), "never sent"); ok {
			t.Errorf("%T: a reply for a prompt that is not in the transcript", h)
		}
	}
}

func TestPromptMatches(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{
		{"a\r\nb ", "a\nb", true},
		{"a\rb", "a\nb", true},
		{"a b", "a\nb", false},
	} {
		if PromptMatches(tc.got, tc.want) != tc.ok {
			t.Errorf("PromptMatches(%q, %q) = %v", tc.got, tc.want, !tc.ok)
		}
	}
}
