package daemon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// TestE2EClaudeRespond: the real Claude Code (2.1.332) as a counterpart
// asks to run a command; session.respond answers it through its
// PermissionRequest hook. Allow: the command runs and the turn completes;
// deny with a message: the model receives the message as the tool's
// result and the turn completes without running it. Each round logs the
// time from the model's tool call to a long-polling fetch seeing the
// pending request, and from the answer to the harness continuing (its next
// model request). DLGT_RESPOND_ROUNDS sets the rounds (default 1).
func TestE2EClaudeRespond(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLI")
	}
	mark := newE2EMark(t)
	mock, env := e2eClaudeEnv(t, mockapi.Script{
		mockapi.Prefix("RESPOND-TOOL", mockapi.Reply{Tool: "touch dlgt-respond-marker", Text: "AFTER-TOOL", Refused: "REFUSED"}),
	})
	addMark(env, mark)
	td := newTestDaemon(t, env)
	td.start()
	t.Cleanup(td.stop)
	rounds := 1
	if n, err := strconv.Atoi(os.Getenv("DLGT_RESPOND_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	var seen, cont = map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := 0; i < rounds; i++ {
		for _, decision := range []string{rpc.DecisionAllow, rpc.DecisionDeny} {
			a, b := claudeRespondRound(t, td, mock, env, decision, i)
			seen[decision] = append(seen[decision], a)
			cont[decision] = append(cont[decision], b)
		}
	}
	// A person attached answers the dialog while the hook waits: the
	// request is withdrawn, and an answer after that gets the typed error.
	claudePersonRound(t, td, env)
	for _, d := range []string{rpc.DecisionAllow, rpc.DecisionDeny} {
		t.Logf("%s, %d rounds: tool call -> pending seen by a long-polling fetch: median %v (all %v); session.respond -> harness's next model request: median %v (all %v)",
			d, rounds, median(seen[d]), seen[d], median(cont[d]), cont[d])
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func claudeRespondRound(t *testing.T, td *testDaemon, mock *mockapi.Server, env map[string]string, decision string, round int) (seen, cont time.Duration) {
	t.Helper()
	cwd := t.TempDir()
	no := false
	var r rpc.Receipt
	req := "respond-" + decision + "-" + strconv.Itoa(round)
	td.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "e2e respond", Harness: "claude", Cwd: cwd, Prompt: "RESPOND-TOOL " + req,
		RequestID: req, Environment: env, AutoApprove: &no, HarnessOptions: []string{"permission-mode=default"},
	}, &r)
	id := r.Session.ID
	defer func() {
		var stopped rpc.SessionResult
		td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: true}, &stopped)
	}()
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": r.Cursor, "until": "result", "wait_ms": 60000}, &doc)
	fetched := time.Now()
	if doc.Reason != rpc.ReasonBlocked {
		t.Fatalf("reason = %s, events %+v", doc.Reason, doc.Sessions[0].Events)
	}
	p := doc.Sessions[0].Session.Pending
	if p == nil || p.Kind != rpc.PendingPermission || p.Tool != "Bash" || p.Input != "touch dlgt-respond-marker" {
		t.Fatalf("pending = %+v", p)
	}
	toolCall := lastAnswered(mock, "RESPOND-TOOL "+req, mockapi.KindPrompt)
	seen = fetched.Sub(toolCall)
	t.Logf("%s: the model's tool call -> the daemon took the PermissionRequest hook %v -> the blocked fetch returned %v", decision,
		time.UnixMilli(p.AskedAtMS).Sub(toolCall).Round(time.Millisecond), fetched.Sub(time.UnixMilli(p.AskedAtMS)).Round(time.Millisecond))
	// The dialog is on the screen while the hook waits (first answer wins).
	screenHas(t, td, id, "Do you want to proceed?")
	params := rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: decision, RequestID: req + "-answer"}
	const why = "not in this repository, use the sandbox"
	if decision == rpc.DecisionDeny {
		params.Message = why
	}
	var answered time.Time
	if decision == rpc.DecisionDeny {
		// From a shell: `dlgt session respond` reads the Session and
		// answers the request pending now.
		cmd := exec.Command(dlgtBinary(t), "session", "respond", id, "--deny", "--message", why, "-o", "text")
		cmd.Env = append(os.Environ(), "DLGT_SOCKET="+td.paths.Socket, "DLGT_NO_AUTOSTART=1")
		out, err := cmd.CombinedOutput()
		answered = time.Now()
		if err != nil || !strings.HasPrefix(string(out), "denied  "+p.ID+"\n") {
			t.Fatalf("dlgt session respond: %v\n%s", err, out)
		}
		params.RequestID = "cli-" + p.ID + "-deny" // what the command chose
	} else {
		var res rpc.SessionRespondResult
		td.mustCall(rpc.MethodSessionRespond, params, &res)
		answered = time.Now()
		if res.PendingID != p.ID || res.Decision != decision {
			t.Fatalf("respond = %+v", res)
		}
	}
	_, result := td.waitResult(t, id, r.Cursor)
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
		if q.Kind == mockapi.KindToolResult && q.Prompt == "RESPOND-TOOL "+req {
			next = q
		}
	}
	if next.Kind == "" {
		t.Fatal("the model never received the tool's result")
	}
	cont = next.Received.Sub(answered)
	fi, ranErr := os.Stat(filepath.Join(cwd, "dlgt-respond-marker"))
	switch decision {
	case rpc.DecisionAllow:
		if ranErr != nil {
			t.Fatalf("the allowed command did not run: %v", ranErr)
		}
		t.Logf("allow: session.respond -> the command ran (the marker's mtime) %v", fi.ModTime().Sub(answered).Round(time.Millisecond))
	case rpc.DecisionDeny:
		if ranErr == nil {
			t.Fatal("the denied command ran")
		}
		if !strings.Contains(strings.Join(next.ToolResults, "\n"), why) {
			t.Fatalf("the model did not receive the denial: %q", next.ToolResults)
		}
	}
	// Answered once: a late different answer gets the typed error.
	late := params
	late.RequestID, late.Decision, late.Message = req+"-late", rpc.DecisionAllow, ""
	if err := td.call(rpc.MethodSessionRespond, late, nil); !errors.Is(err, rpc.ErrSessionUnavailable) {
		t.Fatalf("late answer: %v", err)
	}
	t.Logf("%s: tool call -> pending visible %v; respond -> next model request %v", decision, seen.Round(time.Millisecond), cont.Round(time.Millisecond))
	return seen, cont
}

