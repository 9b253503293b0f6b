package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

// Agents delegating to agents: a real leader CLI (claude -p or codex exec),
// whose mock model is scripted to call dlgt the way a model would, hands a
// task to a real counterpart CLI hosted by the daemon. The leader reaches
// the daemon through `dlgt mcp` (the built binary, spawned by the leader
// CLI) or through `dlgt` in its shell tool. Skipped only when a CLI is
// absent.

const (
	agentTask     = "COUNTERPART-TASK: say the magic words"
	agentAnswer   = "COUNTERPART-ANSWER-7f3a"
	agentFollowup = "COUNTERPART-FOLLOWUP: and once more"
	agentAnswer2  = "COUNTERPART-ANSWER-2-c41d"
	// agentWaitMax bounds one wait call; the counterpart's first turn is
	// scripted to last longer, so the leader must call wait again.
	agentWaitMax = "2s"
)

var (
	dlgtBinOnce sync.Once
	dlgtBinPath string
	dlgtBinErr  error
)

// dlgtBinary builds cmd/dlgt once per test process (without -race: it is
// what a user runs) and returns its path; cmd/dlgt-hook is built beside
// it, as README.md's build puts it (dlgtHookBinary).
func dlgtBinary(t testing.TB) string {
	t.Helper()
	dlgtBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dlgt-bin")
		if err != nil {
			dlgtBinErr = err
			return
		}
		dlgtBinPath = filepath.Join(dir, "dlgt")
		for _, pkg := range []string{"dlgt", "dlgt-hook"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, pkg), "github.com/dlgt-dev/dlgt/cmd/"+pkg)
			if out, err := cmd.CombinedOutput(); err != nil {
				dlgtBinErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if dlgtBinErr != nil {
		t.Fatal(dlgtBinErr)
	}
	return dlgtBinPath
}

// dlgtHookBinary is the stand-alone hook forwarder built beside
// dlgtBinary: the hook command of a daemon started from that dlgt.
func dlgtHookBinary(t testing.TB) string {
	return filepath.Join(filepath.Dir(dlgtBinary(t)), "dlgt-hook")
}

var (
	agentSessionRe = regexp.MustCompile(`Session ((?:claude|codex|gemini|copilot):[0-9a-f-]+)`)
	agentCursorRe  = regexp.MustCompile(`(?i)cursor[^"\n]*"([0-9]+)"`)
)

func lastMatch(re *regexp.Regexp, s string) string {
	all := re.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1][1]
}

// mcpLeaderPlan scripts the leader's model for one turn, from the tool
// results of the turn so far: delegate, delegate again with the same
// request_id (a retry after a lost response), wait until execution 1's
// result, send a follow-up, wait for it, stop the Session, then answer
// with both replies. Stateless: the step is read off the results.
func mcpLeaderPlan(harness string) func([]string) (*mockapi.ToolCall, string) {
	tool := func(name string, in map[string]any) *mockapi.ToolCall {
		return &mockapi.ToolCall{Name: "mcp__dlgt__" + name, Input: in}
	}
	delegate := tool("delegate", map[string]any{"harness": harness, "prompt": agentTask, "request_id": "leader-r1", "title": "agents e2e"})
	return func(results []string) (*mockapi.ToolCall, string) {
		if len(results) == 0 {
			return delegate, ""
		}
		session, cursor := lastMatch(agentSessionRe, results[0]), lastMatch(agentCursorRe, results[0])
		if len(results) == 1 {
			return delegate, "" // the retry
		}
		i := 2
		// waitFor calls wait until the result of execution seq is in.
		waitFor := func(seq int) (*mockapi.ToolCall, bool) {
			done := fmt.Sprintf("Execution %d completed", seq)
			for ; i < len(results); i++ {
				if c := lastMatch(agentCursorRe, results[i]); c != "" {
					cursor = c
				}
				if strings.Contains(results[i], done) {
					i++
					return nil, true
				}
			}
			return tool("wait", map[string]any{"session": session, "cursor": cursor}), false
		}
		if c, ok := waitFor(1); !ok {
			return c, ""
		}
		if i == len(results) {
			return tool("send", map[string]any{"session": session, "prompt": agentFollowup, "request_id": "leader-r2"}), ""
		}
		cursor = lastMatch(agentCursorRe, results[i])
		i++
		if c, ok := waitFor(2); !ok {
			return c, ""
		}
		if i == len(results) {
			return tool("stop", map[string]any{"session": session}), ""
		}
		return nil, "LEADER-DONE " + grab(results, agentAnswer) + " " + grab(results, agentAnswer2)
	}
}

