package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
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

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// End-to-end scenarios, written once for every harness: an in-process
// daemon (a child daemon for kill -9) hosting the harness, driven only
// through the public RPC. The real CLIs (pinned by .ci/install-harnesses)
// run offline against the loopback mock model servers and are skipped
// when their binaries are absent; the fake Claude always runs.
//
// A harness is an e2eAdapter (how to start it and the few hooks where the
// CLIs differ) and a row of capabilities (e2eCaps); the steps below never
// name a harness. Adding one is adding an adapter to e2eHarnesses.
//
//	go test -race -count=1 -run 'TestE2EScenarios/claude' ./daemon/
//	go test -race -count=1 -run 'TestE2EScenarios/codex/DaemonKill9' ./daemon/

// e2eHarnesses is the table's rows: Claude Code (e2e_claude_test.go),
// Codex (e2e_codex_test.go), Gemini CLI (e2e_gemini_test.go), GitHub
// Copilot CLI (e2e_copilot_test.go) and the fake Claude (e2e_claude_test.go).
var e2eHarnesses = []*e2eAdapter{&e2eClaudeCLI, &e2eClaudeCLIHTTP, &e2eCodexCLI, &e2eGeminiCLI, &e2eCopilotCLI, &e2eFakeClaude,
	warmRow(e2eClaudeCLI), warmRow(e2eCodexCLI), warmRow(e2eCopilotCLI)}

// warmRow is a's row run warm: its conversation's Session is made by a
// create that claims a warm spare (session.warm), and every step after
// it runs on that Session as on a cold one. Claude Code's spare is ready
// on its SessionStart; Codex's reports nothing before its first turn, so
// the claim types the prompt. The harness's own extra steps run in its
// cold row only.
func warmRow(a e2eAdapter) *e2eAdapter {
	a.name += "-warm"
	a.warm, a.extra = true, nil
	return &a
}

// e2eAdapter is one harness under the scenario table.
type e2eAdapter struct {
	name    string // the subtest's name
	harness string // the harness's name in the RPC
	// httpHooks runs the scenario's daemon with DLGT_HOOKS=http.
	httpHooks bool
	// start prepares the harness's model (a mock server scripted for the
	// scenario markers, or the fake's directives) and its environment,
	// without a daemon; it skips t when the CLI is absent.
	start func(t *testing.T) *e2eRig
	// prompt turns a scenario prompt into this harness's: the markers
	// (BIG-PROMPT:, E2E-SLOW, E2E-TOOL, E2E-RUN, E2E-FAIL) are what the mock
	// scripts match; the fake needs [[directives]] instead. Plain
	// prompts are unchanged.
	prompt func(string) string
	// streaming is on the live screen while an E2E-SLOW reply runs.
	streaming string
	// failText is in the error message of an E2E-FAIL turn's result.
	failText string
	// askOptions are the harness options of a Session that asks before
	// running a tool (with auto_approve false).
	askOptions []string
	// runOptions are the harness options of a Session that runs an
	// E2E-RUN tool call without asking.
	runOptions []string
	// toolInput is the JSON of the tool call input the model streams for
	// a shell command (what a tool turn's usage counts).
	toolInput func(command string) string
	// resumed reports whether argv (NUL-separated) is the harness
	// resuming Session id.
	resumed func(argv, id string) bool
	caps    e2eCaps
	// extra are steps only this harness runs, after the table's.
	extra []e2eStep
	// warm: the conversation's create claims a warm spare (warmRow).
	warm bool
}

// e2eCaps is where the harnesses' behaviour differs in what a scenario
// may assert.
type e2eCaps struct {
	// pasteTagged: a large prompt reaches the model wrapped in a paste
	// tag (Claude Code collapses pastes over 800 characters or 2 lines;
	// see harness.unwrapClaudePastes), not as the bare text.
	pasteTagged bool
	// restartUnready: a restarted harness reports nothing before its
	// first turn, so the next receipt may be pending under load (never
	// lost: the PTY buffers the prompt); the result proves the delivery.
	restartUnready bool
	// pasteSaved: a large paste is saved to a file and the model gets
	// `<pasted_content file="F" … />` naming it (Copilot CLI).
	pasteSaved bool
	// resumeCarriesHistory: a resume after kill -9 sends the model the
	// interrupted prompt with the new one (Codex does not always: it may
	// not have written the streaming turn to its rollout yet).
	resumeCarriesHistory bool
}

// e2eRig is one harness environment and, once started, its daemon.
type e2eRig struct {
	td  *testDaemon
	env map[string]string // the client environment create and send pass on
	// mark is NAME=VALUE in env: every process of the harness carries it.
	mark string
	// isHarness reports whether a marked process's argv is the harness
	// itself (not a hook or a tool it runs).
	isHarness func(argv string) bool
	// requests lists every prompt the model received, in order, with
	// what came with it (a request body, or the fake's transcript so far).
	requests func() []e2eRequest
	// textSource is where a completed result's final text comes from
	// (empty: the hook, rpc.TextSourceHook).
	textSource string
}

