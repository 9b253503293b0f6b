package daemon

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

var agentPendingRe = regexp.MustCompile(`"pending_id": "(prq_[0-9a-f]+)"`)

// respondLeaderPlan scripts the leader's model: delegate with the
// person's asking profile, wait until wait reports the counterpart's
// pending request, answer it with respond (decision, and message for a
// deny) using exactly the arguments wait named, wait for the result, stop,
// and report what the counterpart said.
func respondLeaderPlan(harness, decision, message string) func([]string) (*mockapi.ToolCall, string) {
	tool := func(name string, in map[string]any) *mockapi.ToolCall {
		return &mockapi.ToolCall{Name: "mcp__dlgt__" + name, Input: in}
	}
	return func(results []string) (*mockapi.ToolCall, string) {
		if len(results) == 0 {
			return tool("delegate", map[string]any{"harness": harness, "profile": "ask", "prompt": "COUNTERPART-TASK run it", "request_id": "leader-ask-1", "title": "asks"}), ""
		}
		session, cursor := lastMatch(agentSessionRe, results[0]), lastMatch(agentCursorRe, results[0])
		answered := false
		for _, r := range results[1:] {
			if c := lastMatch(agentCursorRe, r); c != "" {
				cursor = c
			}
			if strings.Contains(r, "Execution 1 completed") || strings.Contains(r, "Execution 1 interrupted") {
				if strings.Contains(results[len(results)-1], "Stopped") {
					return nil, "LEADER-DONE " + grab(results, "AFTER-TOOL")
				}
				return tool("stop", map[string]any{"session": session}), ""
			}
			if strings.HasPrefix(r, "Allowed pending request") || strings.HasPrefix(r, "Denied pending request") {
				answered = true
			}
		}
		last := results[len(results)-1]
		if p := lastMatch(agentPendingRe, last); p != "" && !answered {
			in := map[string]any{"session": session, "pending_id": p, "decision": decision}
			if message != "" {
				in["message"] = message
			}
			return tool("respond", in), ""
		}
		return tool("wait", map[string]any{"session": session, "cursor": cursor}), ""
	}
}

