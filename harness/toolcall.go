package harness

import (
	"encoding/json"
	"strings"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Tool call phases (ToolCall.Phase).
const (
	ToolStarted   = rpc.ToolStatusStarted   // PreToolUse, BeforeTool: the call is about to run
	ToolCompleted = rpc.ToolStatusCompleted // PostToolUse, AfterTool: it ran
	ToolFailed    = rpc.ToolStatusFailed    // PostToolUseFailure: it failed or was interrupted
)

// ToolCall is a tool the harness runs, as its hooks report it: the
// evidence behind an ACP tool_call. ID is the harness's own id of the
// call (Claude Code's and Codex's tool_use_id); Gemini CLI 0.61.0 gives
// none, and the daemon pairs its BeforeTool and AfterTool by name and
// input. Input and Output are the hook's JSON as received (unbounded
// here; the daemon bounds what it keeps).
type ToolCall struct {
	ID    string
	Name  string
	Phase string
	// Command is a shell tool's command line (clipped), else empty.
	Command string
	Input   json.RawMessage
	Output  json.RawMessage
	Error   string
}

// toolHook is the part of a tool hook's payload the tool call is read
// from (the three harnesses name these fields alike).
type toolHook struct {
	ToolName     string          `json:"tool_name"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolUseID    string          `json:"tool_use_id"`
	ToolResponse json.RawMessage `json:"tool_response"`
	Error        json.RawMessage `json:"error"`
	IsInterrupt  bool            `json:"is_interrupt"`
}

// parseToolCall reads the tool call of a tool hook in the given phase.
// The payload was already parsed as a JSON object by the caller.
func parseToolCall(phase string, payload []byte) *ToolCall {
	var h toolHook
	json.Unmarshal(payload, &h) // the caller has checked it is an object
	tc := &ToolCall{ID: h.ToolUseID, Name: h.ToolName, Phase: phase, Input: nonNull(h.ToolInput)}
	tc.Command = toolCommand(tc.Input)
	switch phase {
	case ToolCompleted:
		tc.Output = nonNull(h.ToolResponse)
	case ToolFailed:
		tc.Error = errorText(h.Error)
		if h.IsInterrupt && tc.Error == "" {
			tc.Error = "interrupted"
		}
	}
	return tc
}

// geminiToolOutput is what Gemini CLI's AfterTool reports the tool
// returned: the text given to the model (llmContent). returnDisplay is the
// TUI's rendering (for a shell, a grid of styled cells) and is left out.
func geminiToolOutput(tc *ToolCall) {
	var r struct {
		LLMContent json.RawMessage `json:"llmContent"`
		Error      json.RawMessage `json:"error"`
	}
	if len(tc.Output) == 0 || json.Unmarshal(tc.Output, &r) != nil {
		return
	}
	if e := errorText(r.Error); e != "" {
		tc.Phase, tc.Error = ToolFailed, e
	}
	if r.LLMContent != nil {
		tc.Output = nonNull(r.LLMContent)
	}
}

// errorText is an error field as text: a string as is, an object's
// message, else its compact JSON.
func errorText(raw json.RawMessage) string {
	raw = nonNull(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Message != "" {
		return m.Message
	}
	return strings.TrimSpace(string(raw))
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return nil
	}
	return raw
}
