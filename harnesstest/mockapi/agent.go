package mockapi

import (
	"encoding/json"
	"strings"
)

// ToolCall is one tool call a scripted model makes (see Reply.Agent).
type ToolCall struct {
	// Name is the tool's name as the model calls it: a built-in such as
	// "Read", an MCP tool as "mcp__<server>__<tool>" (for example
	// "mcp__dlgt__delegate"), or ShellTool (use Shell).
	Name string
	// Input is the call's arguments.
	Input map[string]any
}

// ShellTool is the Name of a call made by Shell: each server turns it into
// the harness's own shell tool.
const ShellTool = "<shell>"

// Shell returns the harness's own shell tool call running cmd: Claude Code's
// Bash {"command": cmd}, Codex's exec_command {"cmd": cmd}.
func Shell(cmd string) ToolCall {
	return ToolCall{Name: ShellTool, Input: map[string]any{"command": cmd}}
}

// MaxAgentSteps bounds the tool calls an Agent may make in one turn: a
// request carrying this many tool results is answered with the final text
// the Agent returns, or an error text, never with another call.
const MaxAgentSteps = 64

// splitMCP splits "mcp__<server>__<tool>" into "mcp__<server>" and "<tool>".
// ok is false for any other name.
func splitMCP(name string) (namespace, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found {
		return "", "", false
	}
	server, tool, found := strings.Cut(rest, "__")
	if !found || server == "" || tool == "" {
		return "", "", false
	}
	return "mcp__" + server, tool, true
}

// agentStep asks reply.Agent for the next step given the turn's tool
// results. It returns the call to make, or nil and the final text.
func agentStep(reply Reply, prompt string, results []string) (*ToolCall, string) {
	next, final := reply.Agent(append([]string(nil), results...))
	if next != nil && len(results) >= MaxAgentSteps {
		next, final = nil, "mockapi: agent made more than MaxAgentSteps tool calls"
	}
	if next == nil && final == "" {
		final = DefaultText(prompt)
	}
	return next, final
}

// textOf returns the text of a tool result's content: a JSON string as is,
// or the text of every block/part in a list ("text", "input_text",
// "output_text") joined by newlines. Anything else gives "".
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
