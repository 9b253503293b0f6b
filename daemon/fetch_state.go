// The snapshot a fetch document is computed from: what a fetch reads of
// a Session under its locks and then, in one read transaction for the
// whole document, from the store (fetchdoc.State and its reads). The
// document rules (package fetchdoc) are pure functions of it; the fetch code that locks a Session or reads the store for a
// document is here and in the wiring (fetch.go, fetch_all.go,
// fetch_longpoll.go). Nothing is read that the marks say is not there: a
// fetch with nothing new takes no read transaction.

package daemon

import (
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// sessionPub is a Session's change marks as of its last change: what an
// all:true fetch compares with its reader's marks to skip the Session
// without locking it or reading the store.
type sessionPub struct {
	stateful bool   // has a public ID
	created  int64  // creation time (the all:true order)
	event    uint64 // newest event recorded
	result   uint64 // result watermark (sessionMark.Result of the current mark)
}

// publishLocked publishes s's change marks. notifyLocked calls it on
// every change a fetch could observe, before it wakes anyone. s.mu held.
func (s *session) publishLocked() *sessionPub {
	m := s.markLocked()
	p := &sessionPub{stateful: s.rec.ID != "", created: s.rec.CreatedAtMS, event: m.Event, result: m.Result}
	old := s.pub.Swap(p)
	if old == nil || old.stateful != p.stateful || old.created != p.created {
		statefulGen.Add(1) // after the Swap: see statefulCache
	}
	return p
}

// published is s's change marks, published now if nothing was yet.
func (s *session) published() *sessionPub {
	if p := s.pub.Load(); p != nil {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.publishLocked()
}

// coveredBy reports whether an all:true reader at m already has every
// event and result the marks record: then it has nothing to read and no
// gap (retention drops only what was recorded, so nothing beyond m).
func (p *sessionPub) coveredBy(m fetchdoc.Mark) bool {
	return m.TextOff == 0 && m.Event >= p.event && m.Result >= p.result
}

// lockedState takes what s holds in memory, for a reader at from (nil:
// none, as an enumeration; else whether retention dropped an event the
// reader has not read); live takes the live grid too.
func (ft *fetcher) lockedState(s *session, from *fetchdoc.Mark, live bool) *fetchdoc.State {
	ev := eventsEvictedThrough(ft.db)
	s.mu.Lock()
	st := &fetchdoc.State{
		UID: s.uid, Session: s.snapshotLocked(time.Now()), Epoch: s.rec.Epoch, ResetReason: s.rec.ResetReason,
		Cur: s.markLocked(), View: viewLocked(s),
	}
	if from != nil && from.Event < ev {
		st.EventLost = s.events.LostAfter(from.Event, ev)
	}
	s.mu.Unlock()
	st.RowsFirst = s.rows.First()
	if live {
		st.Live = s.liveRows()
	}
	return st
}

// takeStep is the state one evaluation of a position at from needs: a
// delta's events, results and rows, or, when retention overran from, a
// baseline's. It reads the store only when the marks say there is news,
// and then in one read transaction.
func (ft *fetcher) takeStep(s *session, from fetchdoc.Mark, fr *fetchdoc.Req) (*fetchdoc.State, error) {
	st := ft.lockedState(s, &from, fr.Screen)
	rows := fr.Screen && fr.StableCap > 0
	if !st.News(from, rows) {
		return st, nil
	}
	err := ft.db.View(func(r *store.Reader) error {
		if from.Result < st.Cur.Result {
			st.ResultsEvicted = r.ResultsEvictedThrough(s.uid)
		}
		if gaps, top := fetchdoc.Gaps(from, rows, st.Retained()); len(gaps)+len(top) > 0 {
			st.ReadBaseline(r, s.rows, fr)
			return nil
		}
		return st.ReadDelta(r, s.rows, from, fr)
	})
	return st, err
}

// takeBaseline is the state a baseline (a cursorless fetch) needs.
func (ft *fetcher) takeBaseline(s *session, fr *fetchdoc.Req) (*fetchdoc.State, error) {
	st := ft.lockedState(s, nil, fr.Screen)
	err := ft.db.View(func(r *store.Reader) error {
		st.ReadBaseline(r, s.rows, fr)
		return nil
	})
	return st, err
}

// resultAtOrBefore is the newest retained result of s with seq <= lim.
func (ft *fetcher) resultAtOrBefore(s *session, lim uint64) (*rpc.Result, error) {
	stored, ok, err := ft.db.ResultAtOrBefore(s.uid, lim)
	if err != nil {
		return nil, err
	}
	return fetchdoc.DecodeResult(stored, ok)
}
