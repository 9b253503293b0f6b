// Harness evidence: internal.hook deliveries and what they do to a
// Session (ready, busy, blocked, a turn's end with its final text, a
// human's own turn), and the transcript fallback for a final text.

package daemon

import (
	"context"
	"log/slog"

	"github.com/dlgt-dev/dlgt/daemon/toolcalls"
	"github.com/dlgt-dev/dlgt/daemon/transcript"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// hookIntake takes the harnesses' hooks in (internal.hook, or the HTTP
// intake: package hookhttp) and hands each, as evidence, to the
// lifecycle (applyEvidence), after what a hook needs first: its tool
// call logged, the terminal's output drained at a turn's end, the
// transcript waited for (reply.go). It sees the runtime only through
// these functions.
type hookIntake struct {
	log *slog.Logger
	// launched is the Session whose live generation has the launch id.
	launched func(launch string) *session
	// apply is applyEvidence; claimPending is pending.go's.
	apply        func(s *session, launch string, ev harness.Evidence) bool
	claimPending func(launch, event string) string
	// tools is the tool call log, lastEvent the newest lifecycle event's
	// seq (toolevents.go).
	tools     *toolcalls.Log
	lastEvent func() uint64
}

func newHookIntake(rt *runtime) *hookIntake {
	return &hookIntake{
		log: rt.log,
		launched: func(launch string) *session {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			return rt.byLaunch[launch]
		},
		apply: rt.applyEvidence, claimPending: rt.claimPending,
		tools: &rt.tools, lastEvent: rt.db.LastEventSeq,
	}
}

// hookDeliver applies one provider hook callback. Callbacks are keyed by
// the launch id of the generation that injected them: a callback for an
// unknown or older generation, or naming another provider session, is
// logged as a diagnostic and changes nothing. The harness always gets a
// quick success so it never stalls on dlgt.
func (hk *hookIntake) hookDeliver(ctx context.Context, peer rpc.Peer, p rpc.HookParams) (rpc.HookAck, error) {
	ack := rpc.HookAck{Accepted: hk.deliverHook(ctx, p)}
	ack.PendingID = hk.claimPending(p.LaunchID, p.Event)
	return ack, nil
}

// deliverHook applies one hook callback, however it arrived (the hook
// socket's internal.hook, or an HTTP hook: see hookhttp.go), and reports
// whether it moved the Session.
func (hk *hookIntake) deliverHook(ctx context.Context, p rpc.HookParams) bool {
	s := hk.launched(p.LaunchID)
	if s == nil {
		hk.log.Info("hook for an unknown or finished launch ignored", "launch", p.LaunchID, "event", p.Event)
		return false
	}
	ev, err := s.h.ParseHook(p.Event, p.Payload)
	if err != nil {
		hk.log.Warn("malformed hook ignored", "launch", p.LaunchID, "event", p.Event, "err", err)
		return false
	}
	if ev.ToolCall != nil {
		hk.recordToolCall(s, p.LaunchID, ev)
	}
	if ev.Kind == harness.KindStop || ev.Kind == harness.KindStopFailure {
		// Output printed before the turn ended becomes readable no later
		// than its result: take in what the terminal still holds (the
		// hook can arrive before the pump has read it), then commit the
		// pending rows (outside s.mu, which the commit hook takes).
		drainOutput(s, p.LaunchID)
		s.rows.Flush()
	}
	if ev.Kind == harness.KindStop || ev.Kind == harness.KindStopFailure {
		// Its usage and stop reason and, for a Stop that carries none,
		// its text are read from the transcript, which may lag the hook
		// (reply.go): Claude Code's StopFailure too runs before its
		// queued writes of the turn's last messages land.
		hk.awaitTurnEnd(ctx, s, p.LaunchID, &ev)
	}
	return hk.apply(s, p.LaunchID, ev)
}

// drainOutput has launch's pump consume the output its terminal holds
// unread (pty.Process.Drain), if launch is s's live generation.
func drainOutput(s *session, launch string) {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	if g != nil && g.launchID == launch && g.proc != nil {
		g.proc.Drain()
	}
}

// applyEvidence is the single place provider evidence moves a Session.
func (rt *runtime) applyEvidence(s *session, launchID string, ev harness.Evidence) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gen
	if g == nil || g.launchID != launchID {
		rt.log.Info("hook from an old generation ignored", "session", s.rec.ID, "event", ev.Event)
		return false
	}
	if ev.ProviderID != "" && s.rec.ProviderID != "" && ev.ProviderID != s.rec.ProviderID {
		if ev.Kind != harness.KindReady {
			rt.log.Warn("hook for another provider session ignored", "session", s.rec.ID, "event", ev.Event, "provider_id", clipRef(ev.ProviderID))
			return false
		}
	}
	if ev.Transcript != "" {
		if g.transcript == "" {
			g.transcript = ev.Transcript
		}
		rt.tailTranscriptLocked(s, g, ev.Transcript, ev.ProviderID)
	}
	if s.spare != nil {
		return spareEvidenceLocked(s, g, ev)
	}
	e := s.exec
	switch ev.Kind {
	case harness.KindReady:
		if s.rec.State != rpc.StateStarting && s.rec.State != rpc.StateRestarting {
			return false
		}
		if s.rec.ProviderID != "" && ev.ProviderID != "" && ev.ProviderID != s.rec.ProviderID {
			rt.log.Warn("SessionStart names another session id", "want", s.rec.ProviderID, "got", clipRef(ev.ProviderID))
			return false
		}
		if s.rec.ProviderID == "" {
			s.rec.ProviderID = ev.ProviderID
		}
		if s.rec.ProviderID == "" {
			return false
		}
		rt.bindLocked(s)
		rt.transitionLocked(s, stIdle, rpc.Event{Type: rpc.EventSessionReady})
		g.markReady()
		if e != nil {
			// The first prompt went with the launch (harness.LaunchPrompter).
			rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionBusy, ExecutionSeq: e.seq})
		}
		return true
	case harness.KindPromptSubmitted:
		if e == nil {
			return rt.humanTurnLocked(s, ev)
		}
		if e.isConfirmed() {
			return false
		}
		if ev.Prompt != nil && !harness.PromptMatches(*ev.Prompt, e.prompt) {
			rt.log.Info("UserPromptSubmit for another prompt ignored", "session", s.rec.ID)
			return false
		}
		if ev.TurnID != "" && ev.TurnID == s.endedTurnID {
			// Claude Code 2.1.332 runs UserPromptSubmit for a prompt
			// it queued while its previous turn was still ending (its
			// Stop hooks running) with that turn's prompt_id; the
			// transcript and the Stop hook give the queued turn its
			// own. Taken here, the id would find no usage and match
			// no interrupt of this turn: the turn's end names it.
			rt.log.Debug("UserPromptSubmit names the turn that ended; the turn's id is taken from its end", "session", s.rec.ID)
		} else {
			e.turnID = ev.TurnID
		}
		e.confirm()
		return true
	case harness.KindBlocked:
		if e == nil || (s.rec.State != rpc.StateBusy && s.rec.State != rpc.StateBlocked) {
			return false
		}
		if s.rec.State == rpc.StateBlocked {
			if ev.Answerable && s.approvals.Open() == nil {
				// The dialog's Notification came first: what it asks
				// is known now.
				rt.openPendingLocked(s, launchID, ev)
				s.notifyLocked()
			}
			return false // the same dialog reported twice (PermissionRequest, then Notification)
		}
		rt.openPendingLocked(s, launchID, ev)
		rt.transitionLocked(s, stBlocked, rpc.Event{Type: rpc.EventSessionBlocked, ExecutionSeq: e.seq, Reason: ev.Reason, Tool: ev.Tool, Command: ev.Command})
		return true
	case harness.KindActivity:
		if e != nil && s.rec.State == rpc.StateBlocked {
			rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionResumed, ExecutionSeq: e.seq})
			return true
		}
		return false
	case harness.KindStop, harness.KindStopFailure:
		if e == nil || staleEnd(e, ev) {
			return false
		}
		e.confirm()
		if e.turnID == "" {
			e.turnID = ev.TurnID
		}
		if ev.Kind == harness.KindStop {
			text, source := rt.finalText(s, e, ev)
			rt.endTurnLocked(s, rpc.StatusCompleted, text, source, nil)
		} else {
			rt.endTurnLocked(s, rpc.StatusFailed, "", rpc.TextSourceMissing, &rpc.ResultError{Code: "provider_error", Message: ev.Error})
		}
		return true
	case harness.KindIdlePrompt:
		if e != nil && e.canceling {
			rt.endTurnLocked(s, rpc.StatusCanceled, "", rpc.TextSourceMissing, &rpc.ResultError{Code: "canceled", Message: "canceled by request"})
			return true
		}
		return false
	case harness.KindInterrupted:
		// The provider's own report that the turn was interrupted: a
		// cancel's proof, or an interrupt made at the terminal.
		if e == nil || (ev.TurnID != "" && e.turnID != "" && ev.TurnID != e.turnID) || staleEnd(e, ev) {
			return false
		}
		e.confirm()
		rt.log.Debug("turn interrupted", "session", s.rec.ID, "event", ev.Event, "reason", ev.Reason, "canceling", e.canceling)
		status, rerr := rpc.StatusInterrupted, &rpc.ResultError{Code: "interrupted", Message: "the turn was interrupted in the harness"}
		if e.denied {
			rerr.Message = "the tool call was denied (session.respond), and the harness ended the turn as it does on a denial"
		}
		if e.canceling {
			status, rerr = rpc.StatusCanceled, &rpc.ResultError{Code: "canceled", Message: "canceled by request"}
		}
		rt.endTurnLocked(s, status, "", rpc.TextSourceMissing, rerr)
		return true
	case harness.KindInterruptRequested:
		// The harness took the interrupt and reports the turn's end
		// later; until then the turn runs (a send would steer it).
		if e == nil || e.interruptHeard || (ev.TurnID != "" && e.turnID != "" && ev.TurnID != e.turnID) {
			return false
		}
		e.interruptHeard = true
		rt.awaitInterruptEnd(s, g, e, ev)
		return true
	case harness.KindRetrying:
		if e == nil {
			return false
		}
		rt.emitLocked(s, rpc.Event{Type: rpc.EventProviderRetrying, ExecutionSeq: e.seq, Attempt: ev.Attempt})
		return true
	case harness.KindSessionEnd:
		rt.log.Debug("provider session ended", "session", s.rec.ID, "reason", ev.Reason)
		return true // the process exit decides what it means
	}
	return false
}