// grab returns want when some result holds it, else "missing".
func grab(results []string, want string) string {
	for _, r := range results {
		if strings.Contains(r, want) {
			return want
		}
	}
	return "missing"
}

// agentRig is the counterpart side: an in-process daemon, the counterpart
// CLI's mock and environment, a process mark, and the built dlgt.
type agentRig struct {
	td   *testDaemon
	cp   *mockapi.Server // the counterpart's mock model
	env  map[string]string
	mark string
	dlgt string
	home string // HOME shared by leader and counterpart
	cwd  string // the leader's project
}

// counterpartScript answers the task slowly (longer than a wait call),
// and the follow-up at once.
func counterpartScript() mockapi.Script {
	return mockapi.Script{
		mockapi.Contains("COUNTERPART-TASK", mockapi.Reply{Text: "thinking… " + agentAnswer, Chunk: 1, Delay: 150 * time.Millisecond}),
		mockapi.Contains("COUNTERPART-FOLLOWUP", mockapi.Reply{Text: agentAnswer2}),
	}
}

// newAgentRig prepares the counterpart harness (claude or codex) on an
// in-process daemon.
func newAgentRig(t *testing.T, counterpart string) *agentRig {
	t.Helper()
	return newAgentRigScript(t, counterpart, counterpartScript())
}

// newAgentRigScript is newAgentRig with the counterpart's model scripted
// by script.
func newAgentRigScript(t *testing.T, counterpart string, script mockapi.Script) *agentRig {
	t.Helper()
	r := &agentRig{dlgt: dlgtBinary(t), cwd: gitRepo(t)}
	r.mark = "DLGT_E2E_AGENTS_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { noCodexLeft(t, r.mark, 10*time.Second) })
	r.cp, r.env = counterpartEnv(t, counterpart, script)
	name, val, _ := strings.Cut(r.mark, "=")
	r.env[name] = val
	r.home = r.env["HOME"]
	// The daemon's hooks run the forwarder a user's build runs: a hook's
	// cost is its process start, and the round trip timing counts it
	// (hyperfine, a hook that finds no socket: dlgt-hook 1.4 ms, this
	// test binary in its hook role 5.6 ms, 19.5 ms race-built).
	r.td = newTestDaemon(t, r.env)
	r.td.opts.HookCommand = []string{dlgtHookBinary(t)}
	r.td.start()
	t.Cleanup(r.td.stop)
	r.env["DLGT_SOCKET"] = r.td.paths.Socket
	r.env["PATH"] = filepath.Dir(r.dlgt) + ":" + os.Getenv("PATH")
	return r
}

// counterpartEnv starts the mock model of harness (claude, codex,
// gemini or copilot), scripted by script, and returns it with the client environment
// that runs the real CLI offline against it.
func counterpartEnv(t *testing.T, harness string, script mockapi.Script) (cp *mockapi.Server, env map[string]string) {
	t.Helper()
	switch harness {
	case "claude":
		return e2eClaudeEnv(t, script)
	case "copilot":
		return e2eCopilotEnv(t, script)
	case "gemini":
		bin := e2eGeminiBin(t)
		cp = mockapi.NewGemini(t, script)
		// The user's Gemini home, named by GEMINI_CLI_HOME: a leader
		// passes the variable on even where it sets HOME itself.
		gemHome := t.TempDir()
		if err := mockapi.WriteGeminiHome(gemHome); err != nil {
			t.Fatal(err)
		}
		env = map[string]string{
			"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "GEMINI_CLI_HOME": gemHome,
			"DLGT_GEMINI_BIN": bin, "TERM": "xterm-256color",
		}
		for _, kv := range mockapi.GeminiEnv(cp.URL()) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	case "codex":
		bin := e2eCodexBin(t)
		cp = mockapi.NewResponses(t, script)
		codexHome := t.TempDir()
		writeCodexConfig(t, codexHome, cp.URL())
		env = map[string]string{
			"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "CODEX_HOME": codexHome,
			"MOCK_API_KEY": "mock-key", "DLGT_CODEX_BIN": bin, "TERM": "xterm-256color",
		}
	}
	return cp, env
}

