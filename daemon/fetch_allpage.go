// The all:true pages, as pure functions of the state fetch_all.go took:
// the cursorless enumeration in pages of 32 Sessions (enumPage), then
// deltas of the Sessions that changed (allDelta), with lifecycle events as
// one ascending prefix across Sessions.

package daemon

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// allDoc is an all:true document under construction.
type allDoc struct {
	buckets []rpc.FetchSession
	gaps    []rpc.Gap
	next    *allMark
	hasMore bool
	gap     bool
}

func (a *allDoc) document(env rpc.Runtime, reason string, cursor uint64) *rpc.FetchDocument {
	return newDocument(env, reason, a.hasMore, a.gaps, cursor, a.buckets)
}

func anyResults(bs []rpc.FetchSession) bool {
	for _, b := range bs {
		if len(b.Results) > 0 {
			return true
		}
	}
	return false
}

func sameAllMark(a, b *allMark) bool {
	if a == b {
		return true
	}
	return a.enumerating == b.enumerating && slices.Equal(a.enum, b.enum) && sameMarks(a.marks, b.marks)
}

func sameMarks(a, b map[string]sessionMark) bool {
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
type enumInput struct {
	todo   []string                 // Sessions still to enumerate, in order
	marks  map[string]sessionMark   // marks of the Sessions earlier pages enumerated
	states map[string]*sessionState // the next fetchAllPage of todo (latest, earlier)
	// newest is, when the enumeration may end on this page, each
	// Session's newest retained result (absent: none).
	newest map[string]uint64
}

// enumPage is one page of the cursorless all:true enumeration: a baseline
// bucket for each of the next (up to 32) Sessions. upto bounds a replay.
func enumPage(env rpc.Runtime, in *enumInput, upto *allMark, fr *fetchReq) (*allDoc, error) {
	next := &allMark{marks: make(map[string]sessionMark, len(in.marks)+fetchAllPage), enumerating: true}
	for uid, m := range in.marks {
		next.marks[uid] = m
	}
	a := &allDoc{next: next}
	room := fr.budget - worstSize(env, nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	taken := 0
	nres := 0
	for _, uid := range in.todo {
		if taken == fetchAllPage {
			break
		}
		if upto != nil {
			if _, ok := upto.marks[uid]; !ok {
				break // the replayed page ended here
			}
		}
		st := in.states[uid]
		b := bucketOf(st, sessionMark{}, false)
		cost := jsonLen(b) + boolInt(taken > 0)
		if cost > room {
			break
		}
		mark := st.cur
		if upto != nil {
			mark = upto.marks[uid]
		}
		r := room - cost
		more := false
		if nres < fetchMaxResults || taken == 0 {
			if st.latestErr != nil {
				return nil, st.latestErr
			}
			baselineResult(st.latest, st.latestEnd, &mark, &b, &r, &more)
		} else if st.earlier {
			break // this Session's result belongs on the next page
		}
		if more && taken > 0 && len(b.Results) == 0 {
			break // its result does not fit here; it leads the next page
		}
		nres += len(b.Results)
		room = r
		a.buckets = append(a.buckets, b)
		next.marks[uid] = mark
		taken++
		if more {
			a.hasMore = true
		}
	}
	if taken == 0 && len(in.todo) > 0 {
		return nil, errTooSmall
	}
	next.enum = append([]string{}, in.todo[taken:]...)
	if len(next.enum) > 0 {
		a.hasMore = true
	} else {
		// Every Session is enumerated, but a result an earlier page
		// delivered only in part (or deferred) is data beyond the cursor
		// too. The enumeration finishes with the first page that leaves
		// none: until then its position stays enumerating (with no
		// Sessions left to list), and its pages are baseline pages.
		next.enum = nil
		a.hasMore = a.hasMore || resultsOwed(next.marks, in.newest)
		next.enumerating = a.hasMore
	}
	if worstSize(env, a.gaps, a.buckets) > fr.budget {
		return nil, errTooSmall
	}
	return a, nil
}

// resultsOwed reports whether any Session of marks has a retained result
// beyond its mark: a final_text delivered only in part, or a result left for
// a later page.
func resultsOwed(marks map[string]sessionMark, newest map[string]uint64) bool {
	for uid, m := range marks {
		if m.TextOff > 0 || newest[uid] > m.Result {
			return true
		}
	}
	return false
}

// allEntry is one Session of an all:true delta: its reader's mark and,
// unless its change marks say nothing is new, its state.
type allEntry struct {
	uid   string
	from  sessionMark
	known bool          // the reader's position has a mark for it
	st    *sessionState // nil: nothing new
}

// allPending is one Session's unread state in an all:true delta.
type allPending struct {
	e       *allEntry
	upto    *sessionMark
	events  []store.Event
	results []store.Result
	gaps    []rpc.Gap
	top     []rpc.Gap
	first   uint64 // seq of its first pending event, or max
}

// allDelta returns the Sessions that changed since prev: events as one
// strictly ascending prefix across Sessions, then results. upto bounds a
// replay.
func allDelta(env rpc.Runtime, entries []allEntry, prev, upto *allMark, fr *fetchReq) (*allDoc, error) {
	return allDeltaOf(env, entries, false, prev, upto, fr)
}

// allDeltaOf is allDelta, or, quiet (see takeAllDelta; entries then nil),
// the same document for entries that would all be known and unmoved.
func allDeltaOf(env rpc.Runtime, entries []allEntry, quiet bool, prev, upto *allMark, fr *fetchReq) (*allDoc, error) {
	var pend []*allPending
	beyond := false // a replay leaves a result beyond its window
	same := quiet || prev.settledOver(len(entries))
	for i := range entries {
		e := &entries[i]
		same = same && e.known
		if e.st == nil {
			continue
		}
		p := &allPending{e: e, first: ^uint64(0)}
		if upto != nil {
			if m, ok := upto.marks[e.uid]; ok {
				p.upto = &m
			} else {
				from := e.from
				p.upto = &from
			}
		}
		// all:true carries no screen, so row eviction is no gap for it.
		p.gaps, p.top = gapsOf(e.from, false, e.st.retained())
		if len(p.gaps)+len(p.top) > 0 {
			p.first = 0
			pend = append(pend, p)
			continue
		}
		for _, ev := range e.st.events {
			if p.upto != nil && ev.Seq > p.upto.Event {
				break
			}
			p.events = append(p.events, ev)
		}
		p.results = e.st.results
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
		next = &allMark{marks: make(map[string]sessionMark, len(entries))}
		for _, e := range entries {
			next.marks[e.uid] = e.from
		}
	}
	// Sessions with the earliest pending events lead the page.
	sort.SliceStable(pend, func(i, j int) bool { return pend[i].first < pend[j].first })
	a := &allDoc{next: next}
	everyone := pend
	if len(pend) > fetchAllPage {
		pend, a.hasMore = pend[:fetchAllPage], true
	}
	room := fr.budget - worstSize(env, nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	type slot struct {
		p *allPending
		b rpc.FetchSession
		m sessionMark
	}
	var slots []*slot
	included := map[string]*slot{}
	for _, p := range pend {
		st := p.e.st
		sl := &slot{p: p, b: bucketOf(st, p.e.from, false), m: p.e.from}
		if len(p.gaps)+len(p.top) > 0 {
			// A gap: a bounded baseline for this Session, fresh marks.
			sl.m = st.cur
			if p.gaps != nil {
				sl.b.Gaps = p.gaps
			}
		}
		cost := jsonLen(sl.b) + boolInt(len(slots) > 0)
		if cost+minChunk/2 > room {
			a.hasMore = true
			break
		}
		room -= cost
		if len(p.gaps)+len(p.top) > 0 {
			a.gap = true
			for _, g := range p.top {
				if !slices.Contains(a.gaps, g) {
					c := jsonLen(g) + boolInt(len(a.gaps) > 0)
					room -= c
					a.gaps = append(a.gaps, g)
				}
			}
			if st.latestErr != nil {
				return nil, st.latestErr
			}
			more := false
			baselineResult(st.latest, st.latestEnd, &sl.m, &sl.b, &room, &more)
			a.hasMore = a.hasMore || more
		}
		slots = append(slots, sl)
		included[p.e.uid] = sl
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
		if len(p.events) == fetchMaxEvents+1 || (p.upto == nil && len(p.events) > fetchMaxEvents) {
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
		sl := included[owner[e.Seq].e.uid]
		if sl == nil || nev == fetchMaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			sl.m.Event = e.Seq
			continue
		}
		c := jsonLen(ev) + boolInt(len(sl.b.Events) > 0)
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
		addResults(sl.p.results, sl.p.e.from, sl.p.upto, &sl.m, &sl.b.Results, &nres, &room, &rfull, &cut)
		if rfull {
			full = true
			if nres >= fetchMaxResults {
				break
			}
		}
	}
	// Buckets that did not advance are dropped; the rest commit.
	for _, sl := range slots {
		if sl.m == sl.p.e.from && len(sl.p.gaps)+len(sl.p.top) == 0 {
			if len(sl.p.events) > 0 || len(sl.p.results) > 0 {
				a.hasMore = true
			}
			continue
		}
		a.buckets = append(a.buckets, sl.b)
		next.marks[sl.p.e.uid] = sl.m
		// Anything of this Session left unread?
		if len(sl.p.events) > 0 && sl.m.Event < sl.p.events[len(sl.p.events)-1].Seq {
			a.hasMore = true
		}
		if len(sl.p.results) > 0 && (sl.m.Result < sl.p.results[len(sl.p.results)-1].Seq) && (sl.p.upto == nil || sl.m != *sl.p.upto) {
			a.hasMore = true
		}
	}
	for _, p := range everyone {
		if included[p.e.uid] == nil {
			a.hasMore = true
		}
	}
	if full || beyond {
		a.hasMore = true
	}
	if prev.enumerating {
		// The enumeration finishing (prev has no Sessions left to list,
		// so next is a new mark): it stays one while anything is left
		// beyond the cursor. A replay ends where the original did.
		next.enumerating = a.hasMore
		if upto != nil && sameMarks(next.marks, upto.marks) {
			next.enumerating = upto.enumerating
			a.hasMore = a.hasMore || upto.enumerating
		}
	}
	if a.hasMore && sameAllMark(next, prev) {
		return nil, errTooSmall
	}
	if worstSize(env, a.gaps, a.buckets) > fr.budget {
		return nil, errTooSmall
	}
	return a, nil
}
