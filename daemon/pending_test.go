package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/rpc"
)

// blockedOnTool creates a fake-Claude Session that asks to run command in
// cwd and waits until it is blocked; it returns the Session id and the
// pending request the blocked fetch carried.
func (td *testDaemon) blockedOnTool(t *testing.T, reqID, cwd, command string) (string, rpc.Pending) {
	t.Helper()
	var r rpc.Receipt
	no := false
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "ask", Harness: "claude", Cwd: cwd, Prompt: "[[tool " + command + "]] run it",
		RequestID: reqID, Environment: td.env, AutoApprove: &no,
		HarnessOptions: []string{"permission-mode=default"},
	}, &r)
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "cursor": r.Cursor, "until": "result", "wait_ms": 15000}, &doc)
	if doc.Reason != rpc.ReasonBlocked {
		t.Fatalf("reason = %s", doc.Reason)
	}
	p := doc.Sessions[0].Session.Pending
	if p == nil {
		t.Fatalf("blocked fetch carries no pending request: %+v", doc.Sessions[0].Session)
	}
	return r.Session.ID, *p
}

// waitIdleResult reads the Session until it is idle with a result.
func (td *testDaemon) waitIdleResult(t *testing.T, id string) rpc.SessionReadResult {
	t.Helper()
	var read rpc.SessionReadResult
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		read = rpc.SessionReadResult{}
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.State == rpc.StateIdle && read.Result != nil {
			return read
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result: %+v", read)
		}
	}
}

func TestRespondAllowRunsTheTool(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	id, p := td.blockedOnTool(t, "resp-allow-1", cwd, "touch allowed-marker")
	if !strings.HasPrefix(p.ID, "prq_") || p.Kind != rpc.PendingPermission || p.Tool != "Bash" || p.Input != "touch allowed-marker" || p.AskedAtMS == 0 || len(p.Options) != 2 {
		t.Fatalf("pending = %+v", p)
	}
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	if read.Session.Pending == nil || read.Session.Pending.ID != p.ID {
		t.Fatalf("session.read pending = %+v", read.Session.Pending)
	}
	var res rpc.SessionRespondResult
	params := rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionAllow, RequestID: "answer-1"}
	td.mustCall(rpc.MethodSessionRespond, params, &res)
	if res.PendingID != p.ID || res.Decision != rpc.DecisionAllow || res.Replayed || res.Session.Pending != nil {
		t.Fatalf("respond = %+v", res)
	}
	done := td.waitIdleResult(t, id)
	if done.Result.Status != rpc.StatusCompleted || done.Session.Pending != nil {
		t.Fatalf("after allow: %+v %+v", done.Session, done.Result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "allowed-marker")); err != nil {
		t.Fatalf("the allowed tool did not run: %v", err)
	}
	// The same answer again is a replay, not a second answer.
	var again rpc.SessionRespondResult
	td.mustCall(rpc.MethodSessionRespond, params, &again)
	if !again.Replayed || again.PendingID != p.ID || again.Decision != rpc.DecisionAllow {
		t.Fatalf("replay = %+v", again)
	}
	// The same request_id with another payload is refused.
	other := params
	other.Decision, other.Message = rpc.DecisionDeny, "no"
	if err := td.call(rpc.MethodSessionRespond, other, nil); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("reused request_id: %v", err)
	}
	// A new answer to the answered request, and an answer to an idle Session.
	late := params
	late.RequestID = "answer-2"
	if err := td.call(rpc.MethodSessionRespond, late, nil); !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "already answered") {
		t.Fatalf("late answer: %v", err)
	}
	late.PendingID, late.RequestID = "", "answer-3"
	if err := td.call(rpc.MethodSessionRespond, late, nil); !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "idle") {
		t.Fatalf("answer to an idle Session: %v", err)
	}
	late.PendingID, late.RequestID = "prq_000000000000000000", "answer-4"
	if err := td.call(rpc.MethodSessionRespond, late, nil); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("unknown pending id: %v", err)
	}
}

