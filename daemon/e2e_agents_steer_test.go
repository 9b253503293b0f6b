package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A real leader CLI (Claude Code, its mock model scripted to call dlgt's
// MCP tools) steers and queues on a busy counterpart Session through the
// send tool: the steer reaches the counterpart's next model request of
// the running turn, whose result is that turn's; the queued prompt
// becomes the next execution with a result of its own after it.
//
//	go test -race -count=1 -run 'TestAgentsClaudeSteersMCP' ./daemon/

const (
	steerLeaderTask = "LEADER-TASK: delegate, then steer and queue"
	leaderSteerText = "STEER-ME now"
	leaderQueueText = "QUEUED-NEXT please"
)

var executionRe = regexp.MustCompile(`execution ([0-9]+), submission`)

// steerLeaderPlan scripts the leader's model: delegate the STEER-TURN
// task through the profile "counterpart" in dir; once the counterpart's
// tool runs (its "started" file), send a steer; wait for execution 1's
// result; send the QUEUE-TURN task and, once its tool runs, queue the
// next one; wait for both results; stop; answer with the final texts
// (steered: the steered turn's).
// Stateless: the step is read off the results. Waiting for a file is the
// model noticing that its counterpart is at work.
func steerLeaderPlan(dir, steered string) func([]string) (*mockapi.ToolCall, string) {
	tool := func(name string, in map[string]any) *mockapi.ToolCall {
		return &mockapi.ToolCall{Name: "mcp__dlgt__" + name, Input: in}
	}
	return func(results []string) (*mockapi.ToolCall, string) {
		i := 0
		// step returns the next result, or false when the call that
		// yields it is still to be made.
		step := func() (string, bool) {
			if i == len(results) {
				return "", false
			}
			i++
			return results[i-1], true
		}
		delegated, ok := step()
		if !ok {
			return tool("delegate", map[string]any{"profile": "counterpart", "cwd": dir,
				"prompt": "STEER-TURN run the tool", "request_id": "lead-steer-1", "title": "steer e2e"}), ""
		}
		session := lastMatch(agentSessionRe, delegated)
		if session == "" {
			return nil, "LEADER-FAILED delegate: " + delegated
		}
		// waitFor calls wait from cursor until execution seq's result.
		waitFor := func(seq int, cursor string) *mockapi.ToolCall {
			done := fmt.Sprintf("Execution %d completed", seq)
			for {
				r, ok := step()
				if !ok {
					return tool("wait", map[string]any{"session": session, "cursor": cursor})
				}
				if strings.Contains(r, done) {
					return nil
				}
				if c := lastMatch(agentCursorRe, r); c != "" {
					cursor = c
				}
			}
		}
		// send sends prompt to the Session once file exists (steer or
		// queue true in kind), and returns the receipt's text.
		send := func(file, prompt, reqID, kind string) (*mockapi.ToolCall, string) {
			r, ok := step()
			if ok {
				return nil, r
			}
			in := map[string]any{"session": session, "prompt": prompt, "request_id": reqID}
			if file != "" {
				if !pollFile(filepath.Join(dir, file), lifecycleGuard) {
					return nil, "LEADER-FAILED " + file + " never appeared"
				}
			}
			if kind != "" {
				in[kind] = true
			}
			return tool("send", in), ""
		}
		if c, r := send("started", leaderSteerText, "lead-steer-2", "steer"); c != nil {
			return c, ""
		} else if !strings.Contains(r, "Steered the running execution") {
			return nil, "LEADER-FAILED steer: " + r
		}
		if c := waitFor(1, lastMatch(agentCursorRe, delegated)); c != nil {
			return c, ""
		}
		c, next := send("", "QUEUE-TURN again", "lead-queue-1", "")
		if c != nil {
			return c, ""
		}
		c, queued := send("started2", leaderQueueText, "lead-queue-2", "queue")
		if c != nil {
			return c, ""
		}
		if !strings.Contains(queued, "Queued behind the running execution") || lastMatch(executionRe, queued) != "3" {
			return nil, "LEADER-FAILED queue: " + queued
		}
		if c := waitFor(2, lastMatch(agentCursorRe, next)); c != nil {
			return c, ""
		}
		if c := waitFor(3, lastMatch(agentCursorRe, queued)); c != nil {
			return c, ""
		}
		if _, ok := step(); !ok {
			return tool("stop", map[string]any{"session": session}), ""
		}
		return nil, "LEADER-DONE " + strings.Join([]string{grab(results, steered),
			grab(results, "QUEUE-FIRST-DONE"), grab(results, "QUEUED-DONE")}, " ")
	}
}

// pollFile reports whether path exists within d (for a mock's agent,
// which runs off the test's goroutine and must not fail the test).
func pollFile(path string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

func TestAgentsClaudeSteersMCP(t *testing.T) {
	for _, row := range steerRows {
		if !row.steers {
			continue
		}
		t.Run(row.name, func(t *testing.T) { runAgentsSteer(t, row) })
	}
}

func runAgentsSteer(t *testing.T, row steerRow) {
	r := newAgentRigScript(t, row.harness, steerScript)
	// The counterpart's launch comes from a profile, as a user gives it
	// (the delegate tool takes no harness options).
	profiles := filepath.Join(t.TempDir(), "profiles.toml")
	opts := ""
	if len(row.options) > 0 {
		opts = fmt.Sprintf("harness_options = [%q]\n", strings.Join(row.options, `", "`))
	}
	if row.harness == "claude" {
		// The leader is Claude Code too: its MCP server passes on the
		// leader's own model address, which the profile overrides.
		opts += fmt.Sprintf("[profiles.counterpart.environment]\nANTHROPIC_BASE_URL = %q\n", r.cp.URL())
	}
	if err := os.WriteFile(profiles, []byte(fmt.Sprintf("[profiles.counterpart]\nharness = %q\n%s", row.harness, opts)), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env["DLGT_PROFILES"] = profiles
	dir := t.TempDir()
	leader, lenv := r.claudeLeader(t, steerLeaderPlan(dir, row.steered))
	args := append([]string{"-p", steerLeaderTask, "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
	out := r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)

	// The leader's model read each step's receipt and result.
	want := "LEADER-DONE " + row.steered + " QUEUE-FIRST-DONE QUEUED-DONE"
	if !strings.Contains(out, want) {
		t.Fatalf("the leader's final output lacks %q:\n%s", want, out)
	}
	if n := leaderSawResult(leader, "Steered the running execution"); n != 1 {
		t.Errorf("%d tool results were steer receipts, want 1", n)
	}
	// The counterpart's model: the steer in the running turn's next
	// request, after the tool's result.
	steerCarrier(t, r.cp, row.toolOutput)
	n := 0
	for _, q := range r.cp.Requests() {
		if q.Kind == mockapi.KindPrompt && q.Prompt == leaderQueueText {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the queued prompt reached the counterpart's model %d times, want once", n)
	}
	// The daemon's record: one Session, three executions, the steered
	// one's result its turn's, the queued one's its own; stopped.
	sessions := r.td.hostileListAll(t)
	if len(sessions) != 1 {
		t.Fatalf("Sessions = %+v, want the one the leader delegated", sessions)
	}
	rd := r.td.read(t, sessions[0].ID)
	if rd.Session.State != rpc.StateStopped || rd.Result == nil || rd.Result.ExecutionSeq != 3 || len(rd.Session.Queued) != 0 {
		t.Errorf("after the leader's turn: state %s, last result %+v, queued %+v", rd.Session.State, rd.Result, rd.Session.Queued)
	}
}
