package daemon

import (
	"os"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/transcript"
	"github.com/dlgt-dev/dlgt/harness"
)

// transcriptPoll is how often a tailed transcript is checked for growth
// during a turn: what it reports belongs to turns. After a turn the
// interval doubles from transcriptPoll up to transcriptIdlePoll (lines
// the harness writes just after its turn ended are read then), and then
// an idle Session's transcript is not polled at all: it is read again on
// the next change of the Session (a turn starting is one), so between
// turns the tail costs no wake-up. Lines that were in the file before an
// execution started are never taken for its evidence (see transcript.Tail.SkipBefore).
const (
	transcriptPoll     = 100 * time.Millisecond
	transcriptIdlePoll = 2 * time.Second
)

// tailing holds the generations whose transcript is being followed.
var tailing sync.Map // *generation -> struct{}

// tailTranscriptLocked follows the provider transcript named by a hook,
// once per generation and only for harnesses that are a
// harness.TranscriptSource: from the file's end now, lines the harness
// maps to evidence go through applyEvidence under the generation's launch
// id, bound to providerID (the thread whose transcript it is). It stops
// when the generation exits. Called with s.mu held.
func (rt *runtime) tailTranscriptLocked(s *session, g *generation, path, providerID string) {
	src, ok := s.h.(harness.TranscriptSource)
	if !ok || providerID == "" {
		return
	}
	if _, dup := tailing.LoadOrStore(g, struct{}{}); dup {
		return
	}
	var offset int64
	if fi, err := os.Stat(path); err == nil {
		offset = fi.Size()
	}
	started := rt.goTracked(func() {
		defer tailing.Delete(g)
		t := transcript.NewTail(path, offset)
		timer := time.NewTimer(transcriptPoll)
		defer timer.Stop()
		idleWait := time.Duration(0) // the last interval between turns
		for {
			s.mu.Lock()
			if e := s.exec; e != nil {
				t.SkipBefore(e.usagePath, e.usageFrom)
			}
			s.mu.Unlock()
			for _, line := range t.Read() {
				ev := src.ParseTranscriptLine(line)
				if ev.Kind == harness.KindIgnored {
					continue
				}
				ev.ProviderID = providerID
				rt.applyEvidence(s, g.launchID, ev)
			}
			s.mu.Lock()
			wait, changed := transcriptPoll, (<-chan struct{})(nil)
			if s.exec == nil {
				// Doubling; past transcriptIdlePoll, no timer at all.
				changed = s.changed
				wait = min(max(2*idleWait, transcriptPoll), 2*transcriptIdlePoll)
				idleWait = wait
			} else {
				idleWait = 0
			}
			s.mu.Unlock()
			var tick <-chan time.Time
			if wait <= transcriptIdlePoll {
				timer.Reset(wait)
				tick = timer.C
			}
			select {
			case <-g.exited:
				return
			case <-tick:
			case <-changed:
				timer.Stop()
			}
		}
	})
	if !started {
		tailing.Delete(g) // the daemon is closing
	}
}
