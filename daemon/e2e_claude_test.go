package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlgt/internal/harnesstest/mockapi"
	"dlgt/rpc"
)

// End-to-end tests: the real Claude Code CLI (pinned by
// .ci/install-harnesses) hosted by an in-process daemon, driven only
// through the public RPC, against the loopback mock Anthropic server.
// They are skipped when the binary is absent.

const e2eClaudeKey = "sk-ant-mock-key"

// e2eClaudeBin is DLGT_CLAUDE_BIN, else the binary .ci/install-harnesses
// puts under the module root; the test is skipped when it is absent.
func e2eClaudeBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DLGT_CLAUDE_BIN")
	if p == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				t.Fatal("go.mod not found above the test directory")
			}
			dir = parent
		}
		p = filepath.Join(dir, ".cache", "harnesses", "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		t.Skipf("Claude Code not installed (%s): run .ci/install-harnesses or set DLGT_CLAUDE_BIN", p)
	}
	return p
}

// e2eClaude is one daemon and one mock shared by the scenarios.
type e2eClaude struct {
	td   *testDaemon
	mock *mockapi.Server
	env  map[string]string
}

func startE2EClaude(t *testing.T, script mockapi.Script) *e2eClaude {
	t.Helper()
	mock, env := e2eClaudeEnv(t, script)
	return &e2eClaude{td: startTestDaemonWith(t, env), mock: mock, env: env}
}

// e2eClaudeEnv starts the mock and returns it with the client
// environment that runs the real Claude Code offline against it.
func e2eClaudeEnv(t *testing.T, script mockapi.Script) (*mockapi.Server, map[string]string) {
	t.Helper()
	bin := e2eClaudeBin(t)
	// Created before the daemon so that its cleanup (which stops every
	// Claude process) runs before the mock closes and these directories
	// are removed.
	mock := mockapi.NewAnthropic(t, script)
	home := t.TempDir()
	// Claude Code remembers approved keys by their last 20 characters.
	approved := e2eClaudeKey
	if len(approved) > 20 {
		approved = approved[len(approved)-20:]
	}
	state := map[string]any{
		"hasCompletedOnboarding":        true,
		"customApiKeyResponses":         map[string]any{"approved": []string{approved}, "rejected": []string{}},
		"hasSeenAutoDefaultNotice":      true,
		"bypassPermissionsModeAccepted": true,
	}
	data, _ := json.MarshalIndent(state, "", "  ")
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PATH":               os.Getenv("PATH"),
		"HOME":               home,
		"ANTHROPIC_BASE_URL": mock.URL(),
		"ANTHROPIC_API_KEY":  e2eClaudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DLGT_CLAUDE_BIN":                          bin,
		"GORACE":                                   "atexit_sleep_ms=0",
		"TERM":                                     "xterm-256color",
	}
	return mock, env
}

// call makes one RPC, failing t (which may be a subtest) on error.
func (e *e2eClaude) call(t *testing.T, method string, params, out any) {
	t.Helper()
	if err := e.td.call(method, params, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func (e *e2eClaude) accept(t *testing.T, method string, params any, r *rpc.Receipt) {
	t.Helper()
	e.td.accept(t, method, params, r)
}

// fetchUntilResult is one session.fetch until:"result" from cursor.
func (e *e2eClaude) fetchUntilResult(t *testing.T, id, cursor string, wait time.Duration) rpc.FetchDocument {
	t.Helper()
	var doc rpc.FetchDocument
	e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": wait.Milliseconds()}, &doc)
	return doc
}

// waitResult long-polls from cursor until the bound execution's result.
func (e *e2eClaude) waitResult(t *testing.T, id, cursor string) (rpc.FetchDocument, rpc.Result) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		doc := e.fetchUntilResult(t, id, cursor, 20*time.Second)
		for _, r := range doc.Sessions[0].Results {
			if r.FinalTextComplete == nil || *r.FinalTextComplete {
				return doc, r
			}
		}
		if doc.Reason == rpc.ReasonBlocked {
			t.Fatalf("session blocked while waiting for a result: %+v", doc.Sessions[0].Events)
		}
		cursor = doc.Cursor
	}
	t.Fatal("no result within 60s")
	return rpc.FetchDocument{}, rpc.Result{}
}

