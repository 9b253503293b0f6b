package daemon

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// transcriptPoll is how often a tailed transcript is checked for growth
// during a turn: what it reports belongs to turns. After a turn the
// interval doubles from transcriptPoll up to transcriptIdlePoll (lines
// the harness writes just after its turn ended are read then), and then
// an idle Session's transcript is not polled at all: it is read again on
// the next change of the Session (a turn starting is one), so between
// turns the tail costs no wake-up. Lines that were in the file before an
// execution started are never taken for its evidence (see skipBefore).
const (
	transcriptPoll     = 100 * time.Millisecond
	transcriptIdlePoll = 2 * time.Second
)

// maxTranscriptLine bounds one buffered transcript line; longer lines are
// skipped (lifecycle entries are small).
const maxTranscriptLine = 8 << 20

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
		t := &transcriptTail{path: path, offset: offset}
		timer := time.NewTimer(transcriptPoll)
		defer timer.Stop()
		idleWait := time.Duration(0) // the last interval between turns
		for {
			s.mu.Lock()
			if e := s.exec; e != nil {
				t.skipBefore(e.usagePath, e.usageFrom)
			}
			s.mu.Unlock()
			for _, line := range t.read() {
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

// transcriptTail reads complete lines appended to a file.
type transcriptTail struct {
	path    string
	offset  int64
	partial []byte
	skip    bool // dropping an overlong line up to its newline
}

// skipBefore moves past what path held before an execution started,
// when from (the file's size then) is ahead: those lines belong to
// earlier turns, read only now because the tail slept between turns.
func (t *transcriptTail) skipBefore(path string, from int64) {
	if path == t.path && from > t.offset {
		t.offset, t.partial, t.skip = from, nil, false
	}
}

func (t *transcriptTail) read() [][]byte {
	// Most polls find nothing new: one stat, no open, no buffer (a
	// Session is polled ten times a second during a turn).
	fi, err := os.Stat(t.path)
	if err != nil || fi.Size() == t.offset {
		return nil
	}
	if fi.Size() < t.offset {
		// Truncated or replaced: start over at its end.
		t.offset, t.partial, t.skip = fi.Size(), nil, false
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil
	}
	var lines [][]byte
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		t.offset += int64(n)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if !t.skip {
					t.partial = append(t.partial, chunk...)
					if len(t.partial) > maxTranscriptLine {
						t.partial, t.skip = nil, true
					}
				}
				break
			}
			if !t.skip {
				line := append(t.partial, chunk[:i]...)
				if len(line) > 0 {
					lines = append(lines, line)
				}
			}
			t.partial, t.skip = nil, false
			chunk = chunk[i+1:]
		}
		if err != nil || n == 0 {
			return lines
		}
	}
}
