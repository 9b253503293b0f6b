// The all:true pages, as pure functions of the state fetch_all.go took:
// the cursorless enumeration in pages of 32 Sessions (enumPage), then
// deltas of the Sessions that changed (allDelta), with lifecycle events as
// one ascending prefix across Sessions.

package fetchdoc

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// allDoc is an all:true document under construction.
type AllDoc struct {
	Buckets []rpc.FetchSession
	Gaps    []rpc.Gap
	Next    *AllMark
	HasMore bool
	Gap     bool
}

func (a *AllDoc) Document(env rpc.Runtime, reason string, cursor uint64) *rpc.FetchDocument {
	return newDocument(env, reason, a.HasMore, a.Gaps, cursor, a.Buckets)
}

func AnyResults(bs []rpc.FetchSession) bool {
	for _, b := range bs {
		if len(b.Results) > 0 {
			return true
		}
	}
	return false
}

func SameAllMark(a, b *AllMark) bool {
	if a == b {
		return true
	}
	return a.Enumerating == b.Enumerating && slices.Equal(a.Enum, b.Enum) && sameMarks(a.Marks, b.Marks)
}

func sameMarks(a, b map[string]Mark) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// enumInput is what one page of the enumeration is computed from.
type EnumInput struct {
	Todo   []string          // Sessions still to enumerate, in order
	Marks  map[string]Mark   // marks of the Sessions earlier pages enumerated
	States map[string]*State // the next fetchAllPage of todo (latest, earlier)
	// newest is, when the enumeration may end on this page, each
	// Session's newest retained result (absent: none).
	Newest map[string]uint64
}

