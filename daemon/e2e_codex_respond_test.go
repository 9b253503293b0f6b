package daemon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// codexOverlay is the first line of Codex 0.171.0's command approval
// overlay.
const codexOverlay = "Would you like to run the following command?"

// TestE2ECodexRespond: the real Codex (0.171.0) as a counterpart asks to
// run a command outside its sandbox; session.respond answers it through
// its PermissionRequest hook, while Codex shows no overlay. Allow (after
// holding the request longer than dlgt's other hooks' 30 s timeout): the
// command runs and the turn completes; deny with a message, from the CLI:
// the command does not run, the model's next request carries the message
// and the turn completes; a second answer gets the typed error. A person
// who attaches while the request waits takes it: the request is withdrawn
// and Codex draws its overlay for them; a person attached when Codex asks
// gets the overlay at once. session.cancel while the request waits ends
// the turn canceled, with no forwarder left.
func TestE2ECodexRespond(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLI")
	}
	mock, env := e2eCodexEnv(t, mockapi.Script{
		mockapi.Prefix("RESPOND-TOOL", mockapi.Reply{Tool: "touch dlgt-respond-marker", Text: "AFTER-TOOL", Escalated: true, Refused: "REFUSED"}),
	})
	td := startTestDaemonWith(t, env)
	t.Run("allow", func(t *testing.T) { codexRespondRound(t, td, mock, env, rpc.DecisionAllow) })
	t.Run("deny", func(t *testing.T) { codexRespondRound(t, td, mock, env, rpc.DecisionDeny) })
	t.Run("person-attaches", func(t *testing.T) { codexPersonRound(t, td, env) })
	t.Run("person-attached", func(t *testing.T) { codexAttachedRound(t, td, env) })
	t.Run("cancel", func(t *testing.T) { codexCancelRound(t, td, env) })
}

// e2eCodexEnv starts the mock and returns it with the client environment
// that runs the real Codex offline against it, every process marked.
func e2eCodexEnv(t *testing.T, script mockapi.Script) (*mockapi.Server, map[string]string) {
	t.Helper()
	bin := e2eCodexBin(t)
	mark := newE2EMark(t)
	mock := mockapi.NewResponses(t, script)
	codexHome := t.TempDir()
	writeCodexConfig(t, codexHome, mock.URL())
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "CODEX_HOME": codexHome,
		"MOCK_API_KEY": "mock-key", "DLGT_CODEX_BIN": bin,
		"GORACE": "atexit_sleep_ms=0", "TERM": "xterm-256color",
	}
	addMark(env, mark)
	return mock, env
}

// codexAsk creates a Codex Session (no auto-approval) whose model asks to
// run `touch dlgt-respond-marker` in a fresh directory; it returns the
// Session id, the receipt's cursor and the directory. The Session is
// stopped when t ends.
func codexAsk(t *testing.T, td *testDaemon, env map[string]string, prompt string) (id, cursor, cwd string) {
	t.Helper()
	r, cwd := createAsking(t, td, rpc.SessionCreateParams{
		Title: "e2e codex respond", Harness: "codex", Prompt: prompt,
		RequestID: "codex-" + strings.ReplaceAll(prompt, " ", "-"), Environment: env,
	})
	return r.Session.ID, r.Cursor, cwd
}

// createAsking creates the Session p describes with no auto-approval, in
// a fresh directory, and stops it when t ends; it returns the receipt and
// the directory.
func createAsking(t *testing.T, td *testDaemon, p rpc.SessionCreateParams) (rpc.Receipt, string) {
	t.Helper()
	p.Cwd = t.TempDir()
	no := false
	p.AutoApprove = &no
	var r rpc.Receipt
	td.accept(t, rpc.MethodSessionCreate, p, &r)
	t.Cleanup(func() {
		var stopped rpc.SessionResult
		td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, Force: true}, &stopped)
	})
	return r, p.Cwd
}