// e2eClaude is e2eRig under the name other real-CLI tests use.
type e2eClaude = e2eRig

// e2eRequest is one prompt as the model received it.
type e2eRequest struct {
	prompt  string
	context string
}

// mockRequests is requests for a rig whose model is a mock server.
func mockRequests(mock *mockapi.Server) func() []e2eRequest {
	return func() []e2eRequest {
		var out []e2eRequest
		for _, r := range mock.Requests() {
			if r.Kind == mockapi.KindPrompt {
				out = append(out, e2eRequest{prompt: r.Prompt, context: string(r.Body)})
			}
		}
		return out
	}
}

// newE2EMark is a fresh process mark (NAME=VALUE). It registers the
// check that no process carrying it remains; registered before the mock
// and the daemon, that check runs after both are gone.
func newE2EMark(t *testing.T) string {
	t.Helper()
	mark := "DLGT_E2E_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { noMarkedLeft(t, mark, 5*time.Second) })
	return mark
}

// addMark puts mark in env, so that the harness and every process it
// starts carry it.
func addMark(env map[string]string, mark string) {
	name, val, _ := strings.Cut(mark, "=")
	env[name] = val
}

// TestE2EAdaptersComplete: every row fills every hook the steps call, and
// names its subtests uniquely, so a new harness fails here rather than
// with a nil call halfway through a real-CLI run.
func TestE2EAdaptersComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range e2eHarnesses {
		if a.name == "" || seen[a.name] || a.harness == "" {
			t.Errorf("adapter %q (harness %q): empty or repeated name", a.name, a.harness)
		}
		seen[a.name] = true
		if a.start == nil || a.prompt == nil || a.toolInput == nil || a.resumed == nil {
			t.Errorf("%s: a hook is missing", a.name)
		}
		if a.streaming == "" || a.failText == "" {
			t.Errorf("%s: streaming %q and failText %q must say what to look for", a.name, a.streaming, a.failText)
		}
		if a.prompt != nil && a.prompt("a plain prompt") != "a plain prompt" {
			t.Errorf("%s: a plain prompt must reach the harness unchanged", a.name)
		}
	}
	// Every registered harness has a row (its real CLI), so a new one
	// cannot miss the table.
	for _, d := range harness.All() {
		if !seen[d.Name] {
			t.Errorf("registered harness %q has no row named after it in e2eHarnesses", d.Name)
		}
	}
}

func TestE2EScenarios(t *testing.T) {
	for _, a := range e2eHarnesses {
		t.Run(a.name, func(t *testing.T) { runE2EScenarios(t, a) })
	}
}

// e2eScenario is the state the steps share: one daemon, one Session
// continued by every step but the standalone ones.
type e2eScenario struct {
	*e2eRig
	a   *e2eAdapter
	cwd string
	id  string
	seq uint64 // the Session's last execution
}

// next is the next execution's seq and a request_id for it.
func (s *e2eScenario) next() (uint64, string) {
	s.seq++
	return s.seq, fmt.Sprintf("%s-%d", s.a.name, s.seq)
}

// e2eStep is one scenario. A standalone step runs on a Session (or a
// daemon) of its own: it runs even after an earlier step failed, and its
// failure skips nothing.
type e2eStep struct {
	name       string
	standalone bool
	run        func(t *testing.T, s *e2eScenario)
}

func runE2EScenarios(t *testing.T, a *e2eAdapter) {
	rig := a.start(t)
	rig.td = newTestDaemon(t, rig.env)
	rig.td.opts.HTTPHooks = a.httpHooks
	rig.td.start()
	t.Cleanup(rig.td.stop)
	s := &e2eScenario{e2eRig: rig, a: a, cwd: gitRepo(t)}
	failed := ""
	for _, st := range append(append([]e2eStep{}, e2eSteps...), a.extra...) {
		if failed != "" && !st.standalone {
			t.Logf("%s skipped: %s failed and it continues that conversation", st.name, failed)
			continue
		}
		if !t.Run(st.name, func(t *testing.T) { st.run(t, s) }) && failed == "" && !st.standalone {
			failed = st.name
		}
	}
}

// gitRepo is an empty git repository with a dot in its name, where people
// run their agents: a harness may treat it differently from a plain folder
// (Codex asks whether to trust a repository unless told).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo.v1")
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return dir
}

// e2eSteps is the scenario table, in order: every step that is not
// standalone continues the conversation of CreateFetch.
var e2eSteps = []e2eStep{
	{"HarnessAndModels", true, stepHarnessAndModels},
	{"CreateFetch", false, stepCreateFetch},
	{"FollowUp", false, stepFollowUp},
	{"LargeMultiLinePrompt", false, stepLargePrompt},
	{"FirstPromptSizes", true, stepFirstPromptSizes},
	{"FailedTurn", false, stepFailedTurn},
	{"CancelStreaming", false, stepCancelStreaming},
	{"CancelEarly", false, stepCancelEarly},
	{"StopResume", false, stepStopResume},
	{"Restart", false, stepRestart},
	{"PermissionBlocks", true, stepPermissionBlocks},
	{"ToolTurnUsage", true, stepToolTurnUsage},
	{"Worktree", true, stepWorktree},
	{"DaemonKill9", true, stepDaemonKill9},
}

