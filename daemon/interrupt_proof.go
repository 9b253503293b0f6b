package daemon

import (
	"time"

	"dlgt/harness"
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
	rt.mu.Lock()
	if rt.closing {
		rt.mu.Unlock()
		return
	}
	rt.wg.Add(1)
	rt.mu.Unlock()
	go func() {
		defer rt.wg.Done()
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
	}()
}
