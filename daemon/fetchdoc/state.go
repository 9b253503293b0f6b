// The snapshot a document is computed from.

package fetchdoc

import (
	"encoding/json"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// sessionState is one Session as one evaluation of a fetch sees it. It
// is taken once (locked, then read) and never changed after: every
// document rule is a function of it and the request.
type State struct {
	UID         string
	Session     rpc.Session // the public snapshot
	Epoch       uint64
	ResetReason string
	Live        []string // the live grid, trailing blank rows dropped (nil: none or not taken)
	Cur         Mark     // everything recorded so far
	RowsFirst   uint64   // oldest stable row retained
	View        View
	EventLost   bool // retention dropped an event of the Session after the reader's mark

	// Read from the store, in the document's one read transaction.
	ResultsEvicted uint64         // only when a results gap is possible
	Events         []store.Event  // after the reader's mark, at most fetchMaxEvents+1
	Results        []store.Result // after the reader's mark, at most fetchMaxResults+1
	Rows           []store.Row    // stable rows after the reader's mark, at most the cap+2
	Tail           []store.Row    // a baseline's stable tail
	Latest         *rpc.Result    // a baseline's result (see readLatest)
	LatestEnd      int            // bytes of latest's final_text it may carry (-1: all)
	LatestErr      error
	Earlier        bool // enumeration: a retained result at or before the mark exists
}

func (st *State) Retained() Retained {
	return Retained{RowsFirst: st.RowsFirst, ResultsEvicted: st.ResultsEvicted, EventLost: st.EventLost}
}

// news reports whether a reader at from may have anything to read or a
// gap (rows: it takes stable rows): whether the store must be read.
func (st *State) News(from Mark, rows bool) bool {
	c := st.Cur
	return st.EventLost || from.Event < c.Event || from.Result < c.Result || from.TextOff > 0 ||
		(rows && (from.Row < c.Row || from.RowOff > 0 || from.Row+1 < st.RowsFirst))
}

// sessionView is what a fetch reads of a Session's state before
// rendering: the change generation (closed on the next change), whether
// it is blocked, and its active execution.
type View struct {
	Changed <-chan struct{}
	Blocked bool
	ExecSeq uint64 // 0: none active
	Last    uint64 // the last execution started (a later one is queued)
}

// BoundDone reports whether execution bound (until:result) has ended: a
// queued execution beyond Last has not even started.
func (v View) BoundDone(bound uint64) bool {
	return bound > 0 && bound <= v.Last && (v.ExecSeq == 0 || v.ExecSeq != bound)
}

// ReadDelta reads what lies beyond from, component by component, skipping
// a component the marks say is complete.
func (st *State) ReadDelta(r *store.Reader, l *store.RowLog, from Mark, fr *Req) error {
	if from.Event < st.Cur.Event {
		evs, err := r.ReadEvents(from.Event, MaxEvents+1, st.UID)
		if err != nil {
			return err
		}
		st.Events = evs
	}
	if from.Result < st.Cur.Result || from.TextOff > 0 {
		st.Results = r.ListResults(st.UID, from.Result, MaxResults+1)
	}
	if fr.Screen && fr.StableCap > 0 && (from.Row < st.Cur.Row || from.RowOff > 0) {
		if rows, err := r.Rows(l, from.Row+1, fr.StableCap+2); err == nil {
			st.Rows = rows
		}
	}
	return nil
}

// ReadBaseline reads a baseline's latest result and stable tail.
func (st *State) ReadBaseline(r *store.Reader, l *store.RowLog, fr *Req) {
	st.ReadLatest(r, st.Cur, nil)
	if fr.Screen && fr.StableCap > 0 {
		st.Tail, _ = r.RowsBefore(l, st.Cur.Row+1, fr.StableCap)
	}
}

// ReadLatest reads the result a baseline at mark carries: the latest
// retained at or before mark, or, replaying up to upto, the one upto
// delivered in part (then only the part it delivered).
func (st *State) ReadLatest(r *store.Reader, mark Mark, upto *Mark) {
	st.LatestEnd = -1
	if upto != nil && upto.TextOff > 0 {
		rs := r.ListResults(st.UID, upto.Result, 1)
		if len(rs) == 1 && rs[0].Seq == upto.Result+1 {
			var res rpc.Result
			if json.Unmarshal(rs[0].Data, &res) == nil {
				st.Latest, st.LatestEnd = &res, upto.TextOff
			}
		}
		return
	}
	lim := mark.Result
	if upto != nil {
		lim = upto.Result
	}
	st.Latest, st.LatestErr = DecodeResult(r.ResultAtOrBefore(st.UID, lim))
}

func DecodeResult(stored store.Result, ok bool) (*rpc.Result, error) {
	if !ok {
		return nil, nil
	}
	var res rpc.Result
	if err := json.Unmarshal(stored.Data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
