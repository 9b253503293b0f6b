// Watermarks and gaps: the mark of everything recorded for a Session, and
// the retention overruns a mark has suffered since.

package daemon

import (
	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/store"
)

// eventsEvictedThrough reads the event retention watermark. Tests replace
// it to simulate an overrun without appending 50,000 events.
var eventsEvictedThrough = func(db *store.DB) uint64 { return db.EventsEvictedThrough() }

// markLocked is the watermark of everything recorded for s so far.
// s.mu held.
func (s *session) markLocked() fetchdoc.Mark {
	m := fetchdoc.Mark{Row: s.rows.Committed(), Epoch: s.rec.Epoch, Event: s.lastEvent, Pending: s.pendGen}
	m.Result = s.rec.LastExecSeq
	if s.exec != nil {
		m.Result = s.exec.seq - 1
	}
	return m
}

// noteEventLocked records that s emitted event seq, so a reader can later
// tell whether retention dropped one of this Session's events. s.mu held.
func (s *session) noteEventLocked(seq, evicted uint64) {
	s.eventSeqs = append(s.eventSeqs, seq)
	if len(s.eventSeqs) > 1024 {
		s.eventLostAfterLocked(^uint64(0), evicted)
	}
}

// eventLostAfterLocked reports whether retention dropped an event of s
// with seq > after. s.mu held.
func (s *session) eventLostAfterLocked(after, evicted uint64) bool {
	i := 0
	for i < len(s.eventSeqs) && s.eventSeqs[i] <= evicted {
		s.lostEvent = s.eventSeqs[i]
		i++
	}
	if i > 0 {
		s.eventSeqs = append(s.eventSeqs[:0], s.eventSeqs[i:]...)
	}
	return s.lostEvent > after
}
