package mockapi

import (
	"encoding/json"
	"testing"
)

// An Agent's MCP call in Claude Code's form ("mcp__dlgt__wait") is sent
// under the name the request offers: itself, or GitHub Copilot CLI's
// "dlgt-wait"; a name offered in neither form is sent as it is.
func TestMCPToolName(t *testing.T) {
	tools := func(names ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, n := range names {
			b, _ := json.Marshal(map[string]string{"name": n})
			out = append(out, b)
		}
		return out
	}
	for _, c := range []struct {
		offered   []string
		call, out string
	}{
		{[]string{"bash", "dlgt-wait"}, "mcp__dlgt__wait", "dlgt-wait"},
		{[]string{"Bash", "mcp__dlgt__wait", "dlgt-wait"}, "mcp__dlgt__wait", "mcp__dlgt__wait"},
		{[]string{"bash"}, "mcp__dlgt__wait", "mcp__dlgt__wait"},
		{[]string{"dlgt-wait"}, "view", "view"},
	} {
		if got := mcpToolName(tools(c.offered...), c.call); got != c.out {
			t.Errorf("offered %v, call %s: sent as %s, want %s", c.offered, c.call, got, c.out)
		}
	}
}
