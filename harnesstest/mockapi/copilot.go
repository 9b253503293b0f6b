package mockapi

import (
	"encoding/json"
	"strings"
)

// GitHub Copilot CLI 1.0.102 with COPILOT_PROVIDER_TYPE=anthropic speaks the
// Messages API that NewAnthropic serves, with two differences the server
// handles here:
//
//   - the user's text reaches the model in one text block prefixed with
//     "<current_datetime>…</current_datetime>" and a blank line (its
//     session log keeps the prompt as typed beside this transformed form);
//   - a call refused (by a person or a permissionRequest hook) comes back as
//     a plain tool_result, not an error one, reading "Permission denied …";
//   - its shell tool is named "bash" (Claude Code's is "Bash"), so a
//     scripted shell call names whichever of the two the request offers.

// copilotDatetime opens the block Copilot CLI puts before a prompt.
const (
	copilotDatetimeOpen  = "<current_datetime>"
	copilotDatetimeClose = "</current_datetime>\n\n"
)

// stripCopilotDatetime returns text without Copilot CLI's leading
// "<current_datetime>…</current_datetime>\n\n", or text as it is.
func stripCopilotDatetime(text string) string {
	if !strings.HasPrefix(text, copilotDatetimeOpen) {
		return text
	}
	_, rest, ok := strings.Cut(text, copilotDatetimeClose)
	if !ok {
		return text
	}
	return rest
}

// shellToolName is the name of the shell tool the request offers: "bash"
// for Copilot CLI (which has no "Bash"), else Claude Code's "Bash".
func shellToolName(tools []json.RawMessage) string {
	lower := false
	for _, name := range toolNames(tools) {
		switch name {
		case "Bash":
			return "Bash"
		case "bash":
			lower = true
		}
	}
	if lower {
		return "bash"
	}
	return "Bash"
}

// toolNames are the names of a request's tools.
func toolNames(tools []json.RawMessage) []string {
	var out []string
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil {
			out = append(out, t.Name)
		}
	}
	return out
}

// copilotRefused reports whether a tool result is Copilot CLI's refusal
// ("Permission denied by a PermissionRequest hook: <reason>", or by the
// person at its dialog).
func copilotRefused(text string) bool { return strings.HasPrefix(text, "Permission denied") }

// mcpToolName is the name the request's tools give the MCP tool name
// ("mcp__<server>__<tool>", Claude Code's form): that name when offered,
// else Copilot CLI's "<server>-<tool>" when offered, else name as it is.
func mcpToolName(tools []json.RawMessage, name string) string {
	ns, tool, ok := splitMCP(name)
	if !ok {
		return name
	}
	copilot := strings.TrimPrefix(ns, "mcp__") + "-" + tool
	found := false
	for _, n := range toolNames(tools) {
		switch n {
		case name:
			return name
		case copilot:
			found = true
		}
	}
	if found {
		return copilot
	}
	return name
}
