// session.fetch with all:true: the cursorless enumeration in pages of 32
// Sessions, then deltas of the Sessions that changed, with lifecycle
// events as one ascending prefix across Sessions.

package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"dlgt/rpc"
	"dlgt/store"
)

// stateful lists the Sessions that carry state (have a public ID), in
// creation order.
func (rt *runtime) stateful() []*session {
	rt.mu.Lock()
	list := make([]*session, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		list = append(list, s)
	}
	rt.mu.Unlock()
	type keyed struct {
		s       *session
		created int64
	}
	ks := make([]keyed, 0, len(list))
	for _, s := range list {
		s.mu.Lock()
		id, created := s.rec.ID, s.rec.CreatedAtMS
		s.mu.Unlock()
		if id != "" {
			ks = append(ks, keyed{s, created})
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].created != ks[j].created {
			return ks[i].created < ks[j].created
		}
		return ks[i].s.uid < ks[j].s.uid
	})
	out := make([]*session, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	return out
}

// allDoc is an all:true document under construction.
type allDoc struct {
	buckets []rpc.FetchSession
	gaps    []rpc.Gap
	next    *allMark
	hasMore bool
	gap     bool
}

func (rt *runtime) allDocument(a *allDoc, reason string, cursor uint64) *rpc.FetchDocument {
	return rt.newDocument(reason, a.hasMore, a.gaps, cursor, a.buckets)
}