// waitPending long-polls (up to wait) until Session id is blocked, and
// returns the pending request once session.read shows it (it can be
// recorded just after session.blocked).
func waitPending(t *testing.T, td *testDaemon, id, cursor string, wait time.Duration) rpc.Pending {
	t.Helper()
	var doc rpc.FetchDocument
	mustCallT(t, td, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": wait.Milliseconds()}, &doc)
	if doc.Reason != rpc.ReasonBlocked {
		t.Fatalf("reason = %s, events %+v", doc.Reason, doc.Sessions[0].Events)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var read rpc.SessionReadResult
		mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if pp := read.Session.Pending; pp != nil {
			return *pp
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocked with no pending request: %+v", read.Session)
		}
	}
}

// checkRespondOutcome checks what an answered `touch dlgt-respond-marker`
// on prompt left in cwd and the mock: allowed, the turn completed with
// the mock's AFTER-TOOL, the command ran and its result went to the
// model; denied, the turn was interrupted (with denyText in its error,
// when not empty), the command did not run and no result went.
func checkRespondOutcome(t *testing.T, decision string, result rpc.Result, mock *mockapi.Server, cwd, prompt, denyText string) {
	t.Helper()
	_, ranErr := os.Stat(filepath.Join(cwd, "dlgt-respond-marker"))
	var toolResult bool
	for _, q := range mock.Requests() {
		toolResult = toolResult || (q.Kind == mockapi.KindToolResult && q.Prompt == prompt)
	}
	switch decision {
	case rpc.DecisionAllow:
		if result.Status != rpc.StatusCompleted || fetchdoc.DerefText(&result) != "AFTER-TOOL" {
			t.Fatalf("result = %+v text %q", result, fetchdoc.DerefText(&result))
		}
		if ranErr != nil || !toolResult {
			t.Fatalf("the allowed command did not run (%v) or the model never got its result (%v)", ranErr, toolResult)
		}
	case rpc.DecisionDeny:
		if result.Status != rpc.StatusInterrupted || (denyText != "" && (result.Error == nil || !strings.Contains(result.Error.Message, denyText))) {
			t.Fatalf("result = %+v error %+v", result, result.Error)
		}
		if ranErr == nil || toolResult {
			t.Fatalf("the denied command ran (%v), or the model got a tool result (%v)", ranErr == nil, toolResult)
		}
	}
}

// codexBlocked long-polls until the Session is blocked and returns the
// pending request it carries, and when the fetch returned.
func codexBlocked(t *testing.T, td *testDaemon, id, cursor string) (rpc.Pending, time.Time) {
	t.Helper()
	var doc rpc.FetchDocument
	mustCallT(t, td, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": 60000}, &doc)
	fetched := time.Now()
	if doc.Reason != rpc.ReasonBlocked {
		t.Fatalf("reason = %s, events %+v", doc.Reason, doc.Sessions[0].Events)
	}
	p := doc.Sessions[0].Session.Pending
	if p == nil || p.Kind != rpc.PendingPermission || p.Tool != "Bash" || p.Input != "touch dlgt-respond-marker" || len(p.Options) != 2 {
		t.Fatalf("pending = %+v", p)
	}
	var read rpc.SessionReadResult
	mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	if read.Session.Pending == nil || read.Session.Pending.ID != p.ID {
		t.Fatalf("session.read pending = %+v", read.Session.Pending)
	}
	return *p, fetched
}

// screenLacks checks that the live screen does not show text now.
func screenLacks(t *testing.T, td *testDaemon, id, text string) {
	t.Helper()
	var base rpc.FetchDocument
	mustCallT(t, td, rpc.MethodSessionFetch, map[string]any{"session": id}, &base)
	if live := strings.Join(base.Sessions[0].Screen.Live, "\n"); strings.Contains(live, text) {
		t.Fatalf("the screen shows %q:\n%s", text, live)
	}
}

func codexRespondRound(t *testing.T, td *testDaemon, mock *mockapi.Server, env map[string]string, decision string) {
	prompt := "RESPOND-TOOL " + decision
	id, cursor, cwd := codexAsk(t, td, env, prompt)
	p, fetched := codexBlocked(t, td, id, cursor)
	toolCall := lastAnswered(mock, prompt, mockapi.KindPrompt)
	t.Logf("%s: the model's tool call -> the daemon took the PermissionRequest hook %v -> the blocked fetch returned %v (tool call -> pending visible %v)", decision,
		time.UnixMilli(p.AskedAtMS).Sub(toolCall).Round(time.Millisecond), fetched.Sub(time.UnixMilli(p.AskedAtMS)).Round(time.Millisecond),
		fetched.Sub(toolCall).Round(time.Millisecond))
	const why = "not in this repository, use the sandbox"
	params := rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: decision, RequestID: "codex-" + decision + "-answer"}
	var answered time.Time
	if decision == rpc.DecisionAllow {
		// Held past the 30 s timeout of dlgt's other hooks: the
		// PermissionRequest hook's own timeout keeps the forwarder
		// waiting, and Codex shows no overlay meanwhile.
		time.Sleep(35 * time.Second)
		screenLacks(t, td, id, codexOverlay)
		var res rpc.SessionRespondResult
		mustCallT(t, td, rpc.MethodSessionRespond, params, &res)
		answered = time.Now()
		if res.PendingID != p.ID || res.Decision != decision {
			t.Fatalf("respond = %+v", res)
		}
	} else {
		screenLacks(t, td, id, codexOverlay)
		cmd := exec.Command(dlgtBinary(t), "session", "respond", id, "--deny", "--message", why, "-o", "text")
		cmd.Env = append(os.Environ(), "DLGT_SOCKET="+td.paths.Socket, "DLGT_NO_AUTOSTART=1")
		out, err := cmd.CombinedOutput()
		answered = time.Now()
		if err != nil || !strings.HasPrefix(string(out), "denied  "+p.ID+"\n") {
			t.Fatalf("dlgt session respond: %v\n%s", err, out)
		}
		params.RequestID, params.Message = "cli-"+p.ID+"-deny", why
	}
	_, result := td.waitResult(t, id, cursor)
	// The mock's model answers a refusal it recognises (mockapi's
	// Request.Refused, as this CLI reports it) with its Refused text.
	want := "AFTER-TOOL"
	if decision == rpc.DecisionDeny {
		want = "REFUSED: " + why
	}
	if result.Status != rpc.StatusCompleted || fetchdoc.DerefText(&result) != want {
		t.Fatalf("result = %+v text %q, want %q", result, fetchdoc.DerefText(&result), want)
	}
	var next mockapi.Request
	for _, q := range mock.Requests() {
		if q.Kind == mockapi.KindToolResult && q.Prompt == prompt {
			next = q
		}
	}
	if next.Kind == "" {
		t.Fatal("the model never received the tool's result")
	}
	fi, ranErr := os.Stat(filepath.Join(cwd, "dlgt-respond-marker"))
	switch decision {
	case rpc.DecisionAllow:
		if ranErr != nil {
			t.Fatalf("the allowed command did not run: %v", ranErr)
		}
		t.Logf("allow: session.respond -> the command ran (the marker's mtime) %v -> the model's next request %v",
			fi.ModTime().Sub(answered).Round(time.Millisecond), next.Received.Sub(answered).Round(time.Millisecond))
	case rpc.DecisionDeny:
		if ranErr == nil {
			t.Fatal("the denied command ran")
		}
		if !strings.Contains(strings.Join(next.ToolResults, "\n"), why) {
			t.Fatalf("the model did not receive the denial: %q", next.ToolResults)
		}
		t.Logf("deny: session.respond -> the model's next request (with the message) %v", next.Received.Sub(answered).Round(time.Millisecond))
	}
	late := params
	late.RequestID, late.Decision, late.Message = "codex-"+decision+"-late", rpc.DecisionDeny, "late"
	replayAndRefuse(t, td, params, late)
}

// replayAndRefuse checks that params, the answer given, is replayed when
// sent again, and that late, another answer to the same request, gets
// the typed error.
func replayAndRefuse(t *testing.T, td *testDaemon, params, late rpc.SessionRespondParams) {
	t.Helper()
	var again rpc.SessionRespondResult
	mustCallT(t, td, rpc.MethodSessionRespond, params, &again)
	if !again.Replayed || again.PendingID != params.PendingID {
		t.Fatalf("replay = %+v", again)
	}
	if err := td.call(rpc.MethodSessionRespond, late, nil); !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "already answered") {
		t.Fatalf("second answer: %v", err)
	}
}

