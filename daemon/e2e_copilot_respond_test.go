package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// GitHub Copilot CLI's approval dialog answered through session.respond:
// the real CLI (no auto-approval) asks before a bash call, the Session is
// blocked with the request pending (tool bash, the command as its input),
// and an allow runs the command and the turn completes with the model's
// reply to its result; a deny declines it at the dialog, which ends the
// turn (interrupted) with the command not run and no result sent.
func TestE2ECopilotRespond(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLI")
	}
	rig, mock := copilotRig(t, mockapi.Script{
		mockapi.Prefix("RESPOND-TOOL", mockapi.Reply{Tool: "touch dlgt-respond-marker", Text: "AFTER-TOOL"}),
	})
	td := startTestDaemonWith(t, rig.env)
	for _, decision := range []string{rpc.DecisionAllow, rpc.DecisionDeny} {
		t.Run(decision, func(t *testing.T) { copilotRespondRound(t, td, mock, rig.env, decision) })
	}
}

func copilotRespondRound(t *testing.T, td *testDaemon, mock *mockapi.Server, env map[string]string, decision string) {
	prompt := "RESPOND-TOOL " + decision
	r, cwd := createAsking(t, td, rpc.SessionCreateParams{
		Title: "e2e copilot respond", Harness: "copilot", Prompt: prompt,
		RequestID: "copilot-respond-" + decision, Environment: env,
	})
	id := r.Session.ID
	p := waitPending(t, td, id, r.Cursor, 90*time.Second)
	if p.Kind != rpc.PendingPermission || p.Tool != "bash" || !strings.Contains(p.Input, "touch dlgt-respond-marker") {
		t.Fatalf("pending = %+v", p)
	}
	params := rpc.SessionRespondParams{Session: id, PendingID: p.ID, Decision: decision, RequestID: "copilot-" + decision + "-answer"}
	if decision == rpc.DecisionDeny {
		// The dialog takes no message: refused, and the request still waits.
		withMsg := params
		withMsg.RequestID, withMsg.Message = "copilot-deny-message", "not here"
		if err := td.call(rpc.MethodSessionRespond, withMsg, nil); !errors.Is(err, rpc.ErrInvalidArgument) || !strings.Contains(err.Error(), "no message") {
			t.Fatalf("deny with a message: %v", err)
		}
	}
	start := time.Now()
	var res rpc.SessionRespondResult
	mustCallT(t, td, rpc.MethodSessionRespond, params, &res)
	if res.PendingID != p.ID || res.Decision != decision {
		t.Fatalf("respond = %+v", res)
	}
	_, result := td.waitResult(t, id, r.Cursor)
	t.Logf("%s: session.respond -> the turn's end %v", decision, time.Since(start).Round(time.Millisecond))
	checkRespondOutcome(t, decision, result, mock, cwd, prompt, "")
}