// staleEnd reports a turn end that names its turn's prompt (Gemini's
// AfterAgent does) and names another than e's: the end of a turn that
// was already closed (a cancel proven by the transcript first), arriving
// after e started and before its prompt was confirmed.
func staleEnd(e *execution, ev harness.Evidence) bool {
	return ev.Prompt != nil && !harness.PromptMatches(*ev.Prompt, e.prompt)
}

// endTurnLocked retains the active execution's result and makes s idle:
// the result, the record and session.idle are stored in one transaction.
// s.mu held.
func (rt *runtime) endTurnLocked(s *session, status, text, source string, rerr *rpc.ResultError) {
	rt.oneTxLocked(s, func() {
		res := rt.finishExecLocked(s, status, text, source, rerr)
		rt.transitionLocked(s, stIdle, rpc.Event{Type: rpc.EventSessionIdle, ExecutionSeq: res.ExecutionSeq, ResultStatus: res.Status})
	})
	rt.dispatchQueuedLocked(s) // a queued send runs next (queue.go)
}

// humanTurnLocked records a turn that someone started at the terminal (an
// attached human typing a prompt): the harness is working, so the Session
// is busy and semantic sends wait, and the turn gets an execution_seq and
// a retained result like any other. s.mu held.
func (rt *runtime) humanTurnLocked(s *session, ev harness.Evidence) bool {
	if s.rec.State != rpc.StateIdle || ev.Prompt == nil {
		return false
	}
	e := s.startExecLocked(*ev.Prompt)
	e.turnID = ev.TurnID
	e.confirm()
	rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionBusy, ExecutionSeq: e.seq})
	return true
}

// bindLocked publishes the provider-qualified id and, the first time,
// announces the Session.
func (rt *runtime) bindLocked(s *session) {
	id := s.rec.Harness + ":" + s.rec.ProviderID
	first := s.rec.ID == ""
	s.rec.ID = id
	rt.mu.Lock()
	rt.byID[id] = s
	rt.mu.Unlock()
	if first {
		rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionCreated})
	}
}

// finalText picks the execution's final text: the hook's own report or
// the reply read back from the transcript (awaitTurnEnd), else whatever
// the transcript holds of the turn now, else nothing.
func (rt *runtime) finalText(s *session, e *execution, ev harness.Evidence) (string, string) {
	if ev.FinalText != nil {
		if ev.TextSource != "" {
			return *ev.FinalText, ev.TextSource // read from the transcript
		}
		return *ev.FinalText, rpc.TextSourceHook
	}
	if r, ok := s.h.(harness.ReplyReader); ok && ev.Transcript != "" {
		if text, ok := transcript.ReadReply(r, ev.Transcript, replyFromLocked(e, ev.Transcript), e.prompt); ok {
			return text, rpc.TextSourceTranscript
		}
	}
	return "", rpc.TextSourceMissing
}