// codexPersonRound: a person attaches while the request waits for an
// answer; the request is withdrawn for everyone else, Codex draws its
// overlay, the person approves with y, and a late answer gets the typed
// error.
func codexPersonRound(t *testing.T, td *testDaemon, env map[string]string) {
	id, cursor, cwd := codexAsk(t, td, env, "RESPOND-TOOL person")
	p, _ := codexBlocked(t, td, id, cursor)
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	var read rpc.SessionReadResult
	mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	if read.Session.Pending != nil || read.Session.State != rpc.StateBlocked {
		t.Fatalf("after the person attached: state %s pending %+v", read.Session.State, read.Session.Pending)
	}
	err = td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionDeny, RequestID: "codex-person-late"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("answer after the person attached: %v", err)
	}
	codexApproveOnce(t, td, id, w.ack.Token)
	_, result := td.waitResult(t, id, cursor)
	if result.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-respond-marker")); err != nil {
		t.Fatalf("the command the person allowed did not run: %v", err)
	}
	mustCallT(t, td, rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
}

// codexAttachedRound: a person holds the terminal when Codex asks (they
// typed the prompt): nothing is made pending, and the overlay is drawn
// for them at once.
func codexAttachedRound(t *testing.T, td *testDaemon, env map[string]string) {
	r, cwd := createAsking(t, td, rpc.SessionCreateParams{
		Title: "e2e codex attached", Harness: "codex", Prompt: "hello first",
		RequestID: "codex-attached", Environment: env,
	})
	id := r.Session.ID
	td.waitResult(t, id, r.Cursor)
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := td.input(id, w.ack.Token, "RESPOND-TOOL typed"); err != nil {
		t.Fatal(err)
	}
	screenHas(t, td, id, "RESPOND-TOOL typed")
	if err := td.input(id, w.ack.Token, "\r"); err != nil {
		t.Fatal(err)
	}
	screenHas(t, td, id, codexOverlay)
	var read rpc.SessionReadResult
	mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	if read.Session.State != rpc.StateBlocked || read.Session.Pending != nil {
		t.Fatalf("asked while a person is attached: state %s pending %+v", read.Session.State, read.Session.Pending)
	}
	codexApproveOnce(t, td, id, w.ack.Token)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		read = rpc.SessionReadResult{}
		mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.State == rpc.StateIdle && read.Result != nil && read.Result.ExecutionSeq == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the typed turn did not end: %+v %+v", read.Session, read.Result)
		}
	}
	if read.Result.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", read.Result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-respond-marker")); err != nil {
		t.Fatalf("the command the person allowed did not run: %v", err)
	}
	mustCallT(t, td, rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
}