func stepHarnessAndModels(t *testing.T, s *e2eScenario) {
	var hl rpc.HarnessListResult
	s.call(t, rpc.MethodHarnessList, map[string]any{"harness": s.a.harness}, &hl)
	if len(hl.Harnesses) != 1 || hl.Harnesses[0].LifecycleSource != "hooks" || !hl.Harnesses[0].Capabilities.Resume || !hl.Harnesses[0].Capabilities.Cancel {
		t.Fatalf("harness.list = %+v", hl)
	}
	var ml rpc.ModelListResult
	s.call(t, rpc.MethodModelList, map[string]any{"harness": s.a.harness}, &ml)
	if ml.Harness != s.a.harness || len(ml.Models) == 0 || !ml.Models[0].Default {
		t.Fatalf("model.list = %+v", ml)
	}
}

func stepCreateFetch(t *testing.T, s *e2eScenario) {
	const prompt = "hello from the dlgt e2e test"
	seq, reqID := s.next()
	var claimed func() []string
	warm := rpc.SessionWarmParams{Harness: s.a.harness, Cwd: s.cwd, Environment: s.env, Spares: 1}
	if s.a.warm {
		claimed = claims(t)
		w := awaitSpares(t, s.td, warm, 1)
		var list rpc.SessionListResult
		s.call(t, rpc.MethodSessionList, map[string]any{}, &list)
		var evs []rpc.Event
		s.call(t, rpc.MethodEventRead, map[string]any{}, &evs)
		if len(list.Sessions) != 0 || len(evs) != 0 {
			t.Fatalf("the spare is visible: list %+v, events %v", list.Sessions, eventTypes(evs))
		}
		t.Logf("warm spare ready: pid %v, %d KiB resident", w.Pids, w.RSSBytes>>10)
	}
	var r rpc.Receipt
	start := time.Now()
	s.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "e2e " + s.a.name, Harness: s.a.harness, Cwd: s.cwd, Prompt: prompt,
		RequestID: reqID, Environment: s.env,
	}, &r)
	created := time.Since(start)
	if !strings.HasPrefix(r.Session.ID, s.a.harness+":") || r.ExecutionSeq != seq || r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("receipt = %+v", r)
	}
	s.id = r.Session.ID
	if claimed != nil {
		if len(claimed()) != 1 {
			t.Fatalf("the create claimed %d spares, want 1", len(claimed()))
		}
		// The spare that replaced it goes: the steps after this one
		// count the harness processes left, and expect the Session's.
		warm.Spares = 0
		s.call(t, rpc.MethodSessionWarm, warm, &rpc.SessionWarmResult{})
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var st rpc.DaemonStatus
			s.call(t, rpc.DaemonStatusMethod.Name, struct{}{}, &st)
			if st.SparesReady+st.SparesStarting == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("spares left: %+v", st)
			}
		}
	}
	doc, res := s.waitResult(t, s.id, r.Cursor)
	fetched := time.Now()
	if doc.Reason != rpc.ReasonResult {
		t.Fatalf("reason = %q", doc.Reason)
	}
	s.checkText(t, doc, res, s.id, mockapi.DefaultText(prompt), seq)
	s.promptOnce(t, prompt)
	// completed_at_ms is stamped when the Stop hook is applied.
	t.Logf("latency: create -> confirmed receipt %v; Stop hook -> fetch response %v",
		created.Round(time.Millisecond), fetched.Sub(time.UnixMilli(res.CompletedAtMS)).Round(time.Millisecond))
}

func stepFollowUp(t *testing.T, s *e2eScenario) {
	const prompt = "a second question in the same conversation"
	seq, reqID := s.next()
	r := s.send(t, s.id, prompt, reqID)
	s.expectReply(t, s.id, r.Cursor, prompt, seq)
	s.promptOnce(t, prompt)
}

func stepLargePrompt(t *testing.T, s *e2eScenario) {
	prompt := s.a.prompt(bigPrompt(100 << 10))
	seq, reqID := s.next()
	r := s.send(t, s.id, prompt, reqID)
	s.expectText(t, s.id, r.Cursor, "BIG-REPLY", seq)
	got := s.waitPrompts(t, func(p string) bool {
		return strings.Contains(p, "BIG-PROMPT:") || s.a.caps.pasteSaved && strings.HasPrefix(p, "<pasted_content ")
	})
	if len(got) != 1 {
		t.Fatalf("the model saw %d requests with the big prompt, want 1", len(got))
	}
	// The text must arrive byte-exact: bare, or inside one paste tag
	// where the harness tags pastes, or in the file a harness that saves
	// large pastes names.
	inner, ok := got[0], got[0] == prompt
	switch {
	case s.a.caps.pasteTagged:
		inner, ok = unwrapPasteTag(got[0])
	case s.a.caps.pasteSaved:
		inner, ok = readSavedPaste(got[0])
	}
	if !ok || inner != prompt {
		t.Fatalf("the model got %d bytes (unwrapped %v), want the %d-byte prompt byte-exact; head %q tail %q",
			len(got[0]), ok, len(prompt), got[0][:min(len(got[0]), 80)], got[0][max(0, len(got[0])-80):])
	}
}

