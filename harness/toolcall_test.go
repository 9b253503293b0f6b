package harness

import (
	"encoding/json"
	"testing"
)

// Tool hooks as the pinned CLIs send them (Claude Code 2.1.332 and Codex
// 0.171.0 captured against the mock model; Gemini CLI 0.61.0 from its
// TUI), cut to the fields that matter.
func TestParseHookToolCalls(t *testing.T) {
	cases := []struct {
		h                         Harness
		event, payload            string
		id, name, phase, cmd, out string
		errText                   string
	}{
		{Claude{}, "PreToolUse", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo probe > probe.txt","description":"write probe file"},"tool_use_id":"toolu_8a34"}`,
			"toolu_8a34", "Bash", ToolStarted, "echo probe > probe.txt", "", ""},
		{Claude{}, "PostToolUse", `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"echo probe > probe.txt"},"tool_response":{"stdout":"","stderr":"","interrupted":false},"tool_use_id":"toolu_8a34","duration_ms":56}`,
			"toolu_8a34", "Bash", ToolCompleted, "echo probe > probe.txt", `{"stdout":"","stderr":"","interrupted":false}`, ""},
		{Claude{}, "PostToolUseFailure", `{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"echo oops >&2; exit 3"},"tool_use_id":"toolu_m2","error":"Exit code 3\noops","is_interrupt":false,"duration_ms":253}`,
			"toolu_m2", "Bash", ToolFailed, "echo oops >&2; exit 3", "", "Exit code 3\noops"},
		{Codex{}, "PreToolUse", `{"session_id":"t","turn_id":"u","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo probe > probe.txt"},"tool_use_id":"call_654d"}`,
			"call_654d", "Bash", ToolStarted, "echo probe > probe.txt", "", ""},
		{Codex{}, "PostToolUse", `{"session_id":"t","turn_id":"u","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"echo probe > probe.txt"},"tool_response":"","tool_use_id":"call_654d"}`,
			"call_654d", "Bash", ToolCompleted, "echo probe > probe.txt", `""`, ""},
		{Gemini{}, "BeforeTool", `{"session_id":"g","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"echo approve-me > approved.txt","description":"mock command"}}`,
			"", "run_shell_command", ToolStarted, "echo approve-me > approved.txt", "", ""},
		{Gemini{}, "AfterTool", `{"session_id":"g","hook_event_name":"AfterTool","tool_name":"run_shell_command","tool_input":{"command":"echo a"},"tool_response":{"llmContent":"<untrusted_context>\nOutput: (empty)\n</untrusted_context>","returnDisplay":[[{"text":" "}]]}}`,
			"", "run_shell_command", ToolCompleted, "echo a", `"<untrusted_context>\nOutput: (empty)\n</untrusted_context>"`, ""},
		{Gemini{}, "AfterTool", `{"session_id":"g","hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{"path":"x"},"tool_response":{"llmContent":"","error":{"message":"File not found","type":"FILE_NOT_FOUND"}}}`,
			"", "read_file", ToolFailed, "", `""`, "File not found"},
	}
	for _, c := range cases {
		ev, err := c.h.ParseHook(c.event, []byte(c.payload))
		if err != nil || ev.Kind != KindActivity || ev.ToolCall == nil {
			t.Fatalf("%s %s: %+v, %v", c.h.Name(), c.event, ev, err)
		}
		tc := ev.ToolCall
		if tc.ID != c.id || tc.Name != c.name || tc.Phase != c.phase || tc.Command != c.cmd || string(tc.Output) != c.out || tc.Error != c.errText || !json.Valid(tc.Input) {
			t.Errorf("%s %s: %+v (output %s)", c.h.Name(), c.event, tc, tc.Output)
		}
	}
}