// codexCancelRound: session.cancel while the request waits ends the turn
// canceled; the command never runs and the forwarder is gone.
func codexCancelRound(t *testing.T, td *testDaemon, env map[string]string) {
	id, cursor, cwd := codexAsk(t, td, env, "RESPOND-TOOL cancel")
	p, _ := codexBlocked(t, td, id, cursor)
	var res rpc.SessionResult
	if err := td.call(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: id}, &res); err != nil {
		t.Fatalf("session.cancel: %v", err)
	}
	if res.Result == nil || res.Result.Status != rpc.StatusCanceled || res.Session.Pending != nil {
		t.Fatalf("cancel = %+v result %+v", res.Session, res.Result)
	}
	// Esc reached Codex while the hook still held the request (the turn
	// was interrupted with no overlay), not as the overlay was being drawn
	// (where Codex can drop it): the overlay's own refusal line is absent.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var page rpc.ScrollbackPage
		if err := td.call(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: id, Lines: 10000}, &page); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(page.Lines, "\n")
		if strings.Contains(text, "You canceled the request") || strings.Contains(text, codexOverlay) {
			t.Fatalf("the cancel went through Codex's overlay:\n%s", text)
		}
		if strings.Contains(text, "Conversation interrupted") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no interruption on the screen:\n%s", text)
		}
	}
	err := td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionAllow, RequestID: "codex-cancel-late"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("answer after the cancel: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); forwarderRunning(td.paths.HookSocket, "PermissionRequest"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the PermissionRequest forwarder is still running after the cancel")
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-respond-marker")); err == nil {
		t.Fatal("the command ran after the cancel")
	}
}