// enumPage is one page of the cursorless all:true enumeration: a baseline
// bucket for each of the next (up to 32) Sessions. upto bounds a replay.
func EnumPage(env rpc.Runtime, in *EnumInput, upto *AllMark, fr *Req) (*AllDoc, error) {
	next := &AllMark{Marks: make(map[string]Mark, len(in.Marks)+AllPage), Enumerating: true}
	for uid, m := range in.Marks {
		next.Marks[uid] = m
	}
	a := &AllDoc{Next: next}
	room := fr.Budget - worstSize(env, nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	taken := 0
	nres := 0
	for _, uid := range in.Todo {
		if taken == AllPage {
			break
		}
		if upto != nil {
			if _, ok := upto.Marks[uid]; !ok {
				break // the replayed page ended here
			}
		}
		st := in.States[uid]
		b := bucketOf(st, Mark{}, false)
		cost := JSONLen(b) + BoolInt(taken > 0)
		if cost > room {
			break
		}
		mark := st.Cur
		if upto != nil {
			mark = upto.Marks[uid]
		}
		r := room - cost
		more := false
		if nres < MaxResults || taken == 0 {
			if st.LatestErr != nil {
				return nil, st.LatestErr
			}
			baselineResult(st.Latest, st.LatestEnd, &mark, &b, &r, &more, false)
		} else if st.Earlier {
			break // this Session's result belongs on the next page
		}
		if more && taken > 0 && len(b.Results) == 0 {
			break // its result does not fit here; it leads the next page
		}
		nres += len(b.Results)
		room = r
		a.Buckets = append(a.Buckets, b)
		next.Marks[uid] = mark
		taken++
		if more {
			a.HasMore = true
		}
	}
	if taken == 0 && len(in.Todo) > 0 {
		return nil, errTooSmall
	}
	next.Enum = append([]string{}, in.Todo[taken:]...)
	if len(next.Enum) > 0 {
		a.HasMore = true
	} else {
		// Every Session is enumerated, but a result an earlier page
		// delivered only in part (or deferred) is data beyond the cursor
		// too. The enumeration finishes with the first page that leaves
		// none: until then its position stays enumerating (with no
		// Sessions left to list), and its pages are baseline pages.
		next.Enum = nil
		a.HasMore = a.HasMore || resultsOwed(next.Marks, in.Newest)
		next.Enumerating = a.HasMore
	}
	if worstSize(env, a.Gaps, a.Buckets) > fr.Budget {
		return nil, errTooSmall
	}
	return a, nil
}

// resultsOwed reports whether any Session of marks has a retained result
// beyond its mark: a final_text delivered only in part, or a result left for
// a later page.
func resultsOwed(marks map[string]Mark, newest map[string]uint64) bool {
	for uid, m := range marks {
		if m.TextOff > 0 || newest[uid] > m.Result {
			return true
		}
	}
	return false
}

// allEntry is one Session of an all:true delta: its reader's mark and,
// unless its change marks say nothing is new, its state.
type AllEntry struct {
	UID   string
	From  Mark
	Known bool   // the reader's position has a mark for it
	St    *State // nil: nothing new
}

// allPending is one Session's unread state in an all:true delta.
type allPending struct {
	e       *AllEntry
	upto    *Mark
	events  []store.Event
	results []store.Result
	gaps    []rpc.Gap
	top     []rpc.Gap
	first   uint64 // seq of its first pending event, or max
}

// allDelta returns the Sessions that changed since prev: events as one
// strictly ascending prefix across Sessions, then results. upto bounds a
// replay.
func allDelta(env rpc.Runtime, entries []AllEntry, prev, upto *AllMark, fr *Req) (*AllDoc, error) {
	return AllDeltaOf(env, entries, false, prev, upto, fr)
}

// allDeltaOf is allDelta, or, quiet (see takeAllDelta; entries then nil),
// the same document for entries that would all be known and unmoved.
func AllDeltaOf(env rpc.Runtime, entries []AllEntry, quiet bool, prev, upto *AllMark, fr *Req) (*AllDoc, error) {
	var pend []*allPending
	beyond := false // a replay leaves a result beyond its window
	same := quiet || prev.SettledOver(len(entries))
	for i := range entries {
		e := &entries[i]
		same = same && e.Known
		if e.St == nil {
			continue
		}
		p := &allPending{e: e, first: ^uint64(0)}
		if upto != nil {
			if m, ok := upto.Marks[e.UID]; ok {
				p.upto = &m
			} else {
				from := e.From
				p.upto = &from
			}
		}
		// all:true carries no screen, so row eviction is no gap for it.
		p.gaps, p.top = Gaps(e.From, false, e.St.Retained())
		if len(p.gaps)+len(p.top) > 0 {
			p.first = 0
			pend = append(pend, p)
			continue
		}
		for _, ev := range e.St.Events {
			if p.upto != nil && ev.Seq > p.upto.Event {
				break
			}
			p.events = append(p.events, ev)
		}
		p.results = e.St.Results
		if p.upto != nil {
			// A replay: a result beyond the window it reproduces is not
			// pending in it (nor takes room on the page), only data
			// beyond its cursor.
			n := len(p.results)
			p.results = slices.DeleteFunc(slices.Clone(p.results), func(r store.Result) bool {
				return r.Seq > p.upto.Result+1 || (r.Seq == p.upto.Result+1 && p.upto.TextOff == 0)
			})
			beyond = beyond || len(p.results) < n
		}
		if len(p.events) > 0 {
			p.first = p.events[0].Seq
		}
		if len(p.events) > 0 || len(p.results) > 0 {
			pend = append(pend, p)
		}
	}
	next := prev // nothing pending, the same Sessions: prev is never mutated
	if !same || len(pend) > 0 {
		next = &AllMark{Marks: make(map[string]Mark, len(entries))}
		for _, e := range entries {
			next.Marks[e.UID] = e.From
		}
	}
	// Sessions with the earliest pending events lead the page.
	sort.SliceStable(pend, func(i, j int) bool { return pend[i].first < pend[j].first })
	a := &AllDoc{Next: next}
	everyone := pend
	if len(pend) > AllPage {
		pend, a.HasMore = pend[:AllPage], true
	}
	room := fr.Budget - worstSize(env, nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	type slot struct {
		p *allPending
		b rpc.FetchSession
		m Mark
	}
	var slots []*slot
	included := map[string]*slot{}
	for _, p := range pend {
		st := p.e.St
		sl := &slot{p: p, b: bucketOf(st, p.e.From, false), m: p.e.From}
		if len(p.gaps)+len(p.top) > 0 {
			// A gap: a bounded baseline for this Session, fresh marks.
			sl.m = st.Cur
			if p.gaps != nil {
				sl.b.Gaps = p.gaps
			}
		}
		cost := JSONLen(sl.b) + BoolInt(len(slots) > 0)
		if cost+minChunk/2 > room {
			a.HasMore = true
			break
		}
		room -= cost
		if len(p.gaps)+len(p.top) > 0 {
			a.Gap = true
			for _, g := range p.top {
				if !slices.Contains(a.Gaps, g) {
					c := JSONLen(g) + BoolInt(len(a.Gaps) > 0)
					room -= c
					a.Gaps = append(a.Gaps, g)
				}
			}
			if st.LatestErr != nil {
				return nil, st.LatestErr
			}
			more := false
			baselineResult(st.Latest, st.LatestEnd, &sl.m, &sl.b, &room, &more, false)
			a.HasMore = a.HasMore || more
		}
		slots = append(slots, sl)
		included[p.e.UID] = sl
	}
	// Events: one ascending prefix of everything pending, stopping at the
	// first event of a Session not on this page.
	var all []store.Event
	owner := map[uint64]*allPending{}
	for _, p := range everyone {
		for _, e := range p.events {
			all = append(all, e)
			owner[e.Seq] = p
		}
	}
	// Pending events of Sessions not on the page bound the prefix too.
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
	limit := ^uint64(0)
	for _, p := range everyone {
		if len(p.events) == MaxEvents+1 || (p.upto == nil && len(p.events) > MaxEvents) {
			limit = min(limit, p.events[len(p.events)-1].Seq)
		}
	}
	nev := 0
	full := false
	for _, e := range all {
		if e.Seq >= limit {
			full = true
			break
		}
		sl := included[owner[e.Seq].e.UID]
		if sl == nil || nev == MaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			sl.m.Event = e.Seq
			continue
		}
		c := JSONLen(ev) + BoolInt(len(sl.b.Events) > 0)
		if c > room {
			full = true
			break
		}
		room -= c
		sl.b.Events = append(sl.b.Events, ev)
		sl.m.Event = e.Seq
		nev++
	}
	// Results, page order.
	nres := 0
	for _, sl := range slots {
		if len(sl.p.gaps)+len(sl.p.top) > 0 {
			continue
		}
		cut, rfull := false, false
		addResults(sl.p.results, sl.p.e.From, sl.p.upto, &sl.m, &sl.b.Results, &nres, &room, &rfull, &cut, false)
		if rfull {
			full = true
			if nres >= MaxResults {
				break
			}
		}
	}
	// Buckets that did not advance are dropped; the rest commit.
	for _, sl := range slots {
		if sl.m == sl.p.e.From && len(sl.p.gaps)+len(sl.p.top) == 0 {
			if len(sl.p.events) > 0 || len(sl.p.results) > 0 {
				a.HasMore = true
			}
			continue
		}
		a.Buckets = append(a.Buckets, sl.b)
		next.Marks[sl.p.e.UID] = sl.m
		// Anything of this Session left unread?
		if len(sl.p.events) > 0 && sl.m.Event < sl.p.events[len(sl.p.events)-1].Seq {
			a.HasMore = true
		}
		if len(sl.p.results) > 0 && (sl.m.Result < sl.p.results[len(sl.p.results)-1].Seq) && (sl.p.upto == nil || sl.m != *sl.p.upto) {
			a.HasMore = true
		}
	}
	for _, p := range everyone {
		if included[p.e.UID] == nil {
			a.HasMore = true
		}
	}
	if full || beyond {
		a.HasMore = true
	}
	if prev.Enumerating {
		// The enumeration finishing (prev has no Sessions left to list,
		// so next is a new mark): it stays one while anything is left
		// beyond the cursor. A replay ends where the original did.
		next.Enumerating = a.HasMore
		if upto != nil && sameMarks(next.Marks, upto.Marks) {
			next.Enumerating = upto.Enumerating
			a.HasMore = a.HasMore || upto.Enumerating
		}
	}
	if a.HasMore && SameAllMark(next, prev) {
		return nil, errTooSmall
	}
	if worstSize(env, a.Gaps, a.Buckets) > fr.Budget {
		return nil, errTooSmall
	}
	return a, nil
}