// lastAnswered is when the mock finished answering the newest request of
// kind for prompt.
func lastAnswered(mock *mockapi.Server, prompt string, kind mockapi.RequestKind) time.Time {
	var at time.Time
	for _, q := range mock.Requests() {
		if q.Kind == kind && q.Prompt == prompt {
			at = q.Answered
		}
	}
	return at
}

// screenHas waits until the Session's live screen shows text.
func screenHas(t *testing.T, td *testDaemon, id, text string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var base rpc.FetchDocument
		td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id}, &base)
		if strings.Contains(strings.Join(base.Sessions[0].Screen.Live, "\n"), text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q: %q", text, base.Sessions[0].Screen.Live)
		}
	}
}

// stillBlocked reports whether Session id is still blocked after wait.
func stillBlocked(t *testing.T, td *testDaemon, id string, wait time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var read rpc.SessionReadResult
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.State != rpc.StateBlocked {
			return false
		}
	}
	return true
}

func claudePersonRound(t *testing.T, td *testDaemon, env map[string]string) {
	t.Helper()
	cwd := t.TempDir()
	no := false
	var r rpc.Receipt
	td.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "e2e respond person", Harness: "claude", Cwd: cwd, Prompt: "RESPOND-TOOL person",
		RequestID: "respond-person", Environment: env, AutoApprove: &no, HarnessOptions: []string{"permission-mode=default"},
	}, &r)
	id := r.Session.ID
	defer func() {
		var stopped rpc.SessionResult
		td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: true}, &stopped)
	}()
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": r.Cursor, "until": "result", "wait_ms": 60000}, &doc)
	p := doc.Sessions[0].Session.Pending
	if doc.Reason != rpc.ReasonBlocked || p == nil {
		t.Fatalf("reason = %s pending %+v", doc.Reason, p)
	}
	// The hook ends with no decision (its forwarder killed, as at its
	// timeout): Claude Code keeps the dialog for the person, and dlgt
	// withdraws the request, the Session still blocked.
	screenHas(t, td, id, "Do you want to proceed?")
	if err := syscall.Kill(forwarderPID(t, td.paths.HookSocket, "PermissionRequest"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var read rpc.SessionReadResult
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.Pending == nil {
			if read.Session.State != rpc.StateBlocked {
				t.Fatalf("state %s after the hook ended with no decision", read.Session.State)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request stayed pending after its hook ended")
		}
	}
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	screenHas(t, td, id, "Do you want to proceed?")
	// Enter: the highlighted "Yes". Claude Code redraws its dialog after
	// the hook that ended with no decision, and an Enter landing in that
	// redraw can be dropped (on an idle machine, 8 ms after the attach):
	// as a person would, press it again while the Session stays blocked
	// with the dialog on screen.
	for attempt := 1; ; attempt++ {
		if err := td.input(id, w.ack.Token, "\r"); err != nil {
			t.Fatal(err)
		}
		if !stillBlocked(t, td, id, 3*time.Second) {
			break
		}
		if attempt == 5 {
			t.Fatal("the Session stayed blocked after 5 Enters on the dialog")
		}
		t.Logf("the dialog kept its Enter %d; pressing it again", attempt)
		screenHas(t, td, id, "Do you want to proceed?")
	}
	_, result := td.waitResult(t, id, r.Cursor)
	if result.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-respond-marker")); err != nil {
		t.Fatalf("the command the person allowed did not run: %v", err)
	}
	err = td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionDeny, RequestID: "respond-person-late"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("answer after the person's: %v", err)
	}
	td.mustCall(rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
}
