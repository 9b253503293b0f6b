package daemon

import (
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// cancelingExec starts an execution on s whose provider turn id is turn
// and marks it canceling, as session.cancel does before the interrupt key.
func cancelingExec(t *testing.T, rt *runtime, s *session, turn string) (*execution, *generation) {
	t.Helper()
	g := &generation{launchID: "internal:interrupt", exited: make(chan struct{})}
	t.Cleanup(func() { close(g.exited) })
	startExec(rt, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen = g
	e := s.exec
	e.turnID = turn
	e.confirm()
	e.canceling = true
	rt.transitionLocked(s, stCanceling, rpc.Event{Type: rpc.EventSessionCanceling, ExecutionSeq: e.seq})
	return e, g
}

func isDone(e *execution) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// Codex's Interrupt hook runs before Codex has aborted the turn: it must
// not end the execution (a prompt sent then would steer the old turn);
// the rollout's turn_aborted for the same turn does.
func TestCodexInterruptHookAwaitsTurnAborted(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "cx")
	e, g := cancelingExec(t, rt, s, "turn-1")

	if !rt.applyEvidence(s, g.launchID, harness.Evidence{Kind: harness.KindInterruptRequested, Event: "Interrupt", TurnID: "turn-1"}) {
		t.Fatal("the Interrupt hook was not accepted")
	}
	if isDone(e) {
		t.Fatal("the Interrupt hook ended the execution")
	}
	s.mu.Lock()
	state, err := s.rec.State, sendableLocked(s)
	s.mu.Unlock()
	if state != rpc.StateCanceling {
		t.Fatalf("state after the Interrupt hook = %s, want canceling", state)
	}
	if re, ok := err.(*rpc.Error); !ok || re.Code != rpc.CodeSessionBusy {
		t.Fatalf("a send while the turn is aborting: %v, want SESSION_BUSY", err)
	}
	// Another turn's abort changes nothing.
	if rt.applyEvidence(s, g.launchID, harness.Evidence{Kind: harness.KindInterrupted, Event: "rollout:turn_aborted", TurnID: "turn-0"}) || isDone(e) {
		t.Fatal("another turn's turn_aborted ended the execution")
	}
	if !rt.applyEvidence(s, g.launchID, harness.Evidence{Kind: harness.KindInterrupted, Event: "rollout:turn_aborted", TurnID: "turn-1", Reason: "interrupted"}) || !isDone(e) {
		t.Fatal("turn_aborted did not end the execution")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.result == nil || e.result.Status != rpc.StatusCanceled || s.rec.State != rpc.StateIdle {
		t.Fatalf("result %+v, state %s; want canceled and idle", e.result, s.rec.State)
	}
}

// With no turn end after the hook, the bounded wait applies the hook
// itself as the interrupt.
func TestCodexInterruptHookFallback(t *testing.T) {
	old := interruptEndWait
	interruptEndWait = 20 * time.Millisecond
	t.Cleanup(func() { interruptEndWait = old })
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "cy")
	e, g := cancelingExec(t, rt, s, "turn-2")
	rt.applyEvidence(s, g.launchID, harness.Evidence{Kind: harness.KindInterruptRequested, Event: "Interrupt", TurnID: "turn-2"})
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the fallback never ended the execution")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.result == nil || e.result.Status != rpc.StatusCanceled || s.rec.State != rpc.StateIdle {
		t.Fatalf("result %+v, state %s; want canceled and idle", e.result, s.rec.State)
	}
}
