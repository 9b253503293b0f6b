package daemon

import (
	"github.com/dlgt-dev/dlgt/daemon/approvals"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The Session lifecycle. This file is the only one that writes a
// Session's state (sessionRecord.State): transitionLocked for every change
// that is announced, acceptExecLocked and undoAcceptLocked for the one
// change that counts only once stored, and abandonStateLocked for a
// Session being thrown away. TestOnlyLifecycleWritesState keeps it so.
//
// The table (transitions) is the authority; its main paths, each move
// labelled with the event that announces it:
//
//	starting ─ready→ idle ─busy→ busy ─idle→ idle
//	busy ─blocked→ blocked ─resumed→ busy
//	busy, blocked ─canceling→ canceling ─idle→ idle
//	idle, busy, blocked, stopped, failed ─restarting→ restarting ─ready→ idle
//	every state ─stopping→ stopping ─stopped→ stopped
//	every state ─failed→ failed

// lifecycleState is a Session's state. Its values are the public wire
// strings (rpc.State*), which is also how a record stores them, so records
// written before this type existed load unchanged.
type lifecycleState string

const (
	stStarting   lifecycleState = rpc.StateStarting
	stIdle       lifecycleState = rpc.StateIdle
	stBusy       lifecycleState = rpc.StateBusy
	stBlocked    lifecycleState = rpc.StateBlocked
	stCanceling  lifecycleState = rpc.StateCanceling
	stStopping   lifecycleState = rpc.StateStopping
	stRestarting lifecycleState = rpc.StateRestarting
	stStopped    lifecycleState = rpc.StateStopped
	stFailed     lifecycleState = rpc.StateFailed
)

// terminal reports whether a state can never change again without a
// resume.
func terminal(state lifecycleState) bool {
	return state == stStopped || state == stFailed
}

// transitions is every allowed move: from, to, and the lifecycle event
// that announces it. It is derived from the guards of the call sites
// (named beside each entry); a move they cannot produce is refused.
//
// Three kinds of move are allowed from (nearly) every state, because the
// operations behind them are:
//   - stopping: session.stop (force may stop a launch, restart or
//     cancel; a terminal Session whose process is still there is stopped
//     too; daemon shutdown), and a creation abandoned after its launch;
//   - failed: a harness crash (generationExited), a daemon restart that
//     finds the Session non-terminal (load), a launch that failed
//     (restart, resume), which can come after a forced stop or after the
//     crash was already recorded;
//   - stopped: only from stopping, or again from stopped or failed when a
//     second stop, or a failed launch, finished first.
var transitions = map[lifecycleState]map[lifecycleState]string{
	stStarting: {
		stIdle:     rpc.EventSessionReady, // provider ready evidence
		stStopping: rpc.EventSessionStopping,
		stFailed:   rpc.EventSessionFailed,
	},
	stRestarting: {
		stIdle:     rpc.EventSessionReady, // provider ready evidence
		stStopping: rpc.EventSessionStopping,
		stFailed:   rpc.EventSessionFailed,
	},
	stIdle: {
		stBusy:       rpc.EventSessionBusy, // session.create/send, a launch prompt after ready, a turn typed at the terminal
		stRestarting: rpc.EventSessionRestarting,
		stStopping:   rpc.EventSessionStopping,
		stFailed:     rpc.EventSessionFailed,
	},
	stBusy: {
		stBlocked:    rpc.EventSessionBlocked,   // a permission dialog
		stIdle:       rpc.EventSessionIdle,      // the turn ended (Stop, StopFailure, interrupted)
		stCanceling:  rpc.EventSessionCanceling, // session.cancel
		stRestarting: rpc.EventSessionRestarting,
		stStopping:   rpc.EventSessionStopping,
		stFailed:     rpc.EventSessionFailed,
	},
	stBlocked: {
		stBusy:       rpc.EventSessionResumed, // activity after the dialog
		stIdle:       rpc.EventSessionIdle,
		stCanceling:  rpc.EventSessionCanceling,
		stRestarting: rpc.EventSessionRestarting,
		stStopping:   rpc.EventSessionStopping,
		stFailed:     rpc.EventSessionFailed,
	},
	stCanceling: {
		stIdle:     rpc.EventSessionIdle, // the interrupt's proof, or a turn that finished first
		stStopping: rpc.EventSessionStopping,
		stFailed:   rpc.EventSessionFailed,
	},
	stStopping: {
		stStopping: rpc.EventSessionStopping, // a second, concurrent stop
		stStopped:  rpc.EventSessionStopped,
		stFailed:   rpc.EventSessionFailed, // daemon restart; a launch killed by a forced stop
	},
	stStopped: {
		stRestarting: rpc.EventSessionRestarting,
		stStopping:   rpc.EventSessionStopping,
		stStopped:    rpc.EventSessionStopped,
		stFailed:     rpc.EventSessionFailed,
	},
	stFailed: {
		stRestarting: rpc.EventSessionRestarting,
		stStopping:   rpc.EventSessionStopping,
		stStopped:    rpc.EventSessionStopped,
		stFailed:     rpc.EventSessionFailed,
	},
}

// transitionEvent returns the event type that announces a move from
// from to to, and whether the move is allowed. A state this daemon does
// not know (a damaged record, or one a newer daemon wrote) can only
// fail, as load has always done with it.
func transitionEvent(from, to lifecycleState) (string, bool) {
	next, known := transitions[from]
	if !known {
		return rpc.EventSessionFailed, to == stFailed
	}
	ev, ok := next[to]
	return ev, ok
}

// lifecycleRefused, when set (by the tests), is told of every refused
// move besides the log.
var lifecycleRefused func(uid string, from, to lifecycleState, event string)

// admitLocked reports whether s may move to to, announced by event.
//
// A move the table does not allow is a dlgt bug. It is refused (s keeps
// its state, nothing is stored or announced) and logged as an error, not
// a panic: the caller holds s.mu and has usually already retained a
// result, closed an execution or killed a process, so a panic would take
// the whole daemon and every other Session down, and keeping the old state
// leaves a Session every operation still handles (stop and failure are
// allowed from every state, so nothing stays wedged). The tests count
// refusals and fail the run on any they did not provoke (TestMain).
func (rt *runtime) admitLocked(s *session, to lifecycleState, event string) bool {
	from := s.rec.State
	if want, ok := transitionEvent(from, to); ok && want == event {
		return true
	}
	rt.log.Error("refused a Session state change the lifecycle does not allow (a dlgt bug); the Session keeps its state",
		"session", s.rec.ID, "uid", s.uid, "from", string(from), "to", string(to), "event", event)
	if lifecycleRefused != nil {
		lifecycleRefused(s.uid, from, to, event)
	}
	return false
}

// transitionLocked is how a Session's state changes: if the lifecycle
// allows the move and ev announces it, s moves to to, its record is
// persisted and ev is recorded and observers are woken, all under the one
// critical section (inside oneTxLocked, in one transaction with what the
// caller stored before). It reports whether s moved. s.mu held.
func (rt *runtime) transitionLocked(s *session, to lifecycleState, ev rpc.Event) bool {
	if !rt.admitLocked(s, to, ev.Type) {
		return false
	}
	s.rec.State = to
	if to != stBlocked && !holdPendingLocked(s, to) {
		s.approvals.Close(approvals.Withdrawn)
	}
	rt.persistLocked(s)
	rt.emitLocked(s, ev)
	switch to {
	case stStopping, stStopped, stRestarting, stFailed:
		rt.dropQueuedLocked(s, string(to)) // queue.go
	}
	return true
}

// acceptExecLocked moves an idle s to busy for its new execution e (just
// made by startExecLocked). Unlike every other move it counts only once
// the record is stored: provisional runs first, seeing the Session busy
// (it stores the provisional receipt, which must precede the record); if
// the record cannot be stored the acceptance is undone and the error
// returned, and session.busy is emitted only once it is stored. A refused
// move (s was not idle) is undone too and returns an INTERNAL error.
// s.mu held.
func (rt *runtime) acceptExecLocked(s *session, e *execution, provisional func()) error {
	prev := s.rec.State
	if !rt.admitLocked(s, stBusy, rpc.EventSessionBusy) {
		rt.undoAcceptLocked(s, prev)
		return &rpc.Error{Code: rpc.CodeInternal, SessionID: s.rec.ID, Message: "the Session is " + string(prev) + " and cannot accept work"}
	}
	s.rec.State = stBusy
	provisional()
	if err := rt.persistLocked(s); err != nil {
		rt.undoAcceptLocked(s, prev)
		return err
	}
	rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionBusy, ExecutionSeq: e.seq})
	return nil
}

// undoAcceptLocked takes back an acceptance that never counted: the
// execution startExecLocked made goes, and s returns to the state it had
// (prev). It emits no event: session.busy was never emitted, so no
// observer saw the move, and what the store holds is the record from
// before the acceptance, unless the failed write landed after all, which
// is why the restored record is persisted again (best effort; a write
// queued for retry stores the record as it is when retried, so the
// restored one). s.mu held.
func (rt *runtime) undoAcceptLocked(s *session, prev lifecycleState) {
	s.exec, s.rec.ActiveExec, s.rec.State = nil, nil, prev
	s.rec.LastExecSeq--
	rt.persistLocked(s)
}

// abandonStateLocked marks a Session whose creation failed after its
// launch as stopping, so that generationExited leaves alone the exit of
// the process abandon kills. It stores and announces nothing: discard
// deletes the record next, and the caller is told no Session was
// created. s.mu held.
func (rt *runtime) abandonStateLocked(s *session) {
	if rt.admitLocked(s, stStopping, rpc.EventSessionStopping) {
		s.rec.State = stStopping
	}
}
