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

func TestAgentsClaudeLeadsCopilotMCP(t *testing.T) { testAgentsLeadsMCP(t, "claude", "copilot") }
func TestAgentsCopilotLeadsClaudeMCP(t *testing.T) { testAgentsLeadsMCP(t, "copilot", "claude") }
func TestAgentsCopilotLeadsCodexMCP(t *testing.T)  { testAgentsLeadsMCP(t, "copilot", "codex") }
func TestAgentsCopilotLeadsGeminiMCP(t *testing.T) { testAgentsLeadsMCP(t, "copilot", "gemini") }
func TestAgentsCodexLeadsCopilotMCP(t *testing.T)  { testAgentsLeadsMCP(t, "codex", "copilot") }
func TestAgentsGeminiLeadsCopilotMCP(t *testing.T) { testAgentsLeadsMCP(t, "gemini", "copilot") }

// A Copilot leader delegates through its shell tool (`bash`), as the
// skill tells an agent without the MCP tools: `copilot -p` with that tool
// allowed (--allow-tool shell) runs dlgt session create and fetch.
func TestAgentsCopilotLeadsCodexShell(t *testing.T) {
	r := newAgentRig(t, "codex")
	leader, lenv := r.copilotLeader(t, shellLeaderPlan(r.dlgt, "codex"))
	logLeaderOnFailure(t, leader)
	out := r.runLeader(t, lenv, e2eCopilotBin(t), "-p", "LEADER-TASK: delegate to codex by shell", "--no-auto-update", "--allow-tool", "shell")
	r.checkShellDelegation(t, leader, out)
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
	lenv := r.leaderEnv()
	lenv["COPILOT_HOME"] = home
	lenv["COPILOT_PROVIDER_TYPE"], lenv["COPILOT_PROVIDER_BASE_URL"] = "anthropic", leader.URL()
	lenv["COPILOT_PROVIDER_API_KEY"], lenv["COPILOT_MODEL"], lenv["COPILOT_OFFLINE"] = "mock-key", "claude-sonnet-4.5", "true"
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