// fetchAll is session.fetch with all:true. It pages at 32 Sessions and
// rejects screen aggregation and until:"result".
func (rt *runtime) fetchAll(ctx context.Context, fr *fetchReq) (any, error) {
	if fr.untilRes {
		return nil, rpc.InvalidField("until", "all:true does not support until:\"result\"")
	}
	if fr.screenSet {
		return nil, rpc.InvalidField("screen", "all:true does not aggregate screens; fetch one Session for its screen")
	}
	fr.screen = false
	var pos *position
	if fr.hasCursor {
		p, err := rt.positions.get(allScope, fr.cursor)
		if err != nil {
			return nil, err
		}
		pos = p
	}
	var deadline <-chan time.Time
	if fr.wait > 0 {
		t := time.NewTimer(fr.wait)
		defer t.Stop()
		deadline = t.C
	}
	expired := false
	for {
		rt.mu.Lock()
		changed := rt.allChanged
		rt.mu.Unlock()
		list := rt.stateful()
		if len(list) > fetchAllSessions {
			return nil, rpc.InvalidField("all", "this daemon holds %d Sessions with state, more than the %d one all:true position addresses; fetch one Session at a time", len(list), fetchAllSessions)
		}
		nextN, nextPos := uint64(0), (*position)(nil)
		if pos != nil {
			nextN, nextPos = rt.positions.successor(allScope, pos)
		}
		var upto *allMark
		if nextPos != nil {
			upto = nextPos.all
		}
		if pos == nil || pos.all.enumerating {
			a, err := fit(fr, func(fr *fetchReq) (*allDoc, error) { return rt.enumPage(list, pos, upto, fr) })
			if err != nil {
				return nil, err
			}
			var cursor uint64
			if upto != nil && sameAllMark(a.next, upto) {
				cursor = nextN
			} else {
				cursor = rt.positions.advance(allScope, pos, &position{all: a.next})
			}
			return rt.allDocument(a, rpc.ReasonSnapshot, cursor), nil
		}
		a, err := fit(fr, func(fr *fetchReq) (*allDoc, error) { return rt.allDelta(list, pos.all, upto, fr) })
		if err != nil {
			return nil, err
		}
		advanced := !sameAllMark(a.next, pos.all)
		if !(a.hasMore || advanced) && deadline != nil {
			if _, err := waitChange(ctx, changed, &deadline, &expired); err != nil {
				return nil, err
			}
			continue
		}
		reason := rpc.ReasonTimeout
		switch {
		case a.gap:
			reason = rpc.ReasonGap
		case a.hasMore:
			reason = rpc.ReasonPageFull
		case len(a.buckets) > 0 && anyResults(a.buckets):
			reason = rpc.ReasonResult
		case advanced:
			reason = rpc.ReasonChange
		}
		cursor := fr.cursor
		if advanced {
			if upto != nil && sameAllMark(a.next, upto) {
				cursor = nextN
			} else {
				cursor = rt.positions.advance(allScope, pos, &position{all: a.next})
			}
		}
		return rt.allDocument(a, reason, cursor), nil
	}
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
	if a.enumerating != b.enumerating || !slices.Equal(a.enum, b.enum) || len(a.marks) != len(b.marks) {
		return false
	}
	for k, v := range a.marks {
		if w, ok := b.marks[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// enumPage is one page of the cursorless all:true enumeration: a baseline
// bucket for each of the next (up to 32) Sessions.
func (rt *runtime) enumPage(list []*session, pos *position, upto *allMark, fr *fetchReq) (*allDoc, error) {
	byUID := map[string]*session{}
	for _, s := range list {
		byUID[s.uid] = s
	}
	next := &allMark{marks: map[string]sessionMark{}, enumerating: true}
	var todo []string
	if pos == nil {
		for _, s := range list {
			todo = append(todo, s.uid)
		}
	} else {
		for uid, m := range pos.all.marks {
			if byUID[uid] != nil {
				next.marks[uid] = m
			}
		}
		for _, uid := range pos.all.enum {
			if byUID[uid] != nil {
				todo = append(todo, uid)
			}
		}
	}
	a := &allDoc{next: next}
	room := fr.budget - rt.worstSize(nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	taken := 0
	nres := 0
	for _, uid := range todo {
		s := byUID[uid]
		if taken == fetchAllPage {
			break
		}
		if upto != nil {
			if _, ok := upto.marks[uid]; !ok {
				break // the replayed page ended here
			}
		}
		b, _ := rt.sessionBucket(s, sessionMark{}, fr, false)
		cost := jsonLen(b) + boolInt(taken > 0)
		if cost > room {
			break
		}
		s.mu.Lock()
		mark := rt.currentMarkLocked(s)
		s.mu.Unlock()
		var um *sessionMark
		if upto != nil {
			m := upto.marks[uid]
			um = &m
			mark = m
		}
		r := room - cost
		more := false
		if nres < fetchMaxResults || taken == 0 {
			if err := rt.baselineResult(s, &mark, um, &b, &r, &more); err != nil {
				return nil, err
			}
		} else if res, _ := rt.resultAtOrBefore(s, mark.Result); res != nil {
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
	if taken == 0 && len(todo) > 0 {
		return nil, errTooSmall
	}
	next.enum = append([]string{}, todo[taken:]...)
	if len(next.enum) > 0 {
		a.hasMore = true
	} else {
		next.enum, next.enumerating = nil, false
		// The enumeration is over, but a result an earlier page delivered
		// only in part (or deferred) is data beyond the cursor too.
		owed, err := rt.resultsOwed(next.marks)
		if err != nil {
			return nil, err
		}
		a.hasMore = a.hasMore || owed
	}
	if rt.worstSize(a.gaps, a.buckets) > fr.budget {
		return nil, errTooSmall
	}
	return a, nil
}

// resultsOwed reports whether any Session of marks has a retained result
// beyond its mark: a final_text delivered only in part, or a result left for
// a later page.
func (rt *runtime) resultsOwed(marks map[string]sessionMark) (bool, error) {
	for uid, m := range marks {
		if m.TextOff > 0 {
			return true, nil
		}
		rs, err := rt.db.ListResults(uid, m.Result, 1)
		if err != nil {
			return false, err
		}
		if len(rs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// allPending is one Session's unread state in an all:true delta.
type allPending struct {
	s       *session
	from    sessionMark
	upto    *sessionMark
	events  []store.Event
	results []store.Result
	gaps    []rpc.Gap
	top     []rpc.Gap
	first   uint64 // seq of its first pending event, or max
}

// allDelta returns the Sessions that changed since prev: events as one
// strictly ascending prefix across Sessions, then results.
func (rt *runtime) allDelta(list []*session, prev, upto *allMark, fr *fetchReq) (*allDoc, error) {
	next := &allMark{marks: map[string]sessionMark{}}
	var pend []*allPending
	for _, s := range list {
		from := prev.marks[s.uid]
		next.marks[s.uid] = from
		p := &allPending{s: s, from: from, first: ^uint64(0)}
		if upto != nil {
			if m, ok := upto.marks[s.uid]; ok {
				p.upto = &m
			} else {
				p.upto = &from
			}
		}
		// all:true carries no screen, so row eviction is no gap for it.
		p.gaps, p.top = rt.gapsFor(s, from, false)
		if len(p.gaps)+len(p.top) > 0 {
			p.first = 0
			pend = append(pend, p)
			continue
		}
		evs, err := rt.db.ReadEvents(from.Event, fetchMaxEvents+1, s.uid)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if p.upto != nil && e.Seq > p.upto.Event {
				break
			}
			p.events = append(p.events, e)
		}
		rs, err := rt.db.ListResults(s.uid, from.Result, fetchMaxResults+1)
		if err != nil {
			return nil, err
		}
		p.results = rs
		if len(p.events) > 0 {
			p.first = p.events[0].Seq
		}
		if len(p.events) > 0 || len(p.results) > 0 {
			pend = append(pend, p)
		}
	}
	// Sessions with the earliest pending events lead the page.
	sort.SliceStable(pend, func(i, j int) bool { return pend[i].first < pend[j].first })
	a := &allDoc{next: next}
	everyone := pend
	if len(pend) > fetchAllPage {
		pend, a.hasMore = pend[:fetchAllPage], true
	}
	room := fr.budget - rt.worstSize(nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	type slot struct {
		p *allPending
		b rpc.FetchSession
		m sessionMark
	}
	var slots []*slot
	included := map[*session]*slot{}
	for _, p := range pend {
		b, _ := rt.sessionBucket(p.s, p.from, fr, false)
		sl := &slot{p: p, b: b, m: p.from}
		if len(p.gaps)+len(p.top) > 0 {
			// A gap: a bounded baseline for this Session, fresh marks.
			p.s.mu.Lock()
			sl.m = rt.currentMarkLocked(p.s)
			p.s.mu.Unlock()
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
			more := false
			if err := rt.baselineResult(p.s, &sl.m, nil, &sl.b, &room, &more); err != nil {
				return nil, err
			}
			a.hasMore = a.hasMore || more
		}
		slots = append(slots, sl)
		included[p.s] = sl
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
		sl := included[owner[e.Seq].s]
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
		rt.addResults(sl.p.results, sl.p.from, sl.p.upto, &sl.m, &sl.b.Results, &nres, &room, &rfull, &cut)
		if rfull {
			full = true
			if nres >= fetchMaxResults {
				break
			}
		}
	}
	// Buckets that did not advance are dropped; the rest commit.
	for _, sl := range slots {
		if sl.m == sl.p.from && len(sl.p.gaps)+len(sl.p.top) == 0 {
			if len(sl.p.events) > 0 || len(sl.p.results) > 0 {
				a.hasMore = true
			}
			continue
		}
		a.buckets = append(a.buckets, sl.b)
		next.marks[sl.p.s.uid] = sl.m
		// Anything of this Session left unread?
		if len(sl.p.events) > 0 && sl.m.Event < sl.p.events[len(sl.p.events)-1].Seq {
			a.hasMore = true
		}
		if len(sl.p.results) > 0 && (sl.m.Result < sl.p.results[len(sl.p.results)-1].Seq) && (sl.p.upto == nil || sl.m != *sl.p.upto) {
			a.hasMore = true
		}
	}
	for _, p := range everyone {
		if included[p.s] == nil {
			a.hasMore = true
		}
	}
	if full {
		a.hasMore = true
	}
	if a.hasMore && sameAllMark(next, prev) {
		return nil, errTooSmall
	}
	if rt.worstSize(a.gaps, a.buckets) > fr.budget {
		return nil, errTooSmall
	}
	return a, nil
}
