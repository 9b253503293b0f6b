// session.fetch with all:true, the wiring: which Sessions it covers, the
// state it takes of them (only of the Sessions whose change marks moved
// since the reader's position, in one read transaction), and waiting.
// The pages themselves are pure functions in package fetchdoc (allpage.go).

package daemon

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/parking"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// statefulGen counts changes of any Session's place in the all:true list
// (whether it carries state, its creation time): publishLocked bumps it
// after it publishes such a change.
var statefulGen atomic.Uint64

// statefulCache is the list stateful built last, with what it was built
// from: rt.sessionsGen, and statefulGen read before any Session's marks
// were. rt.mu guards it.
type statefulCache struct {
	list        []*session
	sessionsGen uint64
	pubGen      uint64
	ok          bool
}

// stateful lists the Sessions that carry state (have a public ID), in
// creation order. It reads their published change marks, not their
// locks. While no Session was added or removed and none changed whether
// it carries state, it is the list built last (shared: callers do not
// change it), so a poll with nothing new does not list and sort every
// Session.
func (rt *runtime) stateful() []*session {
	pubGen := statefulGen.Load()
	rt.mu.Lock()
	c := rt.statefulCache
	if c.ok && c.sessionsGen == rt.sessionsGen && c.pubGen == pubGen {
		rt.mu.Unlock()
		return c.list
	}
	gen := rt.sessionsGen
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
		if p := s.published(); p.stateful {
			ks = append(ks, keyed{s, p.created})
		}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return strings.Compare(a.s.uid, b.s.uid)
	})
	out := make([]*session, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	rt.mu.Lock()
	if rt.sessionsGen == gen {
		rt.statefulCache = statefulCache{list: out, sessionsGen: gen, pubGen: pubGen, ok: true}
	}
	rt.mu.Unlock()
	return out
}

// allChangedNow is the channel closed on the next change of any Session
// (fetcher's host).
func (rt *runtime) allChangedNow() <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.allChanged
}

// fetchAll is session.fetch with all:true. It pages at 32 Sessions and
// rejects screen aggregation and until:"result".
func (ft *fetcher) fetchAll(ctx context.Context, fr *fetchdoc.Req) (*rpc.FetchDocument, error) {
	if fr.UntilResult {
		return nil, rpc.InvalidField("until", "all:true does not support until:\"result\"")
	}
	if fr.ScreenSet {
		return nil, rpc.InvalidField("screen", "all:true does not aggregate screens; fetch one Session for its screen")
	}
	if fr.ToolCalls {
		return nil, rpc.InvalidField("tool_calls", "all:true does not carry tool calls; fetch one Session for them")
	}
	fr.Screen = false
	var pos *positions.Position
	if fr.HasCursor {
		p, err := ft.positions.Get(positions.AllScope, fr.Cursor)
		if err != nil {
			return nil, err
		}
		pos = p
	}
	var deadline <-chan time.Time
	if fr.Wait > 0 {
		t := time.NewTimer(fr.Wait)
		defer t.Stop()
		deadline = t.C
	}
	env := ft.runtimeInfo()
	expired := false
	var wokeFrom <-chan struct{} // the change that woke this long poll, if one did
	for {
		changed := ft.host.allChangedNow()
		list := ft.host.stateful()
		if len(list) > fetchdoc.AllSessions {
			return nil, rpc.InvalidField("all", "this daemon holds %d Sessions with state, more than the %d one all:true position addresses; fetch one Session at a time", len(list), fetchdoc.AllSessions)
		}
		nextN, nextPos := uint64(0), (*positions.Position)(nil)
		if pos != nil {
			nextN, nextPos = ft.positions.Successor(positions.AllScope, pos)
		}
		var upto *fetchdoc.AllMark
		if nextPos != nil {
			upto = nextPos.All
		}
		// Enumerating Sessions: pages of baselines. An enumeration with no
		// Sessions left to list finishes through deltas below, which
		// continue what its pages delivered in part, still as baseline
		// pages.
		if pos == nil || (pos.All.Enumerating && len(pos.All.Enum) > 0) {
			in, err := ft.takeEnum(list, pos, upto)
			if err != nil {
				return nil, err
			}
			a, err := fetchdoc.Fit(fr, func(fr *fetchdoc.Req) (*fetchdoc.AllDoc, error) { return fetchdoc.EnumPage(env, in, upto, fr) })
			if err != nil {
				return nil, err
			}
			var cursor uint64
			if upto != nil && fetchdoc.SameAllMark(a.Next, upto) {
				cursor = nextN
			} else {
				cursor = ft.positions.Advance(positions.AllScope, pos, &positions.Position{All: a.Next})
			}
			return a.Document(env, rpc.ReasonSnapshot, cursor), nil
		}
		eval := func() (*fetchdoc.AllDoc, error) {
			in, quiet, err := ft.takeAllDelta(list, pos.All)
			if err != nil {
				return nil, err
			}
			return fetchdoc.Fit(fr, func(fr *fetchdoc.Req) (*fetchdoc.AllDoc, error) {
				return fetchdoc.AllDeltaOf(env, in, quiet, pos.All, upto, fr)
			})
		}
		// Long polls woken by one change from one position share one
		// evaluation and its sealed documents.
		var sh *parking.AllShare
		if wokeFrom != nil && fetchShareWakes {
			sh = ft.positions.allShares.Get(parking.AllKey{Pos: pos, MaxBytes: fr.MaxBytes, WokeFrom: wokeFrom})
		}
		var a *fetchdoc.AllDoc
		var err error
		if sh != nil {
			a, err = sh.Eval(eval)
		} else {
			a, err = eval()
		}
		if err != nil {
			return nil, err
		}
		advanced := !fetchdoc.SameAllMark(a.Next, pos.All)
		if !(a.HasMore || advanced) && deadline != nil {
			woken, err := waitChange(ctx, changed, &deadline, &expired)
			if err != nil {
				return nil, err
			}
			wokeFrom = nil
			if woken {
				wokeFrom = changed
			}
			continue
		}
		reason := rpc.ReasonTimeout
		switch {
		case a.Gap:
			reason = rpc.ReasonGap
		case pos.All.Enumerating:
			reason = rpc.ReasonSnapshot
		case a.HasMore:
			reason = rpc.ReasonPageFull
		case len(a.Buckets) > 0 && fetchdoc.AnyResults(a.Buckets):
			reason = rpc.ReasonResult
		case advanced:
			reason = rpc.ReasonChange
		}
		cursor := fr.Cursor
		if advanced {
			if upto != nil && fetchdoc.SameAllMark(a.Next, upto) {
				cursor = nextN
			} else {
				cursor = ft.positions.Advance(positions.AllScope, pos, &positions.Position{All: a.Next})
			}
		}
		if sh != nil {
			return sh.Document(env, reason, cursor), nil
		}
		return a.Document(env, reason, cursor), nil
	}
}

