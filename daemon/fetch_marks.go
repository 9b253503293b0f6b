// Watermarks: the mark of everything recorded for a Session (the
// retention overruns a mark has suffered since are fetchdoc.EventLoss).

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
	m := fetchdoc.Mark{Row: s.rows.Committed(), Epoch: s.rec.Epoch, Event: s.lastEvent, Pending: s.approvals.Changes()}
	m.Result = s.rec.LastExecSeq
	if s.exec != nil {
		m.Result = s.exec.seq - 1
	}
	return m
}