// stepFirstPromptSizes: a new Session's large multi-line first prompt
// reaches the model byte-exact on both sides of harness.MaxArgPrompt: on
// the harness's command line at or below it (Claude Code, Gemini CLI;
// Codex's first prompt always goes there, up to its own limit), typed
// (pasted) once the harness is ready above it.
func stepFirstPromptSizes(t *testing.T, s *e2eScenario) {
	for _, n := range []int{harness.MaxArgPrompt - 2<<10, harness.MaxArgPrompt + 8<<10} {
		marker := fmt.Sprintf("BIG-PROMPT: a first prompt of %d bytes.", n)
		prompt := s.a.prompt(strings.Replace(bigPrompt(n), "BIG-PROMPT:", marker, 1))
		var r rpc.Receipt
		s.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: "e2e first prompt", Harness: s.a.harness, Cwd: t.TempDir(), Prompt: prompt,
			RequestID: fmt.Sprintf("%s-first-%d", s.a.name, n), Environment: s.env,
		}, &r)
		if r.Submission != rpc.SubmissionConfirmed {
			t.Fatalf("%d bytes: receipt %+v", n, r)
		}
		s.expectText(t, r.Session.ID, r.Cursor, "BIG-REPLY", 1)
		got := s.waitPrompts(t, func(p string) bool { return strings.Contains(p, marker) })
		if len(got) != 1 {
			t.Fatalf("%d bytes: the model saw %d requests with the prompt, want 1", n, len(got))
		}
		inner, ok := got[0], got[0] == prompt
		if !ok && s.a.caps.pasteTagged {
			inner, ok = unwrapPasteTag(got[0])
		}
		if !ok || inner != prompt {
			t.Fatalf("%d bytes: the model got %d bytes (unwrapped %v), want the prompt byte-exact; head %q tail %q",
				n, len(got[0]), ok, got[0][:min(len(got[0]), 80)], got[0][max(0, len(got[0])-80):])
		}
		var stopped rpc.SessionResult
		s.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, &stopped)
	}
}

func stepFailedTurn(t *testing.T, s *e2eScenario) {
	seq, reqID := s.next()
	r := s.send(t, s.id, s.a.prompt("E2E-FAIL please"), reqID)
	_, res := s.waitResult(t, s.id, r.Cursor)
	if res.Status != rpc.StatusFailed || res.ExecutionSeq != seq || res.Error == nil || !strings.Contains(res.Error.Message, s.a.failText) {
		t.Fatalf("result = %+v error %+v, want execution %d failed with %q", res, res.Error, seq, s.a.failText)
	}
}

func stepCancelStreaming(t *testing.T, s *e2eScenario) {
	// The reply is streaming when the interrupt lands.
	seq, reqID := s.next()
	s.send(t, s.id, s.a.prompt("E2E-SLOW cancel me while streaming"), reqID)
	s.waitLive(t, s.id, s.a.streaming)
	s.cancelOK(t, s.id, seq)
	// The Session takes new work after the interrupt, and the
	// interrupted draft does not leak into the next prompt.
	const prompt = "still here after a cancel"
	seq, reqID = s.next()
	r := s.send(t, s.id, prompt, reqID)
	s.expectReply(t, s.id, r.Cursor, prompt, seq)
	s.promptOnce(t, prompt)
}

func stepCancelEarly(t *testing.T, s *e2eScenario) {
	// Canceled as soon as the prompt is confirmed: usually before the
	// first token (Claude Code then rewinds the turn: the prompt goes
	// back to the input box and nothing reaches the transcript).
	seq, reqID := s.next()
	s.send(t, s.id, s.a.prompt("E2E-SLOW cancel me at once"), reqID)
	s.cancelOK(t, s.id, seq)
	// A rewound draft must not leak into the next prompt, and the next
	// prompt must start a turn of its own. (Codex 0.171.0 runs its
	// Interrupt hook before it has aborted the turn; a cancel confirmed on
	// the hook let the next prompt land in the running turn as a steer,
	// "Model interrupted to submit steer instructions", and the model
	// received it twice. dlgt now waits for the rollout's turn_aborted.)
	const prompt = "a clean prompt after an early cancel"
	seq, reqID = s.next()
	r := s.send(t, s.id, prompt, reqID)
	s.expectReply(t, s.id, r.Cursor, prompt, seq)
	s.promptOnce(t, prompt)
}

func stepStopResume(t *testing.T, s *e2eScenario) {
	var stopped rpc.SessionResult
	s.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: s.id}, &stopped)
	if stopped.Session.State != rpc.StateStopped {
		t.Fatalf("state after stop = %s", stopped.Session.State)
	}
	noMarkedLeft(t, s.mark, 3*time.Second)
	const prompt = "back after a resume"
	seq, reqID := s.next()
	var r rpc.Receipt
	s.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: s.id, Prompt: prompt, RequestID: reqID, Resume: true, Environment: s.env}, &r)
	if r.Session.ID != s.id || r.ExecutionSeq != seq || r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("resume receipt = %+v", r)
	}
	s.expectReply(t, s.id, r.Cursor, prompt, seq)
	s.promptOnce(t, prompt)
}

