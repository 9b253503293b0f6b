// Marks: how far a reader has received each component of a Session (a
// sessionMark) or of all Sessions (an allMark), and the gaps retention
// has left behind a mark.

package fetchdoc

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Mark is the watermark vector of one Session: how far a reader
// has received each component. Offsets record a partially delivered
// final_text or stable row. Every component is numbered durably (event
// seqs, execution seqs, committed row ids, epochs), so a mark means the
// same thing in every daemon lifetime.
type Mark struct {
	Event   uint64 `json:"e,omitempty"`  // last global event seq delivered for this Session
	Result  uint64 `json:"r,omitempty"`  // last execution seq whose result was delivered whole
	TextOff int    `json:"t,omitempty"`  // bytes of result Result+1's final_text delivered
	Row     uint64 `json:"w,omitempty"`  // last stable row id delivered whole
	RowOff  int    `json:"wo,omitempty"` // bytes of row Row+1 delivered
	Epoch   uint64 `json:"p,omitempty"`  // screen epoch the reader has seen
	// Pending counts the changes of the Session's pending request the
	// reader has seen (it only grows). A request can open or close with
	// no event (a Session blocked by a
	// Notification hook that its PermissionRequest hook overtook: the
	// request opens after session.blocked; an answer taken before the
	// harness moves): a change of it advances a fetch like an event.
	Pending uint64 `json:"q,omitempty"`
}

// allMark is the watermark state of an all:true position: one mark per
// Session that still exists and carries state, and, while the cursorless
// enumeration is in progress, the Sessions still to enumerate.
type AllMark struct {
	Marks       map[string]Mark // by Session uid; never mutated after minting
	Enumerating bool
	Enum        []string // uids still to enumerate, in order
}

// settledOver reports that m is past its enumeration and has a mark for
// as many Sessions as a list of n: the shape in which a delta over that
// list can leave m as it is.
func (m *AllMark) SettledOver(n int) bool {
	return len(m.Marks) == n && !m.Enumerating && len(m.Enum) == 0
}

// retained is what retention has kept of a Session, as gapsOf needs it.
type Retained struct {
	RowsFirst      uint64 // oldest stable row still stored
	ResultsEvicted uint64 // highest execution seq whose result was dropped
	EventLost      bool   // an event of the Session after the mark was dropped
}

// gapsOf is the gap rule, a pure function: the retention overruns a reader
// at mark has suffered. Per-Session components (screen, only for a reader
// that takes stable rows, since one that does not has lost nothing when
// rows are evicted; results) go on the Session's bucket, scope-wide ones
// (events) at the top.
func Gaps(m Mark, rows bool, r Retained) (gaps, top []rpc.Gap) {
	if rows && m.Row+1 < r.RowsFirst {
		gaps = append(gaps, rpc.Gap{Component: "screen", Reason: "retention_overrun"})
	}
	if m.Result < r.ResultsEvicted {
		gaps = append(gaps, rpc.Gap{Component: "results", Reason: "retention_overrun"})
	}
	if r.EventLost {
		top = append(top, rpc.Gap{Component: "events", Reason: "retention_overrun"})
	}
	return gaps, top
}

// AllKey is a canonical encoding of a: equal for equal allMarks, and a
// few times cheaper than the JSON of 256 marks (every all:true mint
// computes it).
func AllKey(a *AllMark) string {
	uids := slices.Sorted(maps.Keys(a.Marks))
	b := make([]byte, 0, 1+len(uids)*32+len(a.Enum)*16)
	b = append(b, byte(BoolInt(a.Enumerating)))
	for _, uid := range uids {
		m := a.Marks[uid]
		b = binary.AppendUvarint(b, uint64(len(uid)))
		b = append(b, uid...)
		for _, v := range []uint64{m.Event, m.Result, uint64(m.TextOff), m.Row, uint64(m.RowOff), m.Epoch, m.Pending} {
			b = binary.AppendUvarint(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(a.Enum)))
	for _, uid := range a.Enum {
		b = binary.AppendUvarint(b, uint64(len(uid)))
		b = append(b, uid...)
	}
	return string(b)
}

// EventLoss is one Session's record of the events retention dropped: its
// event seqs not yet known to be evicted (those evicted are let go once
// more than 1024 are held) and the newest one dropped, so a reader can tell whether retention dropped one
// of this Session's events after its mark. The zero value is ready; the
// owner's lock (the Session's) guards it.
type EventLoss struct {
	seqs []uint64
	lost uint64
}

// Note records that the Session emitted event seq; evicted is the
// retention watermark.
func (l *EventLoss) Note(seq, evicted uint64) {
	l.seqs = append(l.seqs, seq)
	if len(l.seqs) > 1024 {
		l.LostAfter(^uint64(0), evicted)
	}
}

// LostAfter reports whether retention (through evicted) dropped an event
// of the Session with seq > after.
func (l *EventLoss) LostAfter(after, evicted uint64) bool {
	i := 0
	for i < len(l.seqs) && l.seqs[i] <= evicted {
		l.lost = l.seqs[i]
		i++
	}
	if i > 0 {
		l.seqs = append(l.seqs[:0], l.seqs[i:]...)
	}
	return l.lost > after
}