// waitPrompts waits until the mock has recorded a prompt request
// matching match and returns every matching prompt. The mock records a
// request just after its stream ends, which can be a moment after
// Claude's Stop hook.
func (e *e2eClaude) waitPrompts(t *testing.T, match func(string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got []string
		for _, p := range e.mock.Prompts() {
			if match(p) {
				got = append(got, p)
			}
		}
		if len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPrompt returns how many prompt requests carried prompt exactly.
func (e *e2eClaude) waitPrompt(t *testing.T, prompt string) int {
	t.Helper()
	return len(e.waitPrompts(t, func(p string) bool { return p == prompt }))
}

func (e *e2eClaude) send(t *testing.T, id, prompt, reqID string) rpc.Receipt {
	t.Helper()
	var r rpc.Receipt
	e.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: reqID}, &r)
	if r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("send %s: submission = %q, want confirmed (receipt %+v)", reqID, r.Submission, r)
	}
	return r
}

// expectReply waits for the result from cursor and checks it is prompt's
// default mock reply.
func (e *e2eClaude) expectReply(t *testing.T, id, cursor, prompt string, seq uint64) rpc.Result {
	t.Helper()
	return e.expectText(t, id, cursor, mockapi.DefaultText(prompt), seq)
}

// expectText waits for the result from cursor and checks its final text,
// reported by the Stop hook.
func (e *e2eClaude) expectText(t *testing.T, id, cursor, want string, seq uint64) rpc.Result {
	t.Helper()
	_, res := e.waitResult(t, id, cursor)
	if res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceHook || res.FinalText == nil || *res.FinalText != want || res.ExecutionSeq != seq {
		t.Fatalf("result = %+v text=%q, want %q from the hook for execution %d", res, derefText(&res), want, seq)
	}
	wantUsage(t, "result", &res, mockUsage(want))
	return res
}

// e2eSlowReply streams for about a minute, to be canceled.
var e2eSlowReply = mockapi.Reply{Text: strings.Repeat("slow ", 300), Chunk: 1, Delay: 40 * time.Millisecond}

// cancelOK cancels the running execution seq of id and checks it ends
// canceled with the Session idle.
func (e *e2eClaude) cancelOK(t *testing.T, id string, seq uint64) {
	t.Helper()
	start := time.Now()
	var res rpc.SessionResult
	e.call(t, rpc.MethodSessionCancel, map[string]any{"session": id, "timeout_ms": 20000}, &res)
	took := time.Since(start)
	if res.Result == nil || res.Result.Status != rpc.StatusCanceled || res.Result.ExecutionSeq != seq || res.Session.State != rpc.StateIdle {
		t.Fatalf("cancel = state %s result %+v, want execution %d canceled and idle", res.Session.State, res.Result, seq)
	}
	t.Logf("latency: session.cancel -> canceled result %v", took.Round(time.Millisecond))
	if r := e.read(t, id); r.Session.State != rpc.StateIdle || r.Result == nil || r.Result.Status != rpc.StatusCanceled {
		t.Fatalf("read after cancel = state %s result %+v", r.Session.State, r.Result)
	}
}

func (e *e2eClaude) read(t *testing.T, id string) rpc.SessionReadResult {
	t.Helper()
	var r rpc.SessionReadResult
	e.call(t, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &r)
	return r
}

// waitLive waits until the live screen of id shows substr.
func (e *e2eClaude) waitLive(t *testing.T, id, substr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var doc rpc.FetchDocument
		e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "screen": true}, &doc)
		if sc := doc.Sessions[0].Screen; sc != nil && strings.Contains(strings.Join(sc.Live, "\n"), substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q", substr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *e2eClaude) screenEpoch(t *testing.T, id string) uint64 {
	t.Helper()
	var doc rpc.FetchDocument
	e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "screen": true}, &doc)
	if len(doc.Sessions) != 1 || doc.Sessions[0].Screen == nil {
		t.Fatalf("snapshot has no screen: %+v", doc)
	}
	return doc.Sessions[0].Screen.Epoch
}

// pasteTag is how Claude Code 2.1.332 submits a collapsed paste.
var pasteTag = regexp.MustCompile(`^\n\n<pasted_content id="([0-9a-f]{4})">\n`)