func stepRestart(t *testing.T, s *e2eScenario) {
	before := s.screenEpoch(t, s.id)
	var res rpc.SessionResult
	s.call(t, rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: s.id, Environment: s.env}, &res)
	if res.Session.ID != s.id {
		t.Fatalf("restart changed the id: %s", res.Session.ID)
	}
	if after := s.screenEpoch(t, s.id); after <= before {
		t.Fatalf("screen epoch %d -> %d after restart, want an increase", before, after)
	}
	const prompt = "hello again after a restart"
	seq, reqID := s.next()
	var r rpc.Receipt
	if s.a.caps.restartUnready {
		s.call(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: s.id, Prompt: prompt, RequestID: reqID}, &r)
		if r.Submission != rpc.SubmissionConfirmed {
			t.Logf("receipt after restart was %s", r.Submission)
		}
	} else {
		r = s.send(t, s.id, prompt, reqID)
	}
	if r.Session.ID != s.id || r.ExecutionSeq != seq {
		t.Fatalf("receipt = %+v", r)
	}
	s.expectReply(t, s.id, r.Cursor, prompt, seq)
	s.promptOnce(t, prompt)
}

func stepPermissionBlocks(t *testing.T, s *e2eScenario) {
	cwd := t.TempDir()
	no := false
	var r rpc.Receipt
	s.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "e2e permission", Harness: s.a.harness, Cwd: cwd, Prompt: s.a.prompt("E2E-TOOL please run it"),
		RequestID: s.a.name + "-perm-1", Environment: s.env, AutoApprove: &no, HarnessOptions: s.a.askOptions,
	}, &r)
	if r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("receipt = %+v", r)
	}
	doc := s.fetchUntilResult(t, r.Session.ID, r.Cursor, 30*time.Second)
	if doc.Reason != rpc.ReasonBlocked || doc.Sessions[0].Session.State != rpc.StateBlocked {
		t.Fatalf("reason=%s state=%s events=%+v", doc.Reason, doc.Sessions[0].Session.State, doc.Sessions[0].Events)
	}
	var blocked *rpc.Event
	for i := range doc.Sessions[0].Events {
		if ev := doc.Sessions[0].Events[i]; ev.Type == rpc.EventSessionBlocked {
			blocked = &ev
		}
	}
	if blocked == nil || blocked.Reason != "permission" || blocked.Command != "touch dlgt-e2e-marker" {
		t.Fatalf("blocked event = %+v", blocked)
	}
	if n := len(doc.Sessions[0].Results); n != 0 {
		t.Fatalf("blocked produced %d results", n)
	}
	// Cancel while blocked: the dialog is dismissed (declining the
	// tool), then the turn is interrupted.
	s.cancelOK(t, r.Session.ID, 1)
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-e2e-marker")); err == nil {
		t.Fatal("the declined tool ran")
	}
	var stopped rpc.SessionResult
	s.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, Force: true}, &stopped)
}

// stepToolTurnUsage: a turn with a tool call makes two model requests
// (the tool call, then the reply after the tool result); the result's
// usage sums both, each once, as the mock charged them (Codex also writes
// a token_count event per response).
func stepToolTurnUsage(t *testing.T, s *e2eScenario) {
	cwd := t.TempDir()
	var r rpc.Receipt
	s.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "e2e usage", Harness: s.a.harness, Cwd: cwd, Prompt: s.a.prompt("E2E-RUN run it"),
		RequestID: s.a.name + "-usage-1", Environment: s.env, HarnessOptions: s.a.runOptions,
	}, &r)
	_, res := s.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusCompleted || res.FinalText == nil || *res.FinalText != "AFTER-TOOL" {
		t.Fatalf("result = %+v text %q", res, fetchdoc.DerefText(&res))
	}
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-usage-marker")); err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}
	tool := mockUsage(s.a.toolInput("touch dlgt-usage-marker"))
	reply := mockUsage("AFTER-TOOL")
	want := rpc.Usage{InputTokens: 20, OutputTokens: tool.OutputTokens + reply.OutputTokens, Requests: 2}
	want.TotalTokens = want.InputTokens + want.OutputTokens
	wantUsage(t, "tool turn", &res, want)
	var stopped rpc.SessionResult
	s.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, &stopped)
}

