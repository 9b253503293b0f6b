package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/fakeclaude"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// The test binary doubles as the fake Claude Code and as the hook
// forwarder, selected by DLGT_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("DLGT_TEST_ROLE") {
	case "claude":
		os.Exit(fakeclaude.Main(os.Args[1:]))
	case "hook":
		os.Exit(hookMain(os.Args[1:]))
	case "daemon": // a daemon in a child process (crash_test.go)
		os.Exit(childDaemonMain())
	}
	code := m.Run()
	if code == 0 && unexpectedRefusals() {
		code = 1 // a call site made a move the lifecycle does not allow
	}
	os.Exit(code)
}

// hookMain is `dlgt hook --socket S --launch L EVENT` for tests.
func hookMain(args []string) int {
	var socket, launch, event string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--socket":
			i++
			socket = args[i]
		case "--launch":
			i++
			launch = args[i]
		default:
			event = args[i]
		}
	}
	// The production forwarder: it waits for a pending request's answer
	// and prints the decision (hookfwd.Main).
	return hookfwd.Main([]string{"--socket", socket, "--launch", launch, event}, os.Stdin, os.Stdout, os.Stderr)
}

// testDaemon is a daemon running in-process on a private home, with the
// fake Claude as its harness.
type testDaemon struct {
	t      testing.TB
	paths  statedir.Paths
	cancel context.CancelFunc
	done   chan error
	env    map[string]string
	// opts, when set before a start, are the daemon's Options (the hook
	// command and a 2 s stop grace filled in where unset).
	opts Options
	// logTo, when set before a start, receives the daemon's debug log.
	logTo io.Writer
}

func startTestDaemon(t testing.TB) *testDaemon {
	t.Helper()
	return startTestDaemonWith(t, fakeClaudeEnv(t))
}

// fakeClaudeEnv is the client environment of a daemon whose Claude is the
// fake harness (this test binary in its claude role).
func fakeClaudeEnv(t testing.TB) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	script := fmt.Sprintf("#!/bin/sh\nDLGT_TEST_ROLE=claude exec %q \"$@\"\n", exe)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	userHome := filepath.Join(dir, "user")
	os.MkdirAll(userHome, 0o700)
	return map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": userHome, "DLGT_CLAUDE_BIN": bin,
		// The permission_prompt Notification comes 6.5 s after the dialog
		// in the real CLI; at 100 ms it overtook the PermissionRequest
		// hook on a loaded machine and the blocked event had no command.
		"FAKECLAUDE_STARTUP_MS": "20", "FAKECLAUDE_IDLE_MS": "300", "FAKECLAUDE_PERMISSION_NOTIFY_MS": "2000",
		"DLGT_TEST_ROLE": "",
		// Race-built helpers otherwise sleep 1s at exit, and hooks run
		// one process each.
		"GORACE": "atexit_sleep_ms=0",
	}
}

// startTestDaemonWith starts an in-process daemon on a private state
// directory; env is the client environment create and send pass on.
func startTestDaemonWith(t testing.TB, env map[string]string) *testDaemon {
	t.Helper()
	td := newTestDaemon(t, env)
	td.start()
	t.Cleanup(td.stop)
	return td
}