// TestAgentsClaudeLeadsClaudeRespondMCP: a real Claude Code leader, its
// model scripted, delegates through MCP with a profile the person wrote
// (auto_approve = false, permission-mode=default) to a real Claude Code
// counterpart, which asks to run a command; the leader reads the question
// in wait and answers it with the respond tool. Allow: the command runs
// and the turn completes. Deny with a message: the counterpart's model
// receives the message and the command never runs.
func TestAgentsClaudeLeadsClaudeRespondMCP(t *testing.T) {
	for _, tc := range []struct{ decision, message string }{{"allow", ""}, {"deny", "not here: use the sandbox"}} {
		t.Run(tc.decision, func(t *testing.T) {
			counterpartRule := mockapi.Contains("COUNTERPART-TASK", mockapi.Reply{Tool: "touch dlgt-agents-marker", Text: "AFTER-TOOL"})
			r := newAgentRigScript(t, "claude", mockapi.Script{counterpartRule})
			profiles := filepath.Join(t.TempDir(), "profiles.toml")
			if err := os.WriteFile(profiles, []byte("[profiles.ask]\nharness = \"claude\"\nharness_options = [\"permission-mode=default\"]\nauto_approve = false\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Both Claudes talk to one mock: the MCP server launches the
			// counterpart with the leader's environment (its
			// ANTHROPIC_BASE_URL).
			leader, lenv := e2eClaudeEnv(t, mockapi.Script{
				mockapi.Prefix("LEADER-TASK", mockapi.Reply{Agent: respondLeaderPlan("claude", tc.decision, tc.message)}), counterpartRule,
			})
			for k, v := range r.env {
				if _, ok := lenv[k]; !ok || k == "PATH" {
					lenv[k] = v
				}
			}
			lenv["DLGT_PROFILES"] = profiles
			args := append([]string{"-p", "LEADER-TASK: delegate to claude", "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
			out := r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)
			if !strings.Contains(out, "LEADER-DONE AFTER-TOOL") {
				var seen []string
				for _, q := range leader.Requests() {
					seen = append(seen, q.ToolResults...)
				}
				t.Fatalf("leader output:\n%s\nits tool results:\n%s", out, strings.Join(seen, "\n---\n"))
			}
			if n := leaderSawResult(leader, `call respond with {"session": "claude:`); n < 1 {
				t.Fatal("no wait result told the leader how to respond")
			}
			_, err := os.Stat(filepath.Join(r.cwd, "dlgt-agents-marker"))
			var toolResults []string
			for _, q := range leader.Requests() {
				if q.Kind == mockapi.KindToolResult && strings.Contains(q.Prompt, "COUNTERPART-TASK") {
					toolResults = append(toolResults, q.ToolResults...)
				}
			}
			switch tc.decision {
			case "allow":
				if err != nil {
					t.Fatalf("the allowed command did not run: %v", err)
				}
			case "deny":
				if err == nil {
					t.Fatal("the denied command ran")
				}
				if !strings.Contains(strings.Join(toolResults, "\n"), tc.message) {
					t.Fatalf("the counterpart's model did not receive the denial: %q", toolResults)
				}
			}
		})
	}
}

// TestAgentsClaudeLeadsGeminiRespondMCP: a real Claude Code leader, its
// model scripted, delegates through MCP with an asking profile
// (auto_approve = false) to a real Gemini CLI counterpart, which asks to
// run a command; the leader reads the request in wait and answers it with
// the respond tool, the way wait told it. Allow: the command runs and the
// turn completes. Deny (no message: Gemini's box takes none): the command
// never runs, the counterpart's model gets no tool result, and the turn
// ends interrupted.
func TestAgentsClaudeLeadsGeminiRespondMCP(t *testing.T) {
	for _, decision := range []string{"allow", "deny"} {
		t.Run(decision, func(t *testing.T) {
			r := newAgentRigScript(t, "gemini", mockapi.Script{
				mockapi.Contains("COUNTERPART-TASK", mockapi.Reply{Tool: "touch dlgt-agents-marker", Text: "AFTER-TOOL"}),
			})
			profiles := filepath.Join(t.TempDir(), "profiles.toml")
			if err := os.WriteFile(profiles, []byte("[profiles.ask]\nharness = \"gemini\"\nauto_approve = false\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			leader, lenv := r.claudeLeader(t, respondLeaderPlan("gemini", decision, ""))
			lenv["DLGT_PROFILES"] = profiles
			args := append([]string{"-p", "LEADER-TASK: delegate to gemini", "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
			out := r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)
			var seen []string
			for _, q := range leader.Requests() {
				seen = append(seen, q.ToolResults...)
			}
			all := strings.Join(seen, "\n---\n")
			want := map[string]string{"allow": "LEADER-DONE AFTER-TOOL", "deny": "LEADER-DONE missing"}[decision]
			if !strings.Contains(out, want) {
				t.Fatalf("leader output (want %q):\n%s\nits tool results:\n%s", want, out, all)
			}
			if n := leaderSawResult(leader, `call respond with {"session": "gemini:`); n < 1 {
				t.Fatal("no wait result told the leader how to respond")
			}
			_, err := os.Stat(filepath.Join(r.cwd, "dlgt-agents-marker"))
			toolResult := false
			for _, q := range r.cp.Requests() {
				toolResult = toolResult || (q.Kind == mockapi.KindToolResult && strings.Contains(q.Prompt, "COUNTERPART-TASK"))
			}
			switch decision {
			case "allow":
				if err != nil || !toolResult {
					t.Fatalf("the allowed command did not run (%v) or the model never got its result (%v)", err, toolResult)
				}
			case "deny":
				if err == nil || toolResult {
					t.Fatalf("the denied command ran (%v), or the model got a tool result (%v)", err == nil, toolResult)
				}
				if !strings.Contains(all, "Execution 1 interrupted") {
					t.Fatalf("the leader was not told the turn ended interrupted:\n%s", all)
				}
			}
		})
	}
}
