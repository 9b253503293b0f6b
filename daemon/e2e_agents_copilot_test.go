package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

// GitHub Copilot CLI leading and being led over `dlgt mcp` (issue 45):
// the real CLIs against their mock models, as e2e_agents_test.go.

func TestAgentsClaudeLeadsCopilotMCP(t *testing.T) {
	r := newAgentRig(t, "copilot")
	leader, lenv := r.claudeLeader(t, mcpLeaderPlan("copilot"))
	logLeaderOnFailure(t, leader)
	args := append([]string{"-p", "LEADER-TASK: delegate to copilot", "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
	out := r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)
	r.checkDelegation(t, leader, out)
}

func TestAgentsCopilotLeadsClaudeMCP(t *testing.T) {
	r := newAgentRig(t, "claude")
	// Copilot CLI 1.0.102 does not pass ANTHROPIC_API_KEY on to a local
	// MCP server (without this the counterpart failed "Not logged in"),
	// as Gemini CLI: the counterpart Claude Code gets its key from its
	// own settings.
	claudeKeyHelper(t, r.home)
	leader, lenv := r.copilotLeader(t, mcpLeaderPlan("claude"))
	// No permission flag but --approve's --allow-tool dlgt: without it
	// copilot -p refuses dlgt-delegate (no one to ask).
	args := append([]string{"-p", "LEADER-TASK: delegate to claude", "--no-auto-update"}, r.mcpArgs(t, "copilot")...)
	out := r.runLeader(t, lenv, e2eCopilotBin(t), args...)
	r.checkDelegation(t, leader, out)
}

// copilotLeader starts the leader Copilot's mock, scripted by agent, and
// returns it with the leader's environment: the rig's, with a Copilot home
// of its own (COPILOT_HOME, trusting the project's folder) and a model
// provider pointed at that mock.
func (r *agentRig) copilotLeader(t *testing.T, agent func([]string) (*mockapi.ToolCall, string)) (*mockapi.Server, map[string]string) {
	t.Helper()
	leader := mockapi.NewAnthropic(t, mockapi.Script{mockapi.Prefix("LEADER-TASK", mockapi.Reply{Agent: agent})})
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(copilotUserConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	lenv := map[string]string{}
	for k, v := range r.env {
		lenv[k] = v
	}
	lenv["COPILOT_HOME"] = home
	lenv["COPILOT_PROVIDER_TYPE"], lenv["COPILOT_PROVIDER_BASE_URL"] = "anthropic", leader.URL()
	lenv["COPILOT_PROVIDER_API_KEY"], lenv["COPILOT_MODEL"], lenv["COPILOT_OFFLINE"] = "mock-key", "claude-sonnet-4.5", "true"
	logLeaderOnFailure(t, leader)
	return leader, lenv
}

// logLeaderOnFailure logs how many requests the leader's model got and,
// should t fail, the first and last tool results it got: what dlgt
// answered the leader.
func logLeaderOnFailure(t *testing.T, leader *mockapi.Server) {
	t.Cleanup(func() {
		reqs := leader.Requests()
		t.Logf("the leader's model got %d requests (at most %d tool calls in a turn)", len(reqs), mockapi.MaxAgentSteps)
		if !t.Failed() || len(reqs) == 0 {
			return
		}
		results := reqs[len(reqs)-1].ToolResults
		for i, res := range results {
			if i < 4 || i >= len(results)-2 {
				t.Logf("tool result %d: %s", i, clipForLog(res))
			}
		}
	})
}

func clipForLog(s string) string {
	if len(s) > 4000 {
		return s[:2000] + " … " + s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}
