package daemon

import (
	"context"
	"os"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/daemon/transcript"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Steering (session.send steer): text typed into the running turn, the
// way a person at the TUI does it, for the harnesses that take such text
// into the turn they are running. Measured on the pinned CLIs (docs/
// design.md, "Steering and queueing"): Claude Code 2.1.332 and Codex
// 0.171.0 carry a prompt pasted and submitted during a tool call in the
// turn's next model request (Claude Code in the tool result's user
// message, Codex as a user message after the function call output); the
// turn goes on and ends once, with one result. Gemini CLI 0.61.0 holds it
// for a turn of its own: that is a queue, so its steering capability is
// false and a steer is refused, nothing typed.

// validateSteerQueue checks the steer and queue fields of session.send
// before anything else happens.
func validateSteerQueue(p *rpc.SessionSendParams) error {
	switch {
	case p.Steer != nil && p.Queue:
		return rpc.InvalidField("steer", "steer and queue exclude each other: steer types into the running execution, queue runs after it")
	case (p.Steer != nil || p.Queue) && p.Resume:
		return rpc.InvalidField("resume", "resume starts the Session anew; it cannot steer or queue")
	case p.Steer != nil && p.Steer.ExecutionSeq == 0:
		return rpc.InvalidField("steer.execution_seq", "must name the running execution (a positive execution_seq)")
	}
	return nil
}

// steerConfirmWait bounds the wait for the running execution's own prompt
// to be acknowledged before a steer is typed after it.
var steerConfirmWait = 5 * time.Second

// steer types prompt into execution seq of s, which must be the running
// one, and returns a receipt for that execution (steered:true).
func (rt *runtime) steer(ctx context.Context, s *session, prompt string, seq uint64) (*receipts.Stored, error) {
	// One steer at a time per Session: two pastes must not interleave.
	s.steerMu.Lock()
	defer s.steerMu.Unlock()
	s.mu.Lock()
	e, err := steerableLocked(s, seq)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// The execution's own prompt is typed first: a steer written while
	// it is still being delivered would land in the same draft.
	t := time.NewTimer(steerConfirmWait)
	select {
	case <-e.submitted:
	case <-e.done:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	s.mu.Lock()
	if _, err := steerableLocked(s, seq); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if !e.isConfirmed() {
		id := s.rec.ID
		s.mu.Unlock()
		return nil, &rpc.Error{Code: rpc.CodeSessionBusy, SessionID: id, Message: "execution " + itoa(seq) + "'s own prompt is not acknowledged by the harness yet; nothing was typed: retry the steer"}
	}
	g := s.gen
	cursor := rt.positions.MintSession(s.uid, s.markLocked())
	record := g.transcript
	s.mu.Unlock()
	var from int64
	if fi, err := os.Stat(record); record != "" && err == nil {
		from = fi.Size()
	}

	if err := s.deliver(ctx, rt.log, g, s.h.Submit(prompt)); err != nil {
		s.mu.Lock()
		id := s.rec.ID
		s.mu.Unlock()
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: id, Message: "the steer could not be typed: " + err.Error()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt.emitLocked(s, rpc.Event{Type: rpc.EventExecutionSteered, ExecutionSeq: seq, Reason: rpc.SteerDelivered})
	if record != "" {
		// Announced a second time (execution.steered, reason
		// seen_in_transcript) once the harness's own record holds it.
		rt.goTracked(func() {
			transcript.WatchFor(record, from, prompt, e.done, g.exited, func() {
				s.mu.Lock()
				rt.emitLocked(s, rpc.Event{Type: rpc.EventExecutionSteered, ExecutionSeq: e.seq, Reason: rpc.SteerSeen})
				s.mu.Unlock()
			})
		})
	}
	return &receipts.Stored{SessionUID: s.uid, Receipt: rpc.Receipt{
		Session: s.snapshotLocked(time.Now()), ExecutionSeq: seq, Cursor: rpc.FormatPosition(cursor),
		Submission: rpc.SubmissionConfirmed, Steered: true,
	}}, nil
}

// steerableLocked returns s's active execution if a steer for execution
// seq may be typed into it now, else the typed refusal. s.mu held.
func steerableLocked(s *session, seq uint64) (*execution, error) {
	if !s.h.Info().Capabilities.Steering {
		return nil, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "steer", SessionID: s.rec.ID,
			Message: "steer: " + s.h.Info().Name + " cannot steer a running turn (capabilities.steering is false; it takes text typed during a turn as a turn of its own): nothing was typed; queue it (queue:true) or cancel"}
	}
	e := s.exec
	if e == nil || e.seq != seq {
		active := "none is active"
		if e != nil {
			active = "execution " + itoa(e.seq) + " is active"
		}
		what := "has ended"
		if seq > s.rec.LastExecSeq {
			what = "has not started"
		}
		return nil, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "steer.execution_seq", SessionID: s.rec.ID,
			Message: "steer.execution_seq: execution " + itoa(seq) + " " + what + " (" + active + "): nothing was typed"}
	}
	switch s.rec.State {
	case rpc.StateBusy:
	case rpc.StateBlocked:
		return nil, &rpc.Error{Code: rpc.CodeSessionBlocked, SessionID: s.rec.ID, Message: blockedMessage(s.rec, s.pendingSnapshotLocked()) + "; nothing was typed"}
	case rpc.StateCanceling:
		return nil, &rpc.Error{Code: rpc.CodeSessionBusy, SessionID: s.rec.ID, Message: "execution " + itoa(seq) + " is being canceled: nothing was typed"}
	default:
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(s.rec.State) + ": nothing was typed"}
	}
	if s.attach != nil {
		return nil, &rpc.Error{Code: rpc.CodeSessionAttached, SessionID: s.rec.ID, Message: "a human holds the attach lease; detach first: nothing was typed"}
	}
	if s.gen == nil {
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session has no running harness: nothing was typed"}
	}
	return e, nil
}
