package daemon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// geminiBox is a line of Gemini CLI 0.61.0's shell approval box.
const geminiBox = "Allow execution of"

// TestE2EGeminiRespond: the real Gemini CLI (0.61.0) as a counterpart asks
// to run a shell command in its default approval mode; its Notification
// (ToolPermission) hook makes the request pending, and session.respond
// answers it with the box's own keys. Allow (through the RPC): the command
// runs and the turn completes. A deny with a message is refused (the box
// takes none) and changes nothing; deny (from the CLI): the command does
// not run, the model gets no tool result and the turn ends interrupted,
// saying it was denied. A second answer gets the typed error. A person who
// attaches while the request waits takes it over and answers in the box.
func TestE2EGeminiRespond(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLI")
	}
	rig, mock := geminiRigMock(t, mockapi.Script{
		mockapi.Prefix("RESPOND-TOOL", mockapi.Reply{Tool: "touch dlgt-respond-marker", Text: "AFTER-TOOL"}),
	})
	td := startTestDaemonWith(t, rig.env)
	t.Run("allow", func(t *testing.T) { geminiRespondRound(t, td, mock, rig.env, rpc.DecisionAllow) })
	t.Run("deny", func(t *testing.T) { geminiRespondRound(t, td, mock, rig.env, rpc.DecisionDeny) })
	t.Run("person-attaches", func(t *testing.T) { geminiPersonRound(t, td, rig.env) })
}

// geminiAsk creates a Gemini Session (no auto-approval) whose model asks to
// run `touch dlgt-respond-marker` in a fresh directory, waits until it is
// blocked with the request pending, and returns the Session id, the
// receipt's cursor, the directory and the request.
func geminiAsk(t *testing.T, td *testDaemon, env map[string]string, prompt string) (id, cursor, cwd string, p rpc.Pending) {
	t.Helper()
	r, cwd := createAsking(t, td, rpc.SessionCreateParams{
		Title: "e2e gemini respond", Harness: "gemini", Prompt: prompt,
		RequestID: "gemini-" + strings.ReplaceAll(prompt, " ", "-"), Environment: env,
	})
	id = r.Session.ID
	p = waitPending(t, td, id, r.Cursor, 60*time.Second)
	if p.Kind != rpc.PendingPermission || p.Tool != "run_shell_command" || p.Input != "touch dlgt-respond-marker" || len(p.Options) != 2 {
		t.Fatalf("pending = %+v", p)
	}
	return id, r.Cursor, cwd, p
}

func geminiRespondRound(t *testing.T, td *testDaemon, mock *mockapi.Server, env map[string]string, decision string) {
	prompt := "RESPOND-TOOL " + decision
	id, cursor, cwd, p := geminiAsk(t, td, env, prompt)
	params := rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: decision, RequestID: "gemini-" + decision + "-answer"}
	start := time.Now()
	if decision == rpc.DecisionAllow {
		var res rpc.SessionRespondResult
		mustCallT(t, td, rpc.MethodSessionRespond, params, &res)
		if res.PendingID != p.ID || res.Decision != decision {
			t.Fatalf("respond = %+v", res)
		}
	} else {
		// The box takes no message: refused, and the request still waits.
		withMsg := params
		withMsg.RequestID, withMsg.Message = "gemini-deny-message", "not here"
		if err := td.call(rpc.MethodSessionRespond, withMsg, nil); !errors.Is(err, rpc.ErrInvalidArgument) || !strings.Contains(err.Error(), "no message") {
			t.Fatalf("deny with a message: %v", err)
		}
		var read rpc.SessionReadResult
		mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.State != rpc.StateBlocked || read.Session.Pending == nil || read.Session.Pending.ID != p.ID {
			t.Fatalf("after the refused deny: %+v", read.Session)
		}
		cmd := exec.Command(dlgtBinary(t), "session", "respond", id, "--deny", "-o", "text")
		cmd.Env = append(os.Environ(), "DLGT_SOCKET="+td.paths.Socket, "DLGT_NO_AUTOSTART=1")
		start = time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "denied  "+p.ID+"\n") {
			t.Fatalf("dlgt session respond: %v\n%s", err, out)
		}
		params.RequestID = "cli-" + p.ID + "-deny"
	}
	_, result := td.waitResult(t, id, cursor)
	t.Logf("%s: session.respond -> the turn's end %v", decision, time.Since(start).Round(time.Millisecond))
	checkRespondOutcome(t, decision, result, mock, cwd, prompt, "denied")
	// The box goes (Gemini can record the turn's end before it redraws).
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var base rpc.FetchDocument
		mustCallT(t, td, rpc.MethodSessionFetch, map[string]any{"session": id}, &base)
		live := strings.Join(base.Sessions[0].Screen.Live, "\n")
		if !strings.Contains(live, geminiBox) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the box stayed after the answer:\n%s", live)
		}
	}
	late := params
	late.RequestID, late.Decision = "gemini-"+decision+"-late", rpc.DecisionDeny
	replayAndRefuse(t, td, params, late)
}

// geminiPersonRound: a person takes the terminal's write lease while the
// request waits; it is withdrawn (an answer's keys would mix with theirs),
// the Session stays blocked, a late answer gets the typed error, and the
// person allows in the box with 1.
func geminiPersonRound(t *testing.T, td *testDaemon, env map[string]string) {
	id, cursor, cwd, p := geminiAsk(t, td, env, "RESPOND-TOOL person")
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	var read rpc.SessionReadResult
	mustCallT(t, td, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	if read.Session.Pending != nil || read.Session.State != rpc.StateBlocked {
		t.Fatalf("after the person attached: state %s pending %+v", read.Session.State, read.Session.Pending)
	}
	err = td.call(rpc.MethodSessionRespond, rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: rpc.DecisionAllow, RequestID: "gemini-person-late"}, nil)
	if !errors.Is(err, rpc.ErrSessionUnavailable) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("answer after the person attached: %v", err)
	}
	screenHas(t, td, id, geminiBox)
	if err := td.input(id, w.ack.Token, "1"); err != nil {
		t.Fatal(err)
	}
	_, result := td.waitResult(t, id, cursor)
	if result.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", result)
	}
	if _, err := os.Stat(filepath.Join(cwd, "dlgt-respond-marker")); err != nil {
		t.Fatalf("the command the person allowed did not run: %v", err)
	}
	mustCallT(t, td, rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
}