// stepWorktree: a Session created with a worktree runs its shell tool
// call there: the file lands in the worktree, never in the checkout, and
// the result's diff summary and session.diff show it; a removal is
// refused while the file is untracked, and forced it goes.
func stepWorktree(t *testing.T, s *e2eScenario) {
	repo := newGitRepo(t)
	var r rpc.Receipt
	s.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "e2e worktree", Harness: s.a.harness, Cwd: repo, Prompt: s.a.prompt("E2E-RUN run it"),
		RequestID: s.a.name + "-worktree-1", Environment: s.env, HarnessOptions: s.a.runOptions,
		Worktree: &rpc.WorktreeOption{},
	}, &r)
	wt := r.Session.Worktree
	if wt == nil || r.Session.Cwd != wt.Path {
		t.Fatalf("receipt session = %+v", r.Session)
	}
	_, res := s.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v text %q", res, fetchdoc.DerefText(&res))
	}
	if _, err := os.Stat(filepath.Join(wt.Path, "dlgt-usage-marker")); err != nil {
		t.Fatalf("the tool's file is not in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "dlgt-usage-marker")); !os.IsNotExist(err) {
		t.Fatalf("the tool's file is in the checkout: %v", err)
	}
	var diff rpc.SessionDiffResult
	s.call(t, rpc.MethodSessionDiff, rpc.SessionDiffParams{Session: r.Session.ID}, &diff)
	if d := res.Diff; d == nil || d.Files != 1 || d.Committed || !strings.Contains(diff.Diff, "b/dlgt-usage-marker") || diff.Summary.Files != 1 {
		t.Fatalf("result diff %+v; session.diff %+v", res.Diff, diff)
	}
	err := s.td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, RemoveWorktree: true}, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.DirtyFiles != 1 {
		t.Fatalf("removal of a dirty worktree: %v", err)
	}
	var stopped rpc.SessionResult
	s.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, RemoveWorktree: true, Force: true}, &stopped)
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Fatalf("forced removal left %s: %v", wt.Path, err)
	}
}

// toolInputJSON is the JSON encoding of a tool call's input.
func toolInputJSON(input map[string]any) string {
	b, _ := json.Marshal(input)
	return string(b)
}

// startChildFor starts a child daemon (a process of its own, so it can
// be killed) hosting rig e's harness and makes it e's daemon. When the test
// ends the daemon is killed if it still runs, then every marked process.
func startChildFor(t *testing.T, e *e2eRig) (*testDaemon, *childDaemon) {
	t.Helper()
	t.Cleanup(func() { // runs after newChildDaemon's kill of the daemon
		for _, g := range markedGroups(e.mark) {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	})
	td, cd := newChildDaemon(t, e.env)
	cd.start()
	e.td = td
	return td, cd
}

// stepDaemonKill9: a daemon SIGKILLed in the middle of a turn. The next
// daemon on the same home reports the Session failed with an interrupted
// result and keeps its history, and a resume continues the same
// conversation under the same Session id.
func stepDaemonKill9(t *testing.T, s *e2eScenario) {
	e := s.a.start(t)
	td, cd := startChildFor(t, e)
	firstPID := cd.cmd.Process.Pid

	cwd := t.TempDir()
	create := rpc.SessionCreateParams{Title: "e2e kill -9", Harness: s.a.harness, Cwd: cwd,
		Prompt: s.a.prompt("E2E-SLOW a turn the daemon will not see end"), RequestID: s.a.name + "-k9-1", Environment: e.env}
	var r rpc.Receipt
	start := time.Now()
	td.accept(t, rpc.MethodSessionCreate, create, &r)
	t.Logf("latency: create -> confirmed receipt %v (child daemon)", time.Since(start).Round(time.Millisecond))
	if r.Submission != rpc.SubmissionConfirmed || r.ExecutionSeq != 1 || !strings.HasPrefix(r.Session.ID, s.a.harness+":") {
		t.Fatalf("receipt = %+v", r)
	}
	id := r.Session.ID
	// Mid-turn: the slow reply is on the screen.
	e.waitLive(t, id, s.a.streaming)
	if rd := td.read(t, id); rd.Session.State != rpc.StateBusy {
		t.Fatalf("state while streaming = %s", rd.Session.State)
	}
	before := td.events(t, id)
	if len(before) == 0 {
		t.Fatal("no events before the kill")
	}
	e.waitHarness(t, cwd)

	cd.kill9()
	// The orphaned harness keeps its own process group (the daemon made
	// it a session leader): kill every group carrying the mark, as an
	// operator would, until none has been seen for a while. A harness
	// hung up by the daemon's death can still start a hook after a scan
	// found nothing (Claude Code runs SessionEnd in a process group of
	// its own: once, under load, it appeared between two scans).
	deadline := time.Now().Add(30 * time.Second)
	var quiet time.Time
	for {
		ps := markedProcs(e.mark)
		if len(ps) != 0 {
			quiet = time.Time{}
		} else if quiet.IsZero() {
			quiet = time.Now()
		} else if time.Since(quiet) >= 500*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness processes survived SIGKILL: %v", describeMarked(e.mark))
		}
		for _, g := range groupsOf(ps) {
			syscall.Kill(-g, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cd.start()
	if cd.cmd.Process.Pid == firstPID {
		t.Fatal("daemon not restarted")
	}
	rd := td.read(t, id)
	if rd.Session.State != rpc.StateFailed {
		t.Fatalf("state after kill -9 = %s", rd.Session.State)
	}
	checkInterrupted(t, rd, 1, "daemon_restarted")
	// History: the events seen before the kill are kept as they were
	// (any recorded between that read and the kill follow them), then
	// one session.failed for execution 1 with a later seq.
	after := td.events(t, id)
	if len(after) < len(before)+1 {
		t.Fatalf("events %v -> %v", eventTypes(before), eventTypes(after))
	}
	for i := range before {
		if after[i] != before[i] {
			t.Fatalf("history changed at %d: %+v -> %+v", i, before[i], after[i])
		}
	}
	for i := 1; i < len(after); i++ {
		if after[i].Seq <= after[i-1].Seq {
			t.Fatalf("event seq not increasing: %v", after)
		}
	}
	failed := after[len(after)-1]
	if failed.Type != rpc.EventSessionFailed || failed.ExecutionSeq != 1 || failed.SessionID != id {
		t.Fatalf("last event after restart = %+v (events %v)", failed, eventTypes(after))
	}
	if extra := after[len(before) : len(after)-1]; len(extra) > 0 {
		t.Logf("events recorded between the read and the kill: %v", eventTypes(extra))
	}

	const prompt = "back after the daemon was killed"
	var r2 rpc.Receipt
	td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: s.a.name + "-k9-2", Resume: true, Environment: e.env}, &r2)
	if r2.Session.ID != id || r2.ExecutionSeq != 2 || r2.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("resume receipt = %+v", r2)
	}
	doc, res := e.waitResult(t, id, r2.Cursor)
	e.checkText(t, doc, res, id, mockapi.DefaultText(prompt), 2)
	e.promptOnce(t, prompt)
	if rd := td.read(t, id); rd.Session.ID != id || rd.Result == nil || rd.Result.ExecutionSeq != 2 || rd.Result.Status != rpc.StatusCompleted {
		t.Fatalf("read after resume = %+v result %+v", rd.Session, rd.Result)
	}
	// The resumed request carries the conversation so far (the first
	// prompt was streaming a reply, so it is in the transcript).
	for _, req := range e.requests() {
		if req.prompt != prompt {
			continue
		}
		carried := strings.Contains(req.context, create.Prompt)
		if s.a.caps.resumeCarriesHistory && !carried {
			t.Fatalf("the resumed request does not carry the interrupted prompt %q", create.Prompt)
		}
		t.Logf("the resumed request carries the interrupted prompt: %v", carried)
	}
	// The harness now running is the resumed one.
	if argv := e.waitHarness(t, cwd); !s.a.resumed(argv, id) {
		t.Fatalf("the harness runs %q, want it resuming %s", strings.ReplaceAll(argv, "\x00", " "), id)
	}

	cd.stop()
	noMarkedLeft(t, e.mark, 30*time.Second)
}