// newTestDaemon is a testDaemon on a private state directory, not started
// yet (set opts or logTo, then start it).
func newTestDaemon(t testing.TB, env map[string]string) *testDaemon {
	t.Helper()
	// Unix socket paths are short; keep the socket near the root.
	sockDir, err := os.MkdirTemp("", "dlgt-t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	p := testPaths(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "d.sock"))
	return &testDaemon{t: t, paths: p, done: make(chan error, 1), env: env}
}

// testPaths resolves the daemon paths of the state directory home and
// the socket socket, as DLGT_HOME and DLGT_SOCKET would.
func testPaths(t testing.TB, home, socket string) statedir.Paths {
	t.Helper()
	p, err := statedir.ResolvePaths(func(k string) string {
		switch k {
		case "DLGT_HOME":
			return home
		case "DLGT_SOCKET":
			return socket
		}
		return ""
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (td *testDaemon) start() {
	td.t.Helper()
	exe, _ := os.Executable()
	ctx, cancel := context.WithCancel(context.Background())
	td.cancel = cancel
	td.done = make(chan error, 1)
	ready := make(chan struct{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch {
	case td.logTo != nil:
		log = slog.New(slog.NewTextHandler(td.logTo, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case testing.Verbose():
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts := td.opts
	if opts.HookCommand == nil {
		opts.HookCommand = []string{"env", "DLGT_TEST_ROLE=hook", exe}
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 2 * time.Second
	}
	go func() {
		td.done <- Run(ctx, Config{Paths: td.paths, Logger: log, Ready: func() { close(ready) }, Options: opts})
	}()
	select {
	case <-ready:
	case err := <-td.done:
		td.t.Fatalf("daemon failed to start: %v", err)
	case <-time.After(20 * time.Second):
		td.t.Fatal("daemon did not start")
	}
}

func (td *testDaemon) stop() {
	if td.cancel == nil {
		return
	}
	td.cancel()
	select {
	case <-td.done:
	case <-time.After(30 * time.Second):
		td.t.Error("daemon did not stop")
	}
	td.cancel = nil
}

// call makes one RPC on a fresh connection and decodes the result.
func (td *testDaemon) call(method string, params, out any) error {
	td.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, td.paths.Socket)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, method, params, out)
}

func (td *testDaemon) mustCall(method string, params, out any) {
	td.t.Helper()
	if err := td.call(method, params, out); err != nil {
		td.t.Fatalf("%s: %v", method, err)
	}
}

// accept makes a session.create or session.send with the real CLIs. A
// harness that starts slowly (a loaded machine) leaves the receipt
// "pending"; repeating the request_id refreshes it, as the contract tells
// a client to, for up to a minute.
func (td *testDaemon) accept(t testing.TB, method string, params any, r *rpc.Receipt) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := td.call(method, params, r); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if r.Submission != rpc.SubmissionPending {
			return
		}
		if time.Now().After(deadline) {
			td.logLiveScreen(t, r.Session.ID)
			return
		}
		t.Logf("%s: receipt pending, refreshing it", method)
	}
}

// logLiveScreen logs a Session's live screen: what a harness that never
// confirmed a prompt was showing.
func (td *testDaemon) logLiveScreen(t testing.TB, id string) {
	t.Helper()
	var doc rpc.FetchDocument
	if err := td.call(rpc.MethodSessionFetch, map[string]any{"session": id, "screen": true}, &doc); err != nil {
		t.Logf("no screen of %s: %v", id, err)
		return
	}
	if len(doc.Sessions) == 1 && doc.Sessions[0].Screen != nil {
		t.Logf("live screen of %s:\n%s", id, strings.Join(doc.Sessions[0].Screen.Live, "\n"))
	}
}

func (td *testDaemon) create(t testing.TB, reqID, prompt string) rpc.Receipt {
	t.Helper()
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "test session", Harness: "claude", Cwd: t.TempDir(), Prompt: prompt,
		RequestID: reqID, Environment: td.env,
	}, &r)
	return r
}

// waitResult long-polls from cursor until the bound execution's result.
func (td *testDaemon) waitResult(t testing.TB, id, cursor string) (*rpc.FetchDocument, rpc.Result) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var doc rpc.FetchDocument
		td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": 10000}, &doc)
		for _, r := range doc.Sessions[0].Results {
			if r.FinalTextComplete == nil || *r.FinalTextComplete {
				return &doc, r
			}
		}
		cursor = doc.Cursor
	}
	t.Fatal("no result within 30s")
	return nil, rpc.Result{}
}

func TestCreateFetchSendStopResume(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "req-1", "hello there")
	if !strings.HasPrefix(r.Session.ID, "claude:") || r.ExecutionSeq != 1 {
		t.Fatalf("receipt = %+v", r)
	}
	if r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("submission = %q, want confirmed", r.Submission)
	}
	doc, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceHook || res.FinalText == nil || *res.FinalText != "MOCK-REPLY: hello there" {
		t.Fatalf("result = %+v text=%q", res, fetchdoc.DerefText(&res))
	}
	if doc.Reason != rpc.ReasonResult {
		t.Fatalf("reason = %q", doc.Reason)
	}
	var types []string
	for _, e := range doc.Sessions[0].Events {
		types = append(types, e.Type)
	}
	want := "session.created,session.ready,session.busy,session.idle"
	if strings.Join(types, ",") != want {
		t.Fatalf("events = %v, want %s", types, want)
	}

	// Replaying the same request id returns the same receipt, replayed.
	var again rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "test session", Harness: "claude", Cwd: r.Session.Cwd, Prompt: "hello there", RequestID: "req-1", Environment: td.env}, &again)
	if !again.Replayed || again.Session.ID != r.Session.ID || again.ExecutionSeq != 1 {
		t.Fatalf("replay = %+v", again)
	}
	// The same id with another payload is refused.
	err := td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "test session", Harness: "claude", Cwd: r.Session.Cwd, Prompt: "other", RequestID: "req-1", Environment: td.env}, nil)
	if !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("different payload: %v", err)
	}

	// A follow-up in the same conversation.
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "second", RequestID: "req-2"}, &r2)
	if r2.ExecutionSeq != 2 || r2.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("send receipt = %+v", r2)
	}
	_, res2 := td.waitResult(t, r.Session.ID, r2.Cursor)
	if *res2.FinalText != "MOCK-REPLY: second" || res2.ExecutionSeq != 2 {
		t.Fatalf("second result = %+v", res2)
	}

	// Stop, then resume by id.
	var stopped rpc.SessionResult
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, &stopped)
	if stopped.Session.State != rpc.StateStopped {
		t.Fatalf("state after stop = %s", stopped.Session.State)
	}
	err = td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "x", RequestID: "req-3"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) {
		t.Fatalf("send to stopped: %v", err)
	}
	var r3 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "after resume", RequestID: "req-4", Resume: true, Environment: td.env}, &r3)
	if r3.Session.ID != r.Session.ID || r3.ExecutionSeq != 3 {
		t.Fatalf("resume receipt = %+v", r3)
	}
	_, res3 := td.waitResult(t, r.Session.ID, r3.Cursor)
	if *res3.FinalText != "MOCK-REPLY: after resume" {
		t.Fatalf("resumed result = %q", *res3.FinalText)
	}
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
	if read.Result == nil || read.Result.ExecutionSeq != 3 || read.Session.State != rpc.StateIdle {
		t.Fatalf("read = %+v", read)
	}
}

