// Pending requests: what a blocked Session asks (a tool permission the
// harness reported through a hook that takes a decision), session.respond
// that answers it, and internal.hook.decision through which the waiting
// hook forwarder takes the answer back to the harness.
//
// A request is made only from hook evidence (harness.Evidence.Answerable),
// never from the screen. It is waiting until one of: an answer
// (session.respond), or its withdrawal, when the Session leaves blocked
// for any other reason (a person answered the dialog in the terminal, the
// turn was canceled or ended, the process exited), or a person takes the
// terminal's write lease of a harness that draws its dialog only after the
// hook returned (harness.DialogAfterHook: Codex), so that the dialog is
// drawn for them; while a person holds that lease, such a harness's
// requests are not made pending at all. An answer reaches the
// harness only through the hook that asked, so nothing can allow more than
// that one call, and a Session created with auto_approve never asks. A
// harness no hook can answer (harness.KeyAnswerer: Gemini CLI) is answered
// with its dialog's own keys instead, its request made from the hook that
// says the dialog is up and the keys written once the dialog is drawn;
// there, too, a person taking the write lease takes the request over.

package daemon

import (
	"context"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/approvals"
	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// openPendingLocked makes the request ev asks, if the harness takes an
// answer to it and none is open. s.mu held.
func (rt *runtime) openPendingLocked(s *session, launch string, ev harness.Evidence) {
	if !ev.Answerable || s.approvals.Open() != nil {
		return
	}
	ka, keys := s.h.(harness.KeyAnswerer)
	if _, ok := s.h.(harness.Decider); !ok && !keys {
		return
	}
	if s.attach != nil && personOwnsDialog(s.h) {
		// A person holds the terminal: the harness's own dialog is theirs
		// (it appears once the hook returns with no decision; or keys
		// written for an answer would mix with theirs).
		return
	}
	deny := "Deny it (with an optional message for the model)"
	if keys && ka.DenyEndsTurn() {
		deny = "Deny it: the harness declines the call and ends the turn (no message)"
	}
	s.approvals.Ask(approvals.NewPermission(ev.Tool, ev.Input, ev.Event, launch, keys, deny, nowMS()))
}

// personOwnsDialog reports whether a person holding h's terminal takes a
// pending request over: h draws its dialog only once the hook returned
// (harness.DialogAfterHook), or is answered with the dialog's keys
// (harness.KeyAnswerer), which must not mix with the person's.
func personOwnsDialog(h any) bool {
	_, keys := h.(harness.KeyAnswerer)
	return keys || dialogAfterHook(h)
}

// dialogAfterHook reports whether h draws its approval dialog only after
// the hook that asked has returned (harness.DialogAfterHook).
func dialogAfterHook(h any) bool {
	a, ok := h.(harness.DialogAfterHook)
	return ok && a.DialogAfterHook()
}

// holdPendingLocked reports whether s's open request stays open as s moves
// to state to: on session.cancel for a harness whose dialog waits for the
// hook (harness.DialogAfterHook: Codex). While its hook waits, Codex takes
// Esc as the interrupt at once (and ends the hook); a withdrawal first
// would make it draw its overlay, and Esc landing as the overlay appears
// was dropped (the cancel timed out under load). No answer is taken while
// canceling (session.respond needs a blocked Session); the turn's end, or
// the hook ending, withdraws the request. s.mu held.
func holdPendingLocked(s *session, to lifecycleState) bool {
	return to == stCanceling && s.approvals.Open() != nil && dialogAfterHook(s.h)
}

// withdrawForPersonLocked hands the open request to a person who just took
// the terminal's write lease, where the harness shows no dialog while its
// hook waits (Codex): the request is withdrawn, the forwarder returns with
// no decision and the harness draws its dialog for the person. The Session
// stays blocked. A request held while canceling (holdPendingLocked) stays
// held. s.mu held.
func (rt *runtime) withdrawForPersonLocked(s *session) {
	req := s.approvals.Waiting()
	if req == nil || s.rec.State != rpc.StateBlocked || !personOwnsDialog(s.h) {
		return
	}
	id := req.ID()
	s.approvals.Close(approvals.Withdrawn)
	s.notifyLocked()
	rt.log.Info("pending request withdrawn: a person attached to answer it in the terminal", "session", s.rec.ID, "pending", id)
}

// pendingSnapshotLocked is the open request as the Session snapshot shows
// it: only while the Session is blocked and nobody answered it.
func (s *session) pendingSnapshotLocked() *rpc.Pending {
	return s.approvals.Snapshot(s.rec.State == rpc.StateBlocked)
}

// claimPending reports the id of the request launch's event hook just
// opened, once: the forwarder that delivered it waits for its answer.
func (rt *runtime) claimPending(launch, event string) string {
	rt.mu.Lock()
	s := rt.byLaunch[launch]
	rt.mu.Unlock()
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.approvals.Open()
	if p == nil || !p.Claim(launch, event) {
		return ""
	}
	time.AfterFunc(approvals.ClaimGrace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.approvals.Open() == p && p.State() == approvals.Waiting && !p.Waited() {
			s.approvals.Close(approvals.Withdrawn)
			s.notifyLocked()
			rt.log.Info("pending request withdrawn: its hook never waited for the answer", "session", s.rec.ID, "pending", p.ID())
		}
	})
	return p.ID()
}