// takeEnum takes what the next page of the enumeration from pos (nil: its
// start) needs: the marks carried from earlier pages, the Sessions still
// to enumerate, and the state of the next fetchAllPage of them, read in
// one transaction.
func (ft *fetcher) takeEnum(list []*session, pos *positions.Position, upto *fetchdoc.AllMark) (*fetchdoc.EnumInput, error) {
	byUID := make(map[string]*session, len(list))
	for _, s := range list {
		byUID[s.uid] = s
	}
	in := &fetchdoc.EnumInput{Marks: map[string]fetchdoc.Mark{}, States: map[string]*fetchdoc.State{}}
	if pos == nil {
		for _, s := range list {
			in.Todo = append(in.Todo, s.uid)
		}
	} else {
		for uid, m := range pos.All.Marks {
			if byUID[uid] != nil {
				in.Marks[uid] = m
			}
		}
		for _, uid := range pos.All.Enum {
			if byUID[uid] != nil {
				in.Todo = append(in.Todo, uid)
			}
		}
	}
	page := in.Todo[:min(len(in.Todo), fetchdoc.AllPage)]
	for _, uid := range page {
		in.States[uid] = ft.lockedState(byUID[uid], nil, false)
	}
	err := ft.db.View(func(r *store.Reader) error {
		for _, uid := range page {
			st := in.States[uid]
			var um *fetchdoc.Mark
			if upto != nil {
				m, ok := upto.Marks[uid]
				if !ok {
					break // the replayed page ends here
				}
				um = &m
			}
			st.ReadLatest(r, st.Cur, um)
			if um != nil && um.TextOff > 0 {
				res, _ := fetchdoc.DecodeResult(r.ResultAtOrBefore(uid, um.Result))
				st.Earlier = res != nil
			} else {
				st.Earlier = st.Latest != nil
			}
		}
		if len(in.Todo) <= fetchdoc.AllPage {
			// The enumeration may end on this page: whether a result is
			// owed beyond any Session's mark.
			in.Newest = map[string]uint64{}
			for _, uid := range slices.Concat(slices.Collect(maps.Keys(in.Marks)), page) {
				if res, ok := r.ResultAtOrBefore(uid, ^uint64(0)); ok {
					in.Newest[uid] = res.Seq
				}
			}
		}
		return nil
	})
	return in, err
}

// takeAllDelta takes the state an all:true delta from prev needs: of a
// Session whose published change marks its reader already has, nothing
// (it is neither locked nor read); of the others, their state and, in
// one read transaction for them all, what lies beyond their marks.
//
// quiet reports the common idle case, found without allocating: the
// reader has a mark for every Session and for no other, none moved, and
// its position is not enumerating. Then no entries are returned (what
// allDelta would make of them is known: nothing pending, prev kept).
func (ft *fetcher) takeAllDelta(list []*session, prev *fetchdoc.AllMark) (entries []fetchdoc.AllEntry, quiet bool, err error) {
	if prev.SettledOver(len(list)) {
		quiet = true
		for _, s := range list {
			from, known := prev.Marks[s.uid]
			if !known || !s.published().coveredBy(from) {
				quiet = false
				break
			}
		}
		if quiet {
			return nil, true, nil
		}
	}
	entries = make([]fetchdoc.AllEntry, len(list))
	var moved []*fetchdoc.AllEntry
	for i, s := range list {
		from, known := prev.Marks[s.uid]
		entries[i] = fetchdoc.AllEntry{UID: s.uid, From: from, Known: known}
		if s.published().coveredBy(from) {
			continue
		}
		entries[i].St = ft.lockedState(s, &from, false)
		moved = append(moved, &entries[i])
	}
	if len(moved) == 0 {
		return entries, false, nil
	}
	fr := &fetchdoc.Req{} // all:true takes no screen
	err = ft.db.View(func(r *store.Reader) error {
		for _, e := range moved {
			st := e.St
			if e.From.Result < st.Cur.Result {
				st.ResultsEvicted = r.ResultsEvictedThrough(e.UID)
			}
			if gaps, top := fetchdoc.Gaps(e.From, false, st.Retained()); len(gaps)+len(top) > 0 {
				st.ReadLatest(r, st.Cur, nil)
				continue
			}
			if err := st.ReadDelta(r, nil, e.From, fr); err != nil {
				return err
			}
		}
		return nil
	})
	return entries, false, err
}