func TestConcurrentSendsOneAccepted(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "c-1", "first")
	td.waitResult(t, r.Session.ID, r.Cursor)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "[[slow 500]] go", RequestID: fmt.Sprintf("c-send-%d", i)}, nil)
		}()
	}
	wg.Wait()
	ok, busy := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, rpc.ErrSessionBusy):
			busy++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 1 || busy != 1 {
		t.Fatalf("ok=%d busy=%d, want 1 and 1", ok, busy)
	}
	// The accepted send completes as execution 2 ...
	var read rpc.SessionReadResult
	deadline := time.Now().Add(20 * time.Second)
	for {
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
		if read.Session.State == rpc.StateIdle && read.Result != nil && read.Result.ExecutionSeq == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result for execution 2: %+v", read)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ... and the refused one left no trace: no other execution began.
	var evs []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: r.Session.ID}, &evs)
	var begun []uint64
	for _, e := range evs {
		if e.Type == rpc.EventSessionBusy {
			begun = append(begun, e.ExecutionSeq)
		}
	}
	if len(begun) != 2 || begun[0] != 1 || begun[1] != 2 {
		t.Fatalf("executions begun: %v, want [1 2]", begun)
	}
}

func TestConcurrentIdenticalCreatesOneSession(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	params := rpc.SessionCreateParams{Title: "twin", Harness: "claude", Cwd: cwd, Prompt: "hi", RequestID: "twin-1", Environment: td.env}
	recs := make([]rpc.Receipt, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = td.call(rpc.MethodSessionCreate, params, &recs[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if recs[0].Session.ID != recs[1].Session.ID || recs[0].Replayed == recs[1].Replayed {
		t.Fatalf("receipts = %+v / %+v", recs[0], recs[1])
	}
	var list rpc.SessionListResult
	td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions = %d, want 1", len(list.Sessions))
	}
}

func TestCrashMidTurnFailsWithInterruptedResult(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "crash-1", "[[crash]] now")
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusInterrupted || res.Error == nil {
		t.Fatalf("result = %+v", res)
	}
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
	if read.Session.State != rpc.StateFailed {
		t.Fatalf("state = %s", read.Session.State)
	}
	var evs []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: r.Session.ID}, &evs)
	if last := evs[len(evs)-1]; last.Type != rpc.EventSessionFailed {
		t.Fatalf("last event = %+v", last)
	}
}