// mcpArgs is `dlgt mcp config` for harness, run as a user would.
func (r *agentRig) mcpArgs(t *testing.T, harness string, extra ...string) []string {
	t.Helper()
	args := append([]string{"mcp", "config", "--harness", harness, "--approve", "--wait-max", agentWaitMax}, extra...)
	out, err := exec.Command(r.dlgt, args...).Output()
	if err != nil {
		t.Fatalf("dlgt %v: %v", args, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// claudeLeader starts the leader Claude's mock, scripted by agent, and
// returns it with the leader's environment: its own HOME (holding its
// seeded .claude.json) and mock, the rig's PATH, and the counterpart's
// variables it does not set itself (the MCP server passes them on).
func (r *agentRig) claudeLeader(t *testing.T, agent func([]string) (*mockapi.ToolCall, string)) (*mockapi.Server, map[string]string) {
	t.Helper()
	leader, lenv := e2eClaudeEnv(t, mockapi.Script{mockapi.Prefix("LEADER-TASK", mockapi.Reply{Agent: agent})})
	for k, v := range r.env {
		if _, ok := lenv[k]; !ok || k == "PATH" {
			lenv[k] = v
		}
	}
	return leader, lenv
}

// leaderEnv is a copy of the rig's environment, for a leader to add its
// own model's variables to: the MCP server it starts passes the
// counterpart's on.
func (r *agentRig) leaderEnv() map[string]string {
	env := make(map[string]string, len(r.env))
	for k, v := range r.env {
		env[k] = v
	}
	return env
}

// codexLeader starts the leader Codex's mock, scripted by agent, and
// returns it with the leader's environment: the rig's, with a CODEX_HOME
// of its own pointed at that mock.
func (r *agentRig) codexLeader(t *testing.T, agent func([]string) (*mockapi.ToolCall, string)) (*mockapi.Server, map[string]string) {
	t.Helper()
	leader := mockapi.NewResponses(t, mockapi.Script{mockapi.Prefix("LEADER-TASK", mockapi.Reply{Agent: agent})})
	codexHome := t.TempDir()
	writeCodexConfig(t, codexHome, leader.URL())
	lenv := r.leaderEnv()
	lenv["CODEX_HOME"], lenv["MOCK_API_KEY"] = codexHome, "mock-key"
	return leader, lenv
}

// geminiLeader starts the leader Gemini's mock, scripted by agent, and
// returns it with the leader's environment: the rig's, with a Gemini home
// of its own (GEMINI_CLI_HOME) pointed at that mock, holding the server
// entry `dlgt mcp install --harness gemini --approve` writes (Gemini has
// no per-launch MCP flag). The counterpart's own Gemini home, if any, is
// not the leader's.
func (r *agentRig) geminiLeader(t *testing.T, agent func([]string) (*mockapi.ToolCall, string)) (*mockapi.Server, map[string]string) {
	t.Helper()
	leader := mockapi.NewGemini(t, mockapi.Script{mockapi.Prefix("LEADER-TASK", mockapi.Reply{Agent: agent})})
	home := t.TempDir()
	if err := mockapi.WriteGeminiHome(home); err != nil {
		t.Fatal(err)
	}
	lenv := r.leaderEnv()
	lenv["GEMINI_CLI_HOME"] = home
	for _, kv := range mockapi.GeminiEnv(leader.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		lenv[k] = v
	}
	cmd := exec.Command(r.dlgt, "mcp", "install", "--harness", "gemini", "--approve", "--wait-max", agentWaitMax)
	cmd.Env = []string{"HOME=" + lenv["HOME"], "GEMINI_CLI_HOME=" + home, "PATH=" + lenv["PATH"]}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dlgt mcp install --harness gemini: %v\n%s", err, out)
	}
	return leader, lenv
}

// geminiLeaderArgs runs Gemini headless in the project (trusted for the
// run: it loads no user MCP server in an untrusted folder).
func geminiLeaderArgs(prompt string) []string {
	return []string{"-p", prompt, "--skip-trust", "-o", "json"}
}

// runLeader runs the leader CLI to completion and returns its stdout.
func (r *agentRig) runLeader(t *testing.T, env map[string]string, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = r.cwd
	cmd.Env = nil
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("leader %s ran %v", filepath.Base(bin), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("leader: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// leaderSawResult reports whether some request of the leader's mock
// carried a tool result containing want, and how many results did.
func leaderSawResult(leader *mockapi.Server, want string) int {
	n := 0
	seen := map[string]bool{}
	for _, req := range leader.Requests() {
		for _, res := range req.ToolResults {
			if strings.Contains(res, want) && !seen[res] {
				seen[res] = true
				n++
			}
		}
	}
	return n
}

// checkDelegation asserts what both sides saw after a leader ran the MCP
// plan: the counterpart's mock saw each prompt once (the retried delegate
// was replayed), the answers reached the leader's model once each, and
// the leader's final text carries both.
func (r *agentRig) checkDelegation(t *testing.T, leader *mockapi.Server, final string) {
	t.Helper()
	count := func(sub string) int {
		n := 0
		for _, p := range r.cp.Prompts() {
			if strings.Contains(p, sub) {
				n++
			}
		}
		return n
	}
	if n := count("COUNTERPART-TASK"); n != 1 {
		t.Errorf("the counterpart's model saw the task %d times, want 1 (prompts %q)", n, r.cp.Prompts())
	}
	if n := count("COUNTERPART-FOLLOWUP"); n != 1 {
		t.Errorf("the counterpart's model saw the follow-up %d times, want 1", n)
	}
	if n := leaderSawResult(leader, agentAnswer); n != 1 {
		t.Errorf("%d distinct tool results carried the first answer, want 1", n)
	}
	if n := leaderSawResult(leader, agentAnswer2); n != 1 {
		t.Errorf("%d distinct tool results carried the second answer, want 1", n)
	}
	if n := leaderSawResult(leader, "already accepted"); n != 1 {
		t.Errorf("the retried delegate was not answered with the replayed receipt (%d)", n)
	}
	if n := leaderSawResult(leader, "Still running"); n < 1 {
		t.Errorf("no wait returned before the long turn ended; the bound was not exercised")
	}
	want := "LEADER-DONE " + agentAnswer + " " + agentAnswer2
	if !strings.Contains(final, want) {
		t.Errorf("the leader's final output lacks %q:\n%s", want, final)
	}
	// The stop went through: the daemon lists the Session as stopped.
	var list struct {
		Sessions []struct{ ID, State string }
	}
	r.td.mustCall("session.list", map[string]any{"all": true}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].State != "stopped" {
		t.Errorf("Sessions after the leader's stop: %+v", list.Sessions)
	}
}

// testAgentsLeadsMCP runs the MCP plan with the real leader CLI
// (claude, codex, gemini or copilot) delegating to the real counterpart
// hosted by the rig's daemon, each against its own mock, and checks what
// both sides saw (checkDelegation).
func testAgentsLeadsMCP(t *testing.T, leader, counterpart string) {
	r := newAgentRig(t, counterpart)
	plan, prompt := mcpLeaderPlan(counterpart), "LEADER-TASK: delegate to "+counterpart
	if counterpart == "claude" && (leader == "gemini" || leader == "copilot") {
		// Gemini CLI and Copilot CLI 1.0.102 do not pass ANTHROPIC_API_KEY
		// on to a local MCP server (without this the counterpart failed
		// "Not logged in"): the counterpart Claude Code gets its key from
		// its own settings.
		claudeKeyHelper(t, r.home)
	}
	var (
		mock *mockapi.Server
		lenv map[string]string
		bin  string
		args []string
	)
	switch leader {
	case "claude":
		mock, lenv = r.claudeLeader(t, plan)
		bin = lenv["DLGT_CLAUDE_BIN"]
		args = append([]string{"-p", prompt, "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
	case "codex":
		mock, lenv = r.codexLeader(t, plan)
		bin = e2eCodexBin(t)
		name, _, _ := strings.Cut(r.mark, "=")
		// Codex gives MCP servers a filtered environment: the
		// counterpart's variables are forwarded by name.
		fwd := claudeForwardEnv("HOME", name)
		if counterpart != "claude" {
			// Every variable of the counterpart's environment.
			fwd = nil
			for k := range r.env {
				if k != "PATH" {
					fwd = append(fwd, "--forward-env", k)
				}
			}
		}
		args = append([]string{"exec", "--json", "--skip-git-repo-check"}, r.mcpArgs(t, "codex", fwd...)...)
		args = append(args, prompt)
	case "gemini":
		mock, lenv = r.geminiLeader(t, plan)
		bin, args = e2eGeminiBin(t), geminiLeaderArgs(prompt)
	case "copilot":
		mock, lenv = r.copilotLeader(t, plan)
		bin = e2eCopilotBin(t)
		// No permission flag but --approve's --allow-tool dlgt: without
		// it copilot -p refuses dlgt-delegate (no one to ask).
		args = append([]string{"-p", prompt, "--no-auto-update"}, r.mcpArgs(t, "copilot")...)
	default:
		t.Fatalf("no leader setup for %q", leader)
	}
	logLeaderOnFailure(t, mock)
	out := r.runLeader(t, lenv, bin, args...)
	r.checkDelegation(t, mock, out)
}

func TestAgentsClaudeLeadsCodexMCP(t *testing.T)  { testAgentsLeadsMCP(t, "claude", "codex") }
func TestAgentsCodexLeadsClaudeMCP(t *testing.T)  { testAgentsLeadsMCP(t, "codex", "claude") }
func TestAgentsClaudeLeadsGeminiMCP(t *testing.T) { testAgentsLeadsMCP(t, "claude", "gemini") }
func TestAgentsGeminiLeadsClaudeMCP(t *testing.T) { testAgentsLeadsMCP(t, "gemini", "claude") }

// claudeKeyHelper gives the counterpart Claude Code its key from its own
// settings (apiKeyHelper) under home: Gemini CLI redacts variables that
// look secret (ANTHROPIC_API_KEY among them) from an MCP server's
// environment, so a counterpart started through a Gemini leader gets no
// key from it (docs/agents.md).
func claudeKeyHelper(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, ".claude")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"apiKeyHelper": "echo `+e2eClaudeKey+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// shellLeaderPlan: the leader's model runs dlgt in its shell tool: create,
// then fetch until the result, then answers with what it read. The command
// names the binary by its path: Codex runs shell commands in a login shell,
// whose profile resets PATH.
func shellLeaderPlan(dlgt, harness string) func([]string) (*mockapi.ToolCall, string) {
	return func(results []string) (*mockapi.ToolCall, string) {
		switch len(results) {
		case 0:
			c := mockapi.Shell(fmt.Sprintf("%s session create --harness %s --title shell-e2e --alias shell-e2e --request-id shell-r1 -- %q", dlgt, harness, agentTask))
			return &c, ""
		case 1:
			var rc struct {
				Session struct{ ID string }
				Cursor  string
			}
			if line := jsonLine(results[0]); line == "" || json.Unmarshal([]byte(line), &rc) != nil || rc.Session.ID == "" {
				return nil, "LEADER-SHELL-FAILED create: " + results[0]
			}
			c := mockapi.Shell(fmt.Sprintf("%s session fetch %s --cursor %s --wait 60s --until result", dlgt, rc.Session.ID, rc.Cursor))
			return &c, ""
		}
		var doc struct {
			Reason   string
			Sessions []struct {
				Results []struct {
					FinalText string `json:"final_text"`
				}
			}
		}
		if line := jsonLine(results[1]); line == "" || json.Unmarshal([]byte(line), &doc) != nil || len(doc.Sessions) == 0 || len(doc.Sessions[0].Results) == 0 {
			return nil, "LEADER-SHELL-FAILED fetch: " + results[1]
		}
		return nil, "LEADER-SHELL-DONE " + doc.Reason + " " + doc.Sessions[0].Results[0].FinalText
	}
}

// jsonLine is the first line of s that is a JSON object of the CLI's.
func jsonLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, `{"ok":`) {
			return l
		}
	}
	return ""
}

func TestAgentsClaudeLeadsCodexShell(t *testing.T) {
	r := newAgentRig(t, "codex")
	leader, lenv := r.claudeLeader(t, shellLeaderPlan(r.dlgt, "codex"))
	out := r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], "-p", "LEADER-TASK: delegate to codex by shell",
		"--output-format", "json", "--allowedTools", "Bash")
	r.checkShellDelegation(t, leader, out)
}

// checkShellDelegation asserts what a leader that ran shellLeaderPlan
// saw: the counterpart's answer in one tool result and in its final
// output; then it stops the counterpart.
func (r *agentRig) checkShellDelegation(t *testing.T, leader *mockapi.Server, final string) {
	t.Helper()
	if !strings.Contains(final, "LEADER-SHELL-DONE result thinking… "+agentAnswer) {
		t.Errorf("the leader's final output lacks the counterpart's answer:\n%s", final)
	}
	if n := leaderSawResult(leader, agentAnswer); n != 1 {
		t.Errorf("%d tool results carried the answer, want 1", n)
	}
	r.td.mustCall("session.stop", map[string]any{"session": "shell-e2e"}, nil)
}

// In Codex's default workspace-write sandbox the shell tool cannot connect
// to the daemon's socket: the leader's model must read an error that says
// so and names the way out, not a bare dial error.
func TestAgentsCodexLeadsShellSandboxed(t *testing.T) {
	r := newAgentRig(t, "claude")
	leader, lenv := r.codexLeader(t, func(results []string) (*mockapi.ToolCall, string) {
		if len(results) == 0 {
			c := mockapi.Shell(r.dlgt + " session list")
			return &c, ""
		}
		return nil, "LEADER-SAW-SHELL-RESULT"
	})
	out := r.runLeader(t, lenv, e2eCodexBin(t), "exec", "--json", "--skip-git-repo-check", "-s", "workspace-write", "LEADER-TASK: list sessions by shell")
	if !strings.Contains(out, "LEADER-SAW-SHELL-RESULT") {
		t.Errorf("the leader did not finish its turn:\n%s", out)
	}
	if leaderSawResult(leader, "RPC_UNAVAILABLE") != 1 || leaderSawResult(leader, "sandbox") != 1 || leaderSawResult(leader, "dlgt mcp") != 1 {
		var got []string
		for _, req := range leader.Requests() {
			got = append(got, req.ToolResults...)
		}
		t.Errorf("the shell tool's result does not name the sandbox and the MCP way out: %q", got)
	}
}

// Where the sandbox allows sockets (network access on), a Codex leader
// delegates through its shell tool as a Claude leader does.
func TestAgentsCodexLeadsClaudeShellNetworkSandbox(t *testing.T) {
	r := newAgentRig(t, "claude")
	leader, lenv := r.codexLeader(t, shellLeaderPlan(r.dlgt, "claude"))
	out := r.runLeader(t, lenv, e2eCodexBin(t), "exec", "--json", "--skip-git-repo-check",
		"-s", "workspace-write", "-c", "sandbox_workspace_write.network_access=true", "LEADER-TASK: delegate to claude by shell")
	r.checkShellDelegation(t, leader, out)
}
