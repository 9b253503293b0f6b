package daemon

import (
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// Claude Code fires no hook when a turn is interrupted (see the notes in
// harness/claude.go). A cancel is proven by, in order of preference:
// the Stop of a turn that finished first; the interrupt marker in the
// provider transcript (harness.TranscriptSource, tailed since
// SessionStart); the provider's own session status going idle after the
// interrupt key (harness.StatusProber, below), which also covers an
// interrupt so early that the turn leaves no transcript entry; a
// Notification(idle_prompt); or the process exit. Anything else ends in
// CANCEL_TIMEOUT: quiescence is never inferred from silence.

const (
	// interruptPoll is how often the provider status is read while a
	// cancel waits for proof.
	interruptPoll = 50 * time.Millisecond
	// interruptGrace lets a Stop hook or the transcript marker, which
	// say more, land before a status-only proof is applied.
	interruptGrace = 300 * time.Millisecond
	// maxInterruptWatch bounds the watch (it outlives a CANCEL_TIMEOUT:
	// cancellation continues).
	maxInterruptWatch = 10 * time.Minute
)

// interruptEndWait bounds the wait for the turn-end evidence after a
// harness.KindInterruptRequested (Codex writes turn_aborted to its rollout
// within tens of milliseconds of its Interrupt hook). A variable for tests.
var interruptEndWait = 5 * time.Second

// awaitInterruptEnd follows a harness.KindInterruptRequested (Codex's
// Interrupt hook, which runs before Codex has aborted the turn): the
// turn ends on the harness's own end evidence (the rollout's
// turn_aborted, or a Stop that won the race). Should none come within
// interruptEndWait, the hook itself is applied as the interrupt, with a
// warning: the next prompt may then still reach the old turn. It returns
// at once. Called with s.mu held; ev is the hook's evidence.
func (rt *runtime) awaitInterruptEnd(s *session, g *generation, e *execution, ev harness.Evidence) {
	if g == nil {
		return
	}
	id, heard, bound := s.rec.ID, time.Now(), interruptEndWait
	rt.goTracked(func() {
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-e.done:
			rt.log.Debug("turn end recorded after the interrupt hook", "session", id, "after", time.Since(heard).Round(time.Millisecond))
			return
		case <-g.exited:
			return
		case <-t.C:
		}
		s.mu.Lock()
		current := s.exec == e
		s.mu.Unlock()
		if !current {
			return
		}
		rt.log.Warn("the harness recorded no turn end within the bound after its interrupt hook; the hook is taken as the interrupt", "session", id, "event", ev.Event, "bound", bound)
		ev.Kind, ev.Event = harness.KindInterrupted, ev.Event+" (no turn end recorded)"
		rt.applyEvidence(s, g.launchID, ev)
	})
}

// proveInterrupt watches a StatusProber harness's status after the
// interrupt (or dialog dismissal) keys written at since, and applies the
// interrupted evidence to execution e once the provider reports itself
// idle. It returns at once; the watch ends with e, the generation or the
// bound.
func (rt *runtime) proveInterrupt(s *session, g *generation, e *execution, since time.Time) {
	p, ok := s.h.(harness.StatusProber)
	if !ok {
		return
	}
	rt.goTracked(func() {
		tick := time.NewTicker(interruptPoll)
		defer tick.Stop()
		limit := time.NewTimer(maxInterruptWatch)
		defer limit.Stop()
		for {
			select {
			case <-e.done:
				return
			case <-g.exited:
				return
			case <-limit.C:
				return
			case <-tick.C:
			}
			s.mu.Lock()
			path := g.transcript
			s.mu.Unlock()
			if path == "" || !p.IdleSince(path, g.proc.Pid(), since) {
				continue
			}
			select {
			case <-e.done:
				return
			case <-g.exited:
				return
			case <-time.After(interruptGrace):
			}
			s.mu.Lock()
			current, turn := s.exec == e, e.turnID
			s.mu.Unlock()
			if current && turn != "" {
				// The turn id binds the evidence to e inside
				// applyEvidence, whatever ran in between.
				rt.log.Debug("interrupt proven by the provider's session status", "session", s.rec.ID)
				rt.applyEvidence(s, g.launchID, harness.Evidence{Kind: harness.KindInterrupted, Event: "status:idle", TurnID: turn})
			}
			return
		}
	})
}