func TestTranscriptRecoveryWhenHookHasNoText(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "nr-1", "[[noreply]] quiet")
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceTranscript || res.FinalText == nil || *res.FinalText == "" {
		t.Fatalf("result = %+v", res)
	}
}

// A Stop hook with no text, whose turn the transcript records only after
// the hook ran (its prompt and reply written 400 ms later, as GitHub
// Copilot CLI writes its session log after its agentStop hook): the
// result's text is read once the turn's record lands, not left missing.
func TestTranscriptReplyWrittenAfterStop(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "late-all-1", "hello there")
	td.waitResult(t, r.Session.ID, r.Cursor)
	for i, prompt := range []string{"[[noreply]] [[latetranscript 400]] written after the hook", "[[noreply]] [[latetranscript 700]] [[long 3]] again"} {
		want := mockapi.DefaultText(prompt)
		if i == 1 {
			want = mockapi.Lines("MOCK-LONG", 3)
		}
		var rc rpc.Receipt
		td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: prompt, RequestID: fmt.Sprintf("late-all-%d", i+2)}, &rc)
		_, res := td.waitResult(t, r.Session.ID, rc.Cursor)
		if res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceTranscript || res.FinalText == nil || *res.FinalText != want {
			t.Fatalf("turn %d: result %+v text %q, want %q from the transcript", i+2, res, fetchdoc.DerefText(&res), want)
		}
	}
}

func TestStaleHookChangesNothing(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "st-1", "hi")
	td.waitResult(t, r.Session.ID, r.Cursor)
	var before []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: r.Session.ID}, &before)
	// A Stop for an unknown launch, and one naming another session id.
	stop := json.RawMessage(`{"session_id":"00000000-0000-4000-8000-000000000000","hook_event_name":"Stop","last_assistant_message":"forged"}`)
	var ack struct{ Accepted bool }
	td.mustCall(rpc.MethodHookDeliver, rpc.HookParams{LaunchID: "internal:000000000000", Event: "Stop", Payload: stop}, &ack)
	if ack.Accepted {
		t.Fatal("forged hook accepted")
	}
	var after []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: r.Session.ID}, &after)
	if len(after) != len(before) {
		t.Fatalf("events changed: %d -> %d", len(before), len(after))
	}
}

func TestPermissionPromptBlocksAndIsNotCompletion(t *testing.T) {
	td := startTestDaemon(t)
	var r rpc.Receipt
	no := false
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "ask", Harness: "claude", Cwd: t.TempDir(), Prompt: "[[tool echo hi]] run it",
		RequestID: "perm-1", Environment: td.env, AutoApprove: &no,
		// Claude Code's own default mode is auto; ask for prompts explicitly.
		HarnessOptions: []string{"permission-mode=default"},
	}, &r)
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "cursor": r.Cursor, "until": "result", "wait_ms": 15000}, &doc)
	if doc.Reason != rpc.ReasonBlocked || doc.Sessions[0].Session.State != rpc.StateBlocked {
		t.Fatalf("reason=%s state=%s", doc.Reason, doc.Sessions[0].Session.State)
	}
	if n := len(doc.Sessions[0].Results); n != 0 {
		t.Fatalf("blocked produced %d results", n)
	}
	err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "more", RequestID: "perm-2"}, nil)
	if !errors.Is(err, rpc.ErrSessionBlocked) {
		t.Fatalf("send while blocked: %v", err)
	}
}

func TestDaemonRestartKeepsHistory(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "rs-1", "remember me")
	td.waitResult(t, r.Session.ID, r.Cursor)
	td.stop()
	td.start()
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
	if read.Session.State != rpc.StateStopped || read.Result == nil || *read.Result.FinalText != "MOCK-REPLY: remember me" {
		t.Fatalf("after restart: %+v", read)
	}
	// The receipt survives too.
	var again rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "test session", Harness: "claude", Cwd: read.Session.Cwd, Prompt: "remember me", RequestID: "rs-1", Environment: td.env}, &again)
	if !again.Replayed || again.Session.ID != r.Session.ID {
		t.Fatalf("replay after restart = %+v", again)
	}
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "back", RequestID: "rs-2", Resume: true, Environment: td.env}, &r2)
	_, res := td.waitResult(t, r.Session.ID, r2.Cursor)
	if *res.FinalText != "MOCK-REPLY: back" {
		t.Fatalf("after resume: %q", *res.FinalText)
	}
}