// unwrapPasteTag returns the text inside one paste tag spanning all of p.
func unwrapPasteTag(p string) (string, bool) {
	m := pasteTag.FindStringSubmatch(p)
	if m == nil {
		return p, p != "" && !strings.Contains(p, "<pasted_content")
	}
	closer := "\n</pasted_content id=\"" + m[1] + "\">\n"
	if !strings.HasSuffix(p, closer) || len(p) < len(m[0])+len(closer) {
		return "", false
	}
	return p[len(m[0]) : len(p)-len(closer)], true
}

// bigPrompt is a multi-line prompt of about n bytes.
func bigPrompt(n int) string {
	var b strings.Builder
	b.WriteString("BIG-PROMPT: the lines below are filler.\n")
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d: the quick brown fox jumps over the lazy dog, 0123456789.\n", i)
	}
	b.WriteString("END OF BIG PROMPT")
	return b.String()
}

func TestClaudeE2E(t *testing.T) {
	e := startE2EClaude(t, mockapi.Script{
		mockapi.Contains("BIG-PROMPT:", mockapi.Reply{Text: "BIG-REPLY"}),
		// A command that is not read-only, so default mode asks first.
		mockapi.Prefix("E2E-TOOL", mockapi.Reply{Tool: "touch dlgt-e2e-marker", Text: "AFTER-TOOL"}),
		mockapi.Prefix("E2E-SLOW", e2eSlowReply),
	})
	cwd := t.TempDir()
	var id string

	// Every step but the last continues the conversation of the first.
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"CreateFetch", func(t *testing.T) {
			const prompt = "hello from the dlgt e2e test"
			var r rpc.Receipt
			start := time.Now()
			e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: "e2e claude", Harness: "claude", Cwd: cwd, Prompt: prompt,
				RequestID: "e2e-1", Environment: e.env,
			}, &r)
			created := time.Since(start)
			if !strings.HasPrefix(r.Session.ID, "claude:") || r.ExecutionSeq != 1 || r.Submission != rpc.SubmissionConfirmed {
				t.Fatalf("receipt = %+v", r)
			}
			id = r.Session.ID
			doc, res := e.waitResult(t, id, r.Cursor)
			fetched := time.Now()
			want := mockapi.DefaultText(prompt)
			if res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceHook || res.FinalText == nil || *res.FinalText != want {
				t.Fatalf("result = %+v text=%q, want %q", res, derefText(&res), want)
			}
			if doc.Reason != rpc.ReasonResult {
				t.Fatalf("reason = %q", doc.Reason)
			}
			wantUsage(t, "first result", &res, mockUsage(want))
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
			// completed_at_ms is stamped when the Stop hook is applied.
			t.Logf("latency: create -> confirmed receipt %v; Stop hook -> fetch response %v",
				created.Round(time.Millisecond), fetched.Sub(time.UnixMilli(res.CompletedAtMS)).Round(time.Millisecond))
		}},
		{"FollowUp", func(t *testing.T) {
			const prompt = "a second question in the same conversation"
			r := e.send(t, id, prompt, "e2e-2")
			e.expectReply(t, id, r.Cursor, prompt, 2)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
		}},
		{"LargeMultiLinePrompt", func(t *testing.T) {
			prompt := bigPrompt(100 << 10)
			r := e.send(t, id, prompt, "e2e-3")
			e.expectText(t, id, r.Cursor, "BIG-REPLY", 3)
			// Claude Code collapses a paste of over 800 characters or 2
			// lines to "[Pasted text #N]" and sends it tagged (see
			// harness.unwrapClaudePastes); the text inside must be exact.
			got := e.waitPrompts(t, func(p string) bool { return strings.Contains(p, "BIG-PROMPT:") })
			if len(got) != 1 {
				t.Fatalf("mock saw %d requests with the big prompt, want 1", len(got))
			}
			if inner, ok := unwrapPasteTag(got[0]); !ok || inner != prompt {
				t.Fatalf("mock got %d bytes (tagged %v), want the %d-byte prompt byte-exact; head %q tail %q",
					len(got[0]), ok, len(prompt), got[0][:min(len(got[0]), 80)], got[0][max(0, len(got[0])-80):])
			}
		}},
		{"StopResume", func(t *testing.T) {
			var stopped rpc.SessionResult
			e.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: id}, &stopped)
			if stopped.Session.State != rpc.StateStopped {
				t.Fatalf("state after stop = %s", stopped.Session.State)
			}
			const prompt = "back after a resume"
			var r rpc.Receipt
			e.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: "e2e-4", Resume: true, Environment: e.env}, &r)
			if r.Session.ID != id || r.ExecutionSeq != 4 || r.Submission != rpc.SubmissionConfirmed {
				t.Fatalf("resume receipt = %+v", r)
			}
			e.expectReply(t, id, r.Cursor, prompt, 4)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
		}},
		{"Restart", func(t *testing.T) {
			before := e.screenEpoch(t, id)
			var res rpc.SessionResult
			e.call(t, rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: id, Environment: e.env}, &res)
			if res.Session.ID != id {
				t.Fatalf("restart changed the id: %s", res.Session.ID)
			}
			if after := e.screenEpoch(t, id); after <= before {
				t.Fatalf("screen epoch %d -> %d after restart, want an increase", before, after)
			}
			const prompt = "hello again after a restart"
			r := e.send(t, id, prompt, "e2e-5")
			if r.Session.ID != id {
				t.Fatalf("receipt id = %s", r.Session.ID)
			}
			e.expectReply(t, id, r.Cursor, prompt, 5)
		}},
		{"CancelStreaming", func(t *testing.T) {
			// The reply is streaming when the interrupt lands: Claude Code
			// writes its interrupt marker to the transcript.
			r := e.send(t, id, "E2E-SLOW cancel me while streaming", "e2e-6")
			e.waitLive(t, id, "slow slow slow")
			e.cancelOK(t, id, 6)
			const prompt = "still here after a cancel"
			r = e.send(t, id, prompt, "e2e-7")
			e.expectReply(t, id, r.Cursor, prompt, 7)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
		}},
		{"CancelEarly", func(t *testing.T) {
			// Canceled as soon as the prompt is confirmed: usually before
			// the first token, when Claude Code rewinds the turn (the prompt
			// goes back to the input box, nothing reaches the transcript).
			e.send(t, id, "E2E-SLOW cancel me at once", "e2e-8")
			e.cancelOK(t, id, 8)
			// The rewound draft must not leak into the next prompt.
			const prompt = "a clean prompt after an early cancel"
			r := e.send(t, id, prompt, "e2e-9")
			e.expectReply(t, id, r.Cursor, prompt, 9)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times: %q", n, e.mock.Prompts())
			}
		}},
		{"PermissionBlocks", func(t *testing.T) {
			cwd := t.TempDir()
			no := false
			var r rpc.Receipt
			e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: "e2e permission", Harness: "claude", Cwd: cwd, Prompt: "E2E-TOOL please run it",
				RequestID: "e2e-perm-1", Environment: e.env, AutoApprove: &no,
				HarnessOptions: []string{"permission-mode=default"},
			}, &r)
			if r.Submission != rpc.SubmissionConfirmed {
				t.Fatalf("receipt = %+v", r)
			}
			doc := e.fetchUntilResult(t, r.Session.ID, r.Cursor, 30*time.Second)
			if doc.Reason != rpc.ReasonBlocked || doc.Sessions[0].Session.State != rpc.StateBlocked {
				t.Fatalf("reason=%s state=%s events=%+v", doc.Reason, doc.Sessions[0].Session.State, doc.Sessions[0].Events)
			}
			if n := len(doc.Sessions[0].Results); n != 0 {
				t.Fatalf("blocked produced %d results", n)
			}
			// Cancel while blocked: the dialog is dismissed (declining the
			// tool), then the turn is interrupted.
			e.cancelOK(t, r.Session.ID, 1)
			if _, err := os.Stat(filepath.Join(cwd, "dlgt-e2e-marker")); err == nil {
				t.Fatal("the declined tool ran")
			}
			var stopped rpc.SessionResult
			e.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, Force: true}, &stopped)
		}},
	}
	failed := ""
	for _, s := range steps {
		if failed != "" && s.name != "PermissionBlocks" {
			t.Logf("%s skipped: %s failed and it continues that conversation", s.name, failed)
			continue
		}
		if !t.Run(s.name, s.run) && failed == "" {
			failed = s.name
		}
	}
}