// call makes one RPC, failing t (which may be a subtest) on error.
func (e *e2eRig) call(t *testing.T, method string, params, out any) {
	t.Helper()
	if err := e.td.call(method, params, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func (e *e2eRig) accept(t *testing.T, method string, params any, r *rpc.Receipt) {
	t.Helper()
	e.td.accept(t, method, params, r)
}

// fetchUntilResult is one session.fetch until:"result" from cursor.
func (e *e2eRig) fetchUntilResult(t *testing.T, id, cursor string, wait time.Duration) rpc.FetchDocument {
	t.Helper()
	var doc rpc.FetchDocument
	e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": wait.Milliseconds()}, &doc)
	return doc
}

// waitResult long-polls from cursor until the bound execution's result.
func (e *e2eRig) waitResult(t *testing.T, id, cursor string) (rpc.FetchDocument, rpc.Result) {
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

// waitPrompts waits until the model has received a prompt matching match
// and returns every matching prompt. A mock records a request just after
// its stream ends, which can be a moment after the harness's Stop hook.
func (e *e2eRig) waitPrompts(t *testing.T, match func(string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got []string
		for _, r := range e.requests() {
			if match(r.prompt) {
				got = append(got, r.prompt)
			}
		}
		if len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPrompt returns how many prompt requests carried prompt exactly.
func (e *e2eRig) waitPrompt(t *testing.T, prompt string) int {
	t.Helper()
	return len(e.waitPrompts(t, func(p string) bool { return p == prompt }))
}

// promptOnce fails t unless the model received prompt exactly once.
func (e *e2eRig) promptOnce(t *testing.T, prompt string) {
	t.Helper()
	if n := e.waitPrompt(t, prompt); n != 1 {
		var all []string
		for _, r := range e.requests() {
			all = append(all, r.prompt[:min(len(r.prompt), 80)])
			if r.prompt == prompt {
				from := max(0, strings.LastIndex(r.context, prompt)-200)
				t.Logf("a request with the prompt: %d bytes; from its last copy of the prompt: %.1200s", len(r.context), r.context[from:])
			}
		}
		t.Fatalf("the model saw the prompt %q %d times, want once (prompts: %q)", prompt, n, all)
	}
}

// send is a session.send that must be confirmed.
func (e *e2eRig) send(t *testing.T, id, prompt, reqID string) rpc.Receipt {
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
func (e *e2eRig) expectReply(t *testing.T, id, cursor, prompt string, seq uint64) rpc.Result {
	t.Helper()
	return e.expectText(t, id, cursor, mockapi.DefaultText(prompt), seq)
}

// expectText waits for the result from cursor and checks it (checkText).
func (e *e2eRig) expectText(t *testing.T, id, cursor, want string, seq uint64) rpc.Result {
	t.Helper()
	doc, res := e.waitResult(t, id, cursor)
	e.checkText(t, doc, res, id, want, seq)
	return res
}

// checkText checks that res, in doc, completed execution seq of Session
// id with the final text want reported by the Stop hook (or where the
// rig's harness reads it), and the usage the mock charged for it.
func (e *e2eRig) checkText(t *testing.T, doc rpc.FetchDocument, res rpc.Result, id, want string, seq uint64) {
	t.Helper()
	source := e.textSource
	if source == "" {
		source = rpc.TextSourceHook
	}
	if res.Status != rpc.StatusCompleted || res.FinalTextSource != source || res.FinalText == nil || *res.FinalText != want || res.ExecutionSeq != seq {
		t.Fatalf("result = %+v text=%q, want %q from the %s for execution %d", res, fetchdoc.DerefText(&res), want, source, seq)
	}
	if got := doc.Sessions[0].Session.ID; got != id {
		t.Fatalf("the result came back on session %q, want %q", got, id)
	}
	wantUsage(t, "result", &res, mockUsage(want))
}

// cancelOK cancels the running execution seq of id and checks it ends
// canceled with the Session idle.
func (e *e2eRig) cancelOK(t *testing.T, id string, seq uint64) {
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

func (e *e2eRig) read(t *testing.T, id string) rpc.SessionReadResult {
	t.Helper()
	var r rpc.SessionReadResult
	e.call(t, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &r)
	return r
}

// waitLive waits until the live screen of id shows substr.
func (e *e2eRig) waitLive(t *testing.T, id, substr string) {
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

func (e *e2eRig) screenEpoch(t *testing.T, id string) uint64 {
	t.Helper()
	var doc rpc.FetchDocument
	e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "screen": true}, &doc)
	if len(doc.Sessions) != 1 || doc.Sessions[0].Screen == nil {
		t.Fatalf("snapshot has no screen: %+v", doc)
	}
	return doc.Sessions[0].Screen.Epoch
}

// waitHarness waits until exactly one harness process (a marked process
// group leader running the harness) works in cwd and returns its argv.
func (e *e2eRig) waitHarness(t *testing.T, cwd string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var found []markedProc
		for _, p := range markedProcs(e.mark) {
			if dir, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.pid), "cwd")); err == nil && dir == cwd && p.pid == p.pgrp && e.isHarness(p.argv) {
				found = append(found, p)
			}
		}
		if len(found) == 1 {
			return found[0].argv
		}
		if time.Now().After(deadline) {
			t.Fatalf("not one harness process in %s: %d of them; marked: %v", cwd, len(found), describeMarked(e.mark))
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// markedProc is a live process whose environment carries a test's mark.
type markedProc struct {
	pid, pgrp int
	argv      string // NUL-separated, as in /proc/PID/cmdline
}

// markedProcs lists the live processes whose environment carries mark
// (every harness of a test and their descendants inherit it), with their
// groups and full command lines.
func markedProcs(mark string) []markedProc {
	var out []markedProc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		// pid (comm) state ppid pgrp ...
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		g, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, markedProc{pid: pid, pgrp: g, argv: string(cmd)})
	}
	return out
}

// describeMarked lists the marked processes for a failure message.
func describeMarked(mark string) []string {
	var out []string
	for _, p := range markedProcs(mark) {
		out = append(out, fmt.Sprintf("pid %d pgrp %d: %.200s", p.pid, p.pgrp, strings.ReplaceAll(p.argv, "\x00", " ")))
	}
	return out
}

// markedGroups lists the process groups of the processes carrying mark,
// never the test's own group.
func markedGroups(mark string) []int { return groupsOf(markedProcs(mark)) }

// groupsOf lists the process groups of ps, never the test's own group.
func groupsOf(ps []markedProc) []int {
	own := syscall.Getpgrp()
	seen := map[int]bool{}
	var out []int
	for _, p := range ps {
		if p.pgrp <= 1 || p.pgrp == own || seen[p.pgrp] {
			continue
		}
		seen[p.pgrp] = true
		out = append(out, p.pgrp)
	}
	return out
}

// noMarkedLeft fails t if any marked process is still alive after a
// grace period.
func noMarkedLeft(t testing.TB, mark string, grace time.Duration) {
	t.Helper()
	deadline := time.Now().Add(grace)
	for {
		left := describeMarked(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("harness processes survived: %v", left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noCodexLeft is noMarkedLeft, under the name the agents tests use.
func noCodexLeft(t testing.TB, mark string, grace time.Duration) {
	t.Helper()
	noMarkedLeft(t, mark, grace)
}
