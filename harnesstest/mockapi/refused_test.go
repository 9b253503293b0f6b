package mockapi_test

import (
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

// After a tool call each CLI refused (the results as the pinned CLIs send
// them: Claude Code's is_error deny message, Codex's Rejected(…), Gemini
// CLI's "Tool execution blocked: …") a rule with Refused says so, with the
// reason; a result of a command that ran, failed or not, gets Text; a rule
// without Refused gets Text either way.
func TestRefusedToolCallReply(t *testing.T) {
	script := mockapi.Script{
		mockapi.Prefix("USE-TOOL", mockapi.Reply{Tool: "date > now.txt", Text: "WROTE", Refused: "DID NOT WRITE"}),
		mockapi.Prefix("PLAIN", mockapi.Reply{Tool: "date > now.txt", Text: "WROTE"}),
	}
	type result struct {
		name    string
		refused bool
		want    string
	}
	anthropic := mockapi.NewAnthropic(t, script)
	responses := mockapi.NewResponses(t, script)
	gemini := mockapi.NewGemini(t, script)
	for _, kind := range []struct {
		name    string
		srv     *mockapi.Server
		results map[string]any // the result's text -> the CLI's wire form
		reply   func(prompt string, result any) string
	}{
		{"anthropic", anthropic, map[string]any{
			"refused": map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "not in this repository\nsecond line", "is_error": true},
			"failed":  map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "Exit code 1\ndate: cannot write", "is_error": true},
			"ran":     map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "(Bash completed with no output)"},
		}, func(prompt string, r any) string {
			return anthropicText(stream(t, anthropic.URL()+"/v1/messages?beta=true", claudeBody(prompt,
				map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{}}}},
				map[string]any{"role": "user", "content": []any{r}})))
		}},
		{"responses", responses, map[string]any{
			"refused": `exec_command failed: CreateProcess { message: "Rejected(\"not in this repository\nsecond line\")" }`,
			"failed":  "Chunk ID: 1\nProcess exited with code 1\nOutput:\ndate: cannot write\n",
			"ran":     "Chunk ID: 1\nProcess exited with code 0\nOutput:\n",
		}, func(prompt string, r any) string {
			return responsesText(stream(t, responses.URL()+"/v1/responses", codexBody(prompt,
				map[string]any{"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": "c1", "output": r})))
		}},
		{"gemini", gemini, map[string]any{
			"refused": map[string]any{"error": "Tool execution blocked: not in this repository\nsecond line"},
			"failed":  map[string]any{"output": "Output: date: cannot write\nExit Code: 1"},
			"ran":     map[string]any{"output": "Output: (empty)"},
		}, func(prompt string, r any) string {
			chunks := geminiStream(t, gemini.URL(), geminiBody(prompt,
				map[string]any{"role": "model", "parts": []map[string]any{{"functionCall": map[string]any{"name": "run_shell_command"}}}},
				map[string]any{"role": "user", "parts": []map[string]any{{"functionResponse": map[string]any{"name": "run_shell_command", "response": r}}}}))
			var text strings.Builder
			for _, c := range chunks {
				for _, p := range parts(c) {
					if s, ok := get(p, "text").(string); ok {
						text.WriteString(s)
					}
				}
			}
			return text.String()
		}},
	} {
		for _, r := range []result{
			{"refused", true, "DID NOT WRITE: not in this repository"},
			{"failed", false, "WROTE"},
			{"ran", false, "WROTE"},
		} {
			if got := kind.reply("USE-TOOL now", kind.results[r.name]); got != r.want {
				t.Errorf("%s, %s: %q, want %q", kind.name, r.name, got, r.want)
			}
			reqs := kind.srv.Requests()
			if last := reqs[len(reqs)-1]; last.Kind != mockapi.KindToolResult || last.Refused != r.refused {
				t.Errorf("%s, %s: recorded as %s, Refused %v", kind.name, r.name, last.Kind, last.Refused)
			}
			if got := kind.reply("PLAIN now", kind.results[r.name]); got != "WROTE" {
				t.Errorf("%s, %s, no Refused in the rule: %q", kind.name, r.name, got)
			}
		}
	}
}