// hookDecision is internal.hook.decision: it waits up to WaitMS for the
// request's answer. An answer moves the Session back to busy (the harness
// has it now); no answer leaves everything as it is.
func (rt *runtime) hookDecision(ctx context.Context, peer rpc.Peer, p rpc.HookDecisionParams) (rpc.HookDecision, error) {
	wait := time.Duration(p.WaitMS) * time.Millisecond
	if wait < 0 || wait > approvals.MaxDecisionWait {
		return rpc.HookDecision{}, rpc.InvalidField("wait_ms", "must be between 0 and %d", approvals.MaxDecisionWait.Milliseconds())
	}
	rt.mu.Lock()
	s := rt.byLaunch[p.LaunchID]
	rt.mu.Unlock()
	if s == nil {
		return rpc.HookDecision{State: approvals.Withdrawn}, nil
	}
	s.mu.Lock()
	req := s.approvals.Find(p.PendingID)
	if req != nil {
		req.BeginWait()
	}
	s.mu.Unlock()
	if req == nil || req.Launch() != p.LaunchID {
		return rpc.HookDecision{State: approvals.Withdrawn}, nil
	}
	req.Wait(ctx, wait)
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.State() == approvals.Waiting && s.approvals.Open() == req {
		// The forwarder stops waiting (its bound, or it is gone: the
		// harness killed it at its timeout, or canceled the tool): an
		// answer could no longer reach the harness, so the request is
		// withdrawn and the Session stays blocked for a person, as
		// before dlgt could answer.
		s.approvals.Close(approvals.Withdrawn)
		s.notifyLocked()
		rt.log.Info("pending request withdrawn: its hook stopped waiting", "session", s.rec.ID, "pending", req.ID())
	}
	switch req.State() {
	case approvals.Answered:
		if e := s.exec; e != nil && ctx.Err() == nil && s.rec.State == rpc.StateBlocked && s.gen != nil && s.gen.launchID == p.LaunchID {
			rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionResumed, ExecutionSeq: e.seq})
		}
		return rpc.HookDecision{State: approvals.Answered, Output: string(req.Output())}, nil
	}
	return rpc.HookDecision{State: approvals.Withdrawn}, nil
}

// sessionRespond is session.respond.
func (rt *runtime) sessionRespond(ctx context.Context, peer rpc.Peer, p rpc.SessionRespondParams) (rpc.SessionRespondResult, error) {
	if err := approvals.Validate(p); err != nil {
		return rpc.SessionRespondResult{}, err
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return rpc.SessionRespondResult{}, err
	}
	digest := s.uid + "\x00" + approvals.Digest(p)
	rt.respondMu.Lock()
	if rec, ok := rt.responses.Get(p.RequestID); ok {
		rt.respondMu.Unlock()
		if rec.Digest != digest {
			return rpc.SessionRespondResult{}, receipts.ErrDifferentPayload
		}
		res := rec.Result
		res.Session = s.snapshot()
		res.Replayed = true
		return res, nil
	}
	s.mu.Lock()
	res, keys, g, err := rt.answerLocked(s, p, digest)
	id := s.rec.ID
	s.mu.Unlock()
	rt.respondMu.Unlock()
	if err != nil || keys == nil {
		return res, err
	}
	// The dialog's keys (harness.KeyAnswerer), once it is drawn; the
	// harness's own evidence then moves the Session (its tool running, or
	// the turn's end).
	// Written even if the caller goes away meanwhile: the answer was taken.
	if err := s.deliver(context.WithoutCancel(ctx), rt.log, g, keys); err != nil {
		rt.log.Warn("the answer's keys were not all written", "session", id, "pending", res.PendingID, "err", err)
	}
	s.mu.Lock()
	res.Session = s.snapshotLocked(time.Now())
	s.mu.Unlock()
	return res, nil
}

// answerLocked answers s's open request with p: through the waiting hook
// (harness.Decider), or, for a harness answered with its dialog's keys
// (harness.KeyAnswerer), by returning those keys and the generation to
// write them to. rt.respondMu and s.mu held.
func (rt *runtime) answerLocked(s *session, p rpc.SessionRespondParams, digest string) (rpc.SessionRespondResult, []harness.Keystroke, *generation, error) {
	cur, err := s.approvals.ForAnswer(s.rec.ID, string(s.rec.State), p.PendingID)
	if err != nil {
		return rpc.SessionRespondResult{}, nil, nil, err
	}
	var (
		keys   []harness.Keystroke
		g      *generation
		output []byte
	)
	if cur.Keys() {
		// openPendingLocked made cur for a KeyAnswerer.
		var err error
		keys, err = s.h.(harness.KeyAnswerer).AnswerKeys(p.Decision, p.Message)
		if err != nil {
			return rpc.SessionRespondResult{}, nil, nil, err
		}
		if g = s.gen; g == nil || g.launchID != cur.Launch() || g.proc == nil {
			return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the harness process that asked is gone"}
		}
		if e := s.exec; e != nil && p.Decision == rpc.DecisionDeny {
			e.denied = true
		}
	} else {
		d := s.h.(harness.Decider) // openPendingLocked made cur only for a Decider
		out, ok := d.DecisionOutput(cur.Event(), p.Decision, p.Message)
		if !ok {
			return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeInternal, SessionID: s.rec.ID, Message: "the harness takes no decision for " + cur.Event()}
		}
		output = out
	}
	s.approvals.Answer(cur, output)
	rt.log.Info("pending request answered", "session", s.rec.ID, "pending", cur.ID(), "decision", p.Decision, "keys", cur.Keys())
	res := rpc.SessionRespondResult{PendingID: cur.ID(), Decision: p.Decision}
	rt.responses.Put(p.RequestID, approvals.Response{Digest: digest, Result: res})
	s.notifyLocked()
	res.Session = s.snapshotLocked(time.Now())
	return res, keys, g, nil
}