// forwarderRunning reports whether a hook forwarder of event runs against
// socket.
func forwarderRunning(socket, event string) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(argv) > 2 && argv[len(argv)-1] == event && strings.Contains(string(cmd), "\x00"+socket+"\x00") {
			return true
		}
	}
	return false
}

// codexApproveOnce answers Codex's overlay with y ("Yes, proceed") once it
// has been on the screen for a second, as a person would.
func codexApproveOnce(t *testing.T, td *testDaemon, id, token string) {
	t.Helper()
	screenHas(t, td, id, codexOverlay)
	time.Sleep(time.Second)
	if err := td.input(id, token, "y"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var base rpc.FetchDocument
		mustCallT(t, td, rpc.MethodSessionFetch, map[string]any{"session": id}, &base)
		live := strings.Join(base.Sessions[0].Screen.Live, "\n")
		if !strings.Contains(live, codexOverlay) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the overlay stayed after y:\n%s", live)
		}
	}
}

// mustCallT is td.mustCall failing t (a subtest) rather than the test
// that started the daemon.
func mustCallT(t *testing.T, td *testDaemon, method string, params, out any) {
	t.Helper()
	if err := td.call(method, params, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// TestAgentsClaudeLeadsCodexRespondMCP: a real Claude Code leader, its
// model scripted, delegates through MCP with the person's asking profile
// (auto_approve = false) to a real Codex counterpart, which asks to run a
// command; the leader reads the question in wait and answers it with the
// respond tool. Allow: the command runs and the turn completes. Deny with
// a message: the command never runs and Codex's model receives the
// message.
func TestAgentsClaudeLeadsCodexRespondMCP(t *testing.T) {
	for _, tc := range []struct{ decision, message string }{{"allow", ""}, {"deny", "not here: use the sandbox"}} {
		t.Run(tc.decision, func(t *testing.T) {
			r := newAgentRigScript(t, "codex", mockapi.Script{
				mockapi.Contains("COUNTERPART-TASK", mockapi.Reply{Tool: "touch dlgt-agents-marker", Text: "AFTER-TOOL", Escalated: true}),
			})
			profiles := filepath.Join(t.TempDir(), "profiles.toml")
			if err := os.WriteFile(profiles, []byte("[profiles.ask]\nharness = \"codex\"\nauto_approve = false\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			leader, lenv := r.claudeLeader(t, respondLeaderPlan("codex", tc.decision, tc.message))
			lenv["DLGT_PROFILES"] = profiles
			args := append([]string{"-p", "LEADER-TASK: delegate to codex", "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
			out := r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)
			if !strings.Contains(out, "LEADER-DONE AFTER-TOOL") {
				var seen []string
				for _, q := range leader.Requests() {
					seen = append(seen, q.ToolResults...)
				}
				t.Fatalf("leader output:\n%s\nits tool results:\n%s", out, strings.Join(seen, "\n---\n"))
			}
			if n := leaderSawResult(leader, `call respond with {"session": "codex:`); n < 1 {
				t.Fatal("no wait result told the leader how to respond")
			}
			_, err := os.Stat(filepath.Join(r.cwd, "dlgt-agents-marker"))
			var toolResults []string
			for _, q := range r.cp.Requests() {
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
