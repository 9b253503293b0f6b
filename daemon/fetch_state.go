// The snapshot a fetch document is computed from: what a fetch reads of
// a Session under its locks and then, in one read transaction for the
// whole document, from the store. The document rules (fetch_delta.go,
// fetch_allpage.go, fetch_marks.go, fetch_size.go) are pure functions of
// it; the fetch code that locks a Session or reads the store for a
// document is here and in the wiring (fetch.go, fetch_all.go,
// fetch_longpoll.go). Nothing is read that the marks say is not there: a
// fetch with nothing new takes no read transaction.

package daemon

import (
	"encoding/json"
	"time"

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
func (p *sessionPub) coveredBy(m sessionMark) bool {
	return m.TextOff == 0 && m.Event >= p.event && m.Result >= p.result
}

// sessionState is one Session as one evaluation of a fetch sees it. It
// is taken once (locked, then read) and never changed after: every
// document rule is a function of it and the request.
type sessionState struct {
	uid         string
	session     rpc.Session // the public snapshot
	epoch       uint64
	resetReason string
	live        []string    // the live grid, trailing blank rows dropped (nil: none or not taken)
	cur         sessionMark // everything recorded so far
	rowsFirst   uint64      // oldest stable row retained
	view        sessionView
	eventLost   bool // retention dropped an event of the Session after the reader's mark

	// Read from the store, in the document's one read transaction.
	resultsEvicted uint64         // only when a results gap is possible
	events         []store.Event  // after the reader's mark, at most fetchMaxEvents+1
	results        []store.Result // after the reader's mark, at most fetchMaxResults+1
	rows           []store.Row    // stable rows after the reader's mark, at most the cap+2
	tail           []store.Row    // a baseline's stable tail
	latest         *rpc.Result    // a baseline's result (see readLatest)
	latestEnd      int            // bytes of latest's final_text it may carry (-1: all)
	latestErr      error
	earlier        bool // enumeration: a retained result at or before the mark exists
}

func (st *sessionState) retained() retained {
	return retained{rowsFirst: st.rowsFirst, resultsEvicted: st.resultsEvicted, eventLost: st.eventLost}
}

// lockedState takes what s holds in memory, for a reader at from (nil:
// none, as an enumeration; else whether retention dropped an event the
// reader has not read); live takes the live grid too.
func (rt *runtime) lockedState(s *session, from *sessionMark, live bool) *sessionState {
	ev := eventsEvictedThrough(rt.db)
	s.mu.Lock()
	st := &sessionState{
		uid: s.uid, session: s.snapshotLocked(time.Now()), epoch: s.rec.Epoch, resetReason: s.rec.ResetReason,
		cur: s.markLocked(), view: viewLocked(s),
	}
	if from != nil && from.Event < ev {
		st.eventLost = s.eventLostAfterLocked(from.Event, ev)
	}
	s.mu.Unlock()
	st.rowsFirst = s.rows.First()
	if live {
		st.live = s.liveRows()
	}
	return st
}

// news reports whether a reader at from may have anything to read or a
// gap (rows: it takes stable rows): whether the store must be read.
func (st *sessionState) news(from sessionMark, rows bool) bool {
	c := st.cur
	return st.eventLost || from.Event < c.Event || from.Result < c.Result || from.TextOff > 0 ||
		(rows && (from.Row < c.Row || from.RowOff > 0 || from.Row+1 < st.rowsFirst))
}

// takeStep is the state one evaluation of a position at from needs: a
// delta's events, results and rows, or, when retention overran from, a
// baseline's. It reads the store only when the marks say there is news,
// and then in one read transaction.
func (rt *runtime) takeStep(s *session, from sessionMark, fr *fetchReq) (*sessionState, error) {
	st := rt.lockedState(s, &from, fr.screen)
	rows := fr.screen && fr.stableCap > 0
	if !st.news(from, rows) {
		return st, nil
	}
	err := rt.db.View(func(r *store.Reader) error {
		if from.Result < st.cur.Result {
			st.resultsEvicted = r.ResultsEvictedThrough(s.uid)
		}
		if gaps, top := gapsOf(from, rows, st.retained()); len(gaps)+len(top) > 0 {
			st.readBaseline(r, s.rows, fr)
			return nil
		}
		return st.readDelta(r, s.rows, from, fr)
	})
	return st, err
}

// takeBaseline is the state a baseline (a cursorless fetch) needs.
func (rt *runtime) takeBaseline(s *session, fr *fetchReq) (*sessionState, error) {
	st := rt.lockedState(s, nil, fr.screen)
	err := rt.db.View(func(r *store.Reader) error {
		st.readBaseline(r, s.rows, fr)
		return nil
	})
	return st, err
}

// readDelta reads what lies beyond from, component by component, skipping
// a component the marks say is complete.
func (st *sessionState) readDelta(r *store.Reader, l *store.RowLog, from sessionMark, fr *fetchReq) error {
	if from.Event < st.cur.Event {
		evs, err := r.ReadEvents(from.Event, fetchMaxEvents+1, st.uid)
		if err != nil {
			return err
		}
		st.events = evs
	}
	if from.Result < st.cur.Result || from.TextOff > 0 {
		st.results = r.ListResults(st.uid, from.Result, fetchMaxResults+1)
	}
	if fr.screen && fr.stableCap > 0 && (from.Row < st.cur.Row || from.RowOff > 0) {
		if rows, err := r.Rows(l, from.Row+1, fr.stableCap+2); err == nil {
			st.rows = rows
		}
	}
	return nil
}

// readBaseline reads a baseline's latest result and stable tail.
func (st *sessionState) readBaseline(r *store.Reader, l *store.RowLog, fr *fetchReq) {
	st.readLatest(r, st.cur, nil)
	if fr.screen && fr.stableCap > 0 {
		st.tail, _ = r.RowsBefore(l, st.cur.Row+1, fr.stableCap)
	}
}

// readLatest reads the result a baseline at mark carries: the latest
// retained at or before mark, or, replaying up to upto, the one upto
// delivered in part (then only the part it delivered).
func (st *sessionState) readLatest(r *store.Reader, mark sessionMark, upto *sessionMark) {
	st.latestEnd = -1
	if upto != nil && upto.TextOff > 0 {
		rs := r.ListResults(st.uid, upto.Result, 1)
		if len(rs) == 1 && rs[0].Seq == upto.Result+1 {
			var res rpc.Result
			if json.Unmarshal(rs[0].Data, &res) == nil {
				st.latest, st.latestEnd = &res, upto.TextOff
			}
		}
		return
	}
	lim := mark.Result
	if upto != nil {
		lim = upto.Result
	}
	st.latest, st.latestErr = decodeResult(r.ResultAtOrBefore(st.uid, lim))
}

func decodeResult(stored store.Result, ok bool) (*rpc.Result, error) {
	if !ok {
		return nil, nil
	}
	var res rpc.Result
	if err := json.Unmarshal(stored.Data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// resultAtOrBefore is the newest retained result of s with seq <= lim.
func (rt *runtime) resultAtOrBefore(s *session, lim uint64) (*rpc.Result, error) {
	stored, ok, err := rt.db.ResultAtOrBefore(s.uid, lim)
	if err != nil {
		return nil, err
	}
	return decodeResult(stored, ok)
}