// claudeProcs lists live processes whose command line runs bin with the
// working directory cwd (pgrep -f bin, then /proc/PID/cwd).
func claudeProcs(t *testing.T, bin, cwd string) []int {
	t.Helper()
	out, err := exec.Command("pgrep", "-f", bin).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("pgrep: %v", err)
		}
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		if dir, err := os.Readlink("/proc/" + f + "/cwd"); err == nil && dir == cwd {
			if st := procState(pid); st != 0 && st != 'Z' {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// waitClaudeProc waits for exactly one Claude process in cwd.
func waitClaudeProc(t *testing.T, bin, cwd string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pids := claudeProcs(t, bin, cwd); len(pids) == 1 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single Claude process in %s: %v", cwd, claudeProcs(t, bin, cwd))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A daemon SIGKILLed in the middle of a real Claude turn: the next daemon
// on the same home reports the Session failed with an interrupted
// result, and a resume continues the same Claude conversation.
func TestClaudeE2EDaemonKill9(t *testing.T) {
	bin := e2eClaudeBin(t)
	mock, env := e2eClaudeEnv(t, mockapi.Script{mockapi.Prefix("E2E-SLOW", e2eSlowReply)})
	cwd := t.TempDir()
	td, cd := newChildDaemon(t, env)
	t.Cleanup(func() {
		if cd.cmd != nil && cd.exited != nil {
			select {
			case <-cd.exited:
			default:
				cd.cmd.Process.Kill()
				<-cd.exited
			}
		}
		for _, pid := range claudeProcs(t, bin, cwd) {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cd.start()

	create := rpc.SessionCreateParams{Title: "e2e kill -9", Harness: "claude", Cwd: cwd,
		Prompt: "E2E-SLOW a turn the daemon will not see end", RequestID: "e2e-k9-1", Environment: env}
	var r rpc.Receipt
	start := time.Now()
	td.accept(t, rpc.MethodSessionCreate, create, &r)
	t.Logf("latency: create -> confirmed receipt %v (child daemon)", time.Since(start).Round(time.Millisecond))
	if r.Submission != rpc.SubmissionConfirmed || !strings.HasPrefix(r.Session.ID, "claude:") {
		t.Fatalf("receipt = %+v", r)
	}
	id := r.Session.ID
	e := &e2eClaude{td: td, mock: mock, env: env}
	e.waitLive(t, id, "slow slow slow")
	claude := waitClaudeProc(t, bin, cwd)

	cd.kill9()
	// The orphaned Claude keeps its own process group (the daemon made it
	// a session leader): kill that group, as an operator would.
	syscall.Kill(-claude, syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for len(claudeProcs(t, bin, cwd)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Claude survived SIGKILL: %v", claudeProcs(t, bin, cwd))
		}
		time.Sleep(20 * time.Millisecond)
	}

	cd.start()
	rd := td.read(t, id)
	if rd.Session.State != rpc.StateFailed {
		t.Fatalf("state after kill -9 = %s", rd.Session.State)
	}
	if res := rd.Result; res == nil || res.ExecutionSeq != 1 || res.Status != rpc.StatusInterrupted || res.Error == nil || res.Error.Code != "daemon_restarted" {
		t.Fatalf("result after kill -9 = %+v", res)
	}

	const prompt = "back after the daemon was killed"
	var r2 rpc.Receipt
	td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: "e2e-k9-2", Resume: true, Environment: env}, &r2)
	if r2.Session.ID != id || r2.ExecutionSeq != 2 || r2.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("resume receipt = %+v", r2)
	}
	resumed := waitClaudeProc(t, bin, cwd)
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(resumed) + "/cmdline")
	if !strings.Contains(string(cmdline), "\x00--resume\x00"+strings.TrimPrefix(id, "claude:")+"\x00") {
		t.Fatalf("resumed Claude argv = %q, want --resume %s", strings.ReplaceAll(string(cmdline), "\x00", " "), id)
	}
	e.expectReply(t, id, r2.Cursor, prompt, 2)
	reqs := e.waitPrompts(t, func(p string) bool { return p == prompt })
	if len(reqs) != 1 {
		t.Fatalf("mock saw the resumed prompt %d times", len(reqs))
	}
	// The resumed request carries the conversation so far (the first
	// prompt was streaming a reply, so it is in the transcript).
	for _, req := range mock.Requests() {
		if req.Kind == mockapi.KindPrompt && req.Prompt == prompt && !strings.Contains(string(req.Body), create.Prompt) {
			t.Fatalf("the resumed request does not carry the interrupted prompt %q", create.Prompt)
		}
	}

	cd.stop()
	deadline = time.Now().Add(30 * time.Second)
	for len(claudeProcs(t, bin, cwd)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Claude processes survived the daemon: %v", claudeProcs(t, bin, cwd))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