func TestRespondDenyReachesTheModel(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	id, p := td.blockedOnTool(t, "resp-deny-1", cwd, "touch denied-marker")
	// A pending id that is not the Session's is refused and changes nothing.
	if err := td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: "prq_other", Decision: rpc.DecisionAllow, RequestID: "deny-0"}, nil); !errors.Is(err, rpc.ErrNotFound) || !strings.Contains(err.Error(), p.ID) {
		t.Fatalf("wrong pending id: %v", err)
	}
	for _, bad := range []rpc.SessionRespondParams{
		{Session: id, Decision: "maybe", RequestID: "deny-bad-1"},
		{Session: id, Decision: rpc.DecisionAllow, Message: "why", RequestID: "deny-bad-2"},
		{Session: id, Option: "1", RequestID: "deny-bad-3"},
		{Session: id, Decision: rpc.DecisionDeny},
	} {
		if err := td.call(rpc.MethodSessionRespond, bad, nil); !errors.Is(err, rpc.ErrInvalidArgument) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	if read.Session.State != rpc.StateBlocked || read.Session.Pending == nil || read.Session.Pending.ID != p.ID {
		t.Fatalf("refused answers changed the Session: %+v", read.Session)
	}
	var res rpc.SessionRespondResult
	td.mustCall(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, Decision: rpc.DecisionDeny, Message: "not in this repository", RequestID: "deny-1"}, &res)
	if res.PendingID != p.ID || res.Decision != rpc.DecisionDeny {
		t.Fatalf("respond = %+v", res)
	}
	done := td.waitIdleResult(t, id)
	if done.Result.Status != rpc.StatusCompleted || done.Result.FinalText == nil || *done.Result.FinalText != "MOCK-DENIED: not in this repository" {
		t.Fatalf("after deny: %+v text %q", done.Result, fetchdoc.DerefText(done.Result))
	}
	if _, err := os.Stat(filepath.Join(cwd, "denied-marker")); err == nil {
		t.Fatal("the denied tool ran")
	}
}

// A person who answers the dialog in the terminal withdraws the request:
// a later answer through session.respond gets the typed error.
func TestRespondAfterPersonAnsweredIsWithdrawn(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	id, p := td.blockedOnTool(t, "resp-person-1", cwd, "touch person-marker")
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var base rpc.FetchDocument
		td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id}, &base)
		if strings.Contains(strings.Join(base.Sessions[0].Screen.Live, "\n"), "Do you want to proceed?") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dialog never drawn: %q", base.Sessions[0].Screen.Live)
		}
	}
	if err := td.input(id, w.ack.Token, "\r"); err != nil {
		t.Fatal(err)
	}
	done := td.waitIdleResult(t, id)
	if done.Result.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", done.Result)
	}
	err = td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionDeny, RequestID: "late-1"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("late answer: %v", err)
	}
	td.mustCall(rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
}

// A forwarder that stops waiting (the harness killed it at its hook
// timeout, or it died) withdraws the request: the Session stays blocked
// for a person, with no pending request an answer could be lost on.
func TestRespondForwarderGoneWithdraws(t *testing.T) {
	td := startTestDaemon(t)
	id, p := td.blockedOnTool(t, "resp-gone-1", t.TempDir(), "touch gone-marker")
	pid := forwarderPID(t, td.paths.HookSocket, "PermissionRequest")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var read rpc.SessionReadResult
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		read = rpc.SessionReadResult{} // decoding leaves an absent field as it was
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.Pending == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending stayed after its forwarder died: %+v", read.Session)
		}
	}
	if read.Session.State != rpc.StateBlocked {
		t.Fatalf("state = %s, want blocked (the dialog is still there)", read.Session.State)
	}
	err := td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionAllow, RequestID: "gone-1"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("answer after the forwarder died: %v", err)
	}
	err = td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, Decision: rpc.DecisionAllow, RequestID: "gone-2"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "attach") {
		t.Fatalf("answer to a blocked Session with nothing pending: %v", err)
	}
}

// forwarderPID finds the hook forwarder of event running against socket.
func forwarderPID(t *testing.T, socket, event string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
			if err != nil {
				continue
			}
			argv := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
			if len(argv) > 2 && argv[len(argv)-1] == event && strings.Contains(string(cmd), "\x00"+socket+"\x00") {
				return pid
			}
		}
	}
	t.Fatalf("no %s forwarder on %s", event, socket)
	return 0
}

// A send to a blocked Session is SESSION_BLOCKED saying what it waits for
// and the commands that answer it.
func TestBlockedSendSaysHowToAnswer(t *testing.T) {
	td := startTestDaemon(t)
	id, p := td.blockedOnTool(t, "blocked-send-1", t.TempDir(), "touch x")
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	alias := read.Session.Alias
	err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "more", RequestID: "blocked-send-2"}, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeSessionBlocked || alias == "" {
		t.Fatalf("send to a blocked Session: %v (alias %q)", err, alias)
	}
	for _, want := range []string{"permission to run " + p.Tool, "dlgt session read " + alias + " -o text", "dlgt session respond " + alias + " --allow", "dlgt session attach " + alias} {
		if !strings.Contains(re.Message, want) {
			t.Fatalf("message %q lacks %q", re.Message, want)
		}
	}
}
