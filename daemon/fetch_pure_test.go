package daemon

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// The document rules are pure functions of a sessionState: these tests
// build the states by hand, with no daemon, store or Session.

var pureEnv = rpc.Runtime{Version: "test", InstanceID: "inst"}

func pureEvent(seq uint64, typ string) store.Event {
	b, _ := rpc.Marshal(rpc.Event{SchemaVersion: rpc.SchemaVersion, Seq: seq, Type: typ, SessionID: "claude:x"})
	return store.Event{Seq: seq, SessionUID: "u", Data: b}
}

func pureResult(seq uint64, text string) store.Result {
	b, _ := rpc.Marshal(rpc.Result{ExecutionSeq: seq, Status: rpc.StatusCompleted, FinalText: &text, FinalTextSource: rpc.TextSourceHook})
	return store.Result{Seq: seq, Data: b}
}

func pureRows(first uint64, texts ...string) []store.Row {
	out := make([]store.Row, len(texts))
	for i, t := range texts {
		out[i] = store.Row{ID: first + uint64(i), Text: t}
	}
	return out
}

func pureState(uid string) *sessionState {
	return &sessionState{uid: uid, session: rpc.Session{ID: "claude:" + uid, State: rpc.StateIdle}, epoch: 1,
		live: []string{"> "}, rowsFirst: 1, latestEnd: -1}
}

func pureReq(maxBytes int, screen bool) *fetchReq {
	return &fetchReq{screen: screen, stableCap: fetchStable, maxBytes: maxBytes, budget: maxBytes - cliWrapper}
}

func TestDeltaOf(t *testing.T) {
	from := sessionMark{Event: 10, Result: 1, Row: 3, Epoch: 1}
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name     string
		st       func(*sessionState)
		upto     *sessionMark
		max      int
		want     sessionMark
		hasMore  bool
		events   int
		results  int
		stable   int
		complete bool // the last result's final_text is complete
		err      error
	}{
		{name: "nothing new: only the epoch is confirmed", max: 32 << 10, want: from},
		{name: "the epoch moved: a reset, nothing else", st: func(s *sessionState) { s.epoch = 2 },
			max: 32 << 10, want: sessionMark{Event: 10, Result: 1, Row: 3, Epoch: 2}},
		{name: "events, a result and rows", st: func(s *sessionState) {
			s.events = []store.Event{pureEvent(11, rpc.EventSessionBusy), pureEvent(14, rpc.EventSessionIdle)}
			s.results = []store.Result{pureResult(2, "done")}
			s.rows = pureRows(4, "a", "b")
		}, max: 32 << 10, want: sessionMark{Event: 14, Result: 2, Row: 5, Epoch: 1}, events: 2, results: 1, stable: 2, complete: true},
		{name: "a replay stops at its successor", st: func(s *sessionState) {
			s.events = []store.Event{pureEvent(11, rpc.EventSessionBusy), pureEvent(14, rpc.EventSessionIdle)}
			s.results = []store.Result{pureResult(2, "done")}
			s.rows = pureRows(4, "a", "b")
		}, upto: &sessionMark{Event: 11, Result: 1, Row: 4, Epoch: 1},
			max: 32 << 10, want: sessionMark{Event: 11, Result: 1, Row: 4, Epoch: 1}, hasMore: true, events: 1, stable: 1},
		{name: "a long final_text is chunked", st: func(s *sessionState) {
			s.results = []store.Result{pureResult(2, long)}
		}, max: 1500, want: sessionMark{Event: 10, Result: 1, Row: 3, Epoch: 1, TextOff: -1}, hasMore: true, results: 1},
		{name: "too small for one chunk", st: func(s *sessionState) {
			s.results = []store.Result{pureResult(2, long)}
		}, max: 500, err: errTooSmall},
		{name: "more events than a page", st: func(s *sessionState) {
			for i := range fetchMaxEvents + 1 {
				s.events = append(s.events, pureEvent(uint64(11+i), rpc.EventSessionBusy))
			}
		}, max: 256 << 10, want: sessionMark{Event: 10 + fetchMaxEvents, Result: 1, Row: 3, Epoch: 1}, hasMore: true, events: fetchMaxEvents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := pureState("u")
			if tc.st != nil {
				tc.st(st)
			}
			d, err := deltaOf(pureEnv, st, from, tc.upto, pureReq(tc.max, true))
			if tc.err != nil || err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			want := tc.want
			if want.TextOff < 0 { // a chunk: some text, not all
				if d.mark.TextOff <= 0 || d.mark.TextOff >= len(long) {
					t.Fatalf("a chunk of %d bytes", d.mark.TextOff)
				}
				want.TextOff = d.mark.TextOff
			}
			b := d.bucket
			if d.mark != want || d.hasMore != tc.hasMore || len(b.Events) != tc.events || len(b.Results) != tc.results || len(b.Screen.Stable) != tc.stable {
				t.Fatalf("mark %+v has_more %v events %d results %d stable %d; want %+v %v %d %d %d",
					d.mark, d.hasMore, len(b.Events), len(b.Results), len(b.Screen.Stable), want, tc.hasMore, tc.events, tc.results, tc.stable)
			}
			if n := len(b.Results); n > 0 && *b.Results[n-1].FinalTextComplete != tc.complete {
				t.Fatalf("final_text_complete %v", *b.Results[n-1].FinalTextComplete)
			}
			if st.epoch != from.Epoch && (!b.Screen.Reset || b.Screen.ResetReason == nil) {
				t.Fatalf("epoch moved without a reset: %+v", b.Screen)
			}
			if got := jsonLen(d.document(pureEnv, rpc.ReasonPageFull, ^uint64(0))) + cliWrapper; got > tc.max {
				t.Fatalf("document of %d bytes over max_bytes %d", got, tc.max)
			}
		})
	}
}

func TestBaselineOf(t *testing.T) {
	long := strings.Repeat("y", 4000)
	res := func(seq uint64, text string) *rpc.Result {
		return &rpc.Result{ExecutionSeq: seq, Status: rpc.StatusCompleted, FinalText: &text}
	}
	for _, tc := range []struct {
		name    string
		latest  *rpc.Result
		tail    []store.Row
		gaps    []rpc.Gap
		max     int
		want    sessionMark
		hasMore bool
		stable  int
	}{
		{"current state, result and tail", res(3, "ok"), pureRows(1, "a", "b", "c"), nil, 32 << 10, sessionMark{Event: 9, Result: 3, Row: 3, Epoch: 1}, false, 3},
		{"a long result is chunked and the mark set back", res(3, long), nil, nil, 1500, sessionMark{Event: 9, Result: 2, Row: 3, Epoch: 1, TextOff: -1}, true, 0},
		{"a gap resets the screen", nil, pureRows(2, "b", "c"), []rpc.Gap{{Component: "screen", Reason: "retention_overrun"}}, 32 << 10,
			sessionMark{Event: 9, Result: 3, Row: 3, Epoch: 1}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := pureState("u")
			st.cur = sessionMark{Event: 9, Result: 3, Row: 3, Epoch: 1}
			st.latest, st.tail = tc.latest, tc.tail
			d, err := baselineOf(pureEnv, st, pureReq(tc.max, true), tc.gaps, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want.TextOff < 0 {
				if d.mark.TextOff <= 0 || d.mark.TextOff >= len(long) {
					t.Fatalf("a chunk of %d bytes", d.mark.TextOff)
				}
				want.TextOff = d.mark.TextOff
			}
			if d.mark != want || d.hasMore != tc.hasMore || len(d.bucket.Screen.Stable) != tc.stable {
				t.Fatalf("mark %+v has_more %v stable %d", d.mark, d.hasMore, len(d.bucket.Screen.Stable))
			}
			if tc.gaps != nil && !d.bucket.Screen.Reset {
				t.Fatal("a screen gap without a reset")
			}
		})
	}
}

func TestEnumPage(t *testing.T) {
	in := func(n int, withResults bool) *enumInput {
		in := &enumInput{marks: map[string]sessionMark{}, states: map[string]*sessionState{}, newest: map[string]uint64{}}
		for i := range n {
			uid := string(rune('a' + i))
			st := pureState(uid)
			st.cur = sessionMark{Event: uint64(10 + i), Result: 1}
			if withResults {
				text := "r " + uid
				st.latest = &rpc.Result{ExecutionSeq: 1, Status: rpc.StatusCompleted, FinalText: &text}
				st.earlier = true
				in.newest[uid] = 1
			}
			in.todo = append(in.todo, uid)
			in.states[uid] = st
		}
		return in
	}
	// Three Sessions fit one page: the enumeration ends, every mark taken.
	a, err := enumPage(pureEnv, in(3, false), nil, pureReq(32<<10, false))
	if err != nil || len(a.buckets) != 3 || a.hasMore || a.next.enumerating || len(a.next.marks) != 3 || a.next.marks["b"].Event != 11 {
		t.Fatalf("three Sessions: %+v %v", a, err)
	}
	// Results beyond fetchMaxResults wait for the next page.
	a, err = enumPage(pureEnv, in(6, true), nil, pureReq(32<<10, false))
	if err != nil || len(a.buckets) != fetchMaxResults || !a.hasMore || !a.next.enumerating || len(a.next.enum) != 6-fetchMaxResults {
		t.Fatalf("six results: %+v %v", a, err)
	}
	// A result delivered in part on the last page is owed: the enumeration
	// goes on, with no Sessions left to list, until it is delivered.
	i := in(1, false)
	i.marks["z"] = sessionMark{Result: 1, TextOff: 5}
	if a, err := enumPage(pureEnv, i, nil, pureReq(32<<10, false)); err != nil || !a.hasMore || !a.next.enumerating || len(a.next.enum) != 0 {
		t.Fatalf("a partial result on an earlier page: %+v %v", a, err)
	}
	// A replay ends where the page it replays ended.
	upto := &allMark{marks: map[string]sessionMark{"a": {Event: 10, Result: 1}}, enumerating: true}
	if a, err := enumPage(pureEnv, in(3, false), upto, pureReq(32<<10, false)); err != nil || len(a.buckets) != 1 || len(a.next.enum) != 2 {
		t.Fatalf("replay: %+v %v", a, err)
	}
}

func TestAllDelta(t *testing.T) {
	prev := &allMark{marks: map[string]sessionMark{"a": {Event: 5}, "b": {Event: 6}, "c": {Event: 7}}}
	entries := func() []allEntry {
		return []allEntry{{uid: "a", from: prev.marks["a"], known: true}, {uid: "b", from: prev.marks["b"], known: true}, {uid: "c", from: prev.marks["c"], known: true}}
	}
	fr := pureReq(32<<10, false)

	// Nothing new: the same marks, nothing to say.
	a, err := allDelta(pureEnv, entries(), prev, nil, fr)
	if err != nil || len(a.buckets) != 0 || a.hasMore || a.next != prev {
		t.Fatalf("nothing new: %+v %v", a, err)
	}
	// A Session gone since: the marks move without it.
	a, err = allDelta(pureEnv, entries()[:2], prev, nil, fr)
	if err != nil || len(a.buckets) != 0 || sameAllMark(a.next, prev) || len(a.next.marks) != 2 {
		t.Fatalf("a Session gone: %+v %v", a, err)
	}

	// Events of two Sessions: one ascending prefix, their buckets only.
	es := entries()
	es[0].st, es[2].st = pureState("a"), pureState("c")
	es[0].st.events = []store.Event{pureEvent(9, rpc.EventSessionBusy), pureEvent(12, rpc.EventSessionIdle)}
	es[2].st.events = []store.Event{pureEvent(10, rpc.EventSessionBusy)}
	es[2].st.results = []store.Result{pureResult(1, "done")}
	a, err = allDelta(pureEnv, es, prev, nil, fr)
	if err != nil || len(a.buckets) != 2 || a.hasMore || a.next.marks["a"].Event != 12 || a.next.marks["c"] != (sessionMark{Event: 10, Result: 1}) || a.next.marks["b"] != prev.marks["b"] {
		t.Fatalf("two Sessions: %+v %v", a, err)
	}
	if !anyResults(a.buckets) {
		t.Fatal("the result is missing")
	}

	// A dropped result is a gap: that Session's bucket is a baseline.
	es = entries()
	es[1].st = pureState("b")
	es[1].st.cur = sessionMark{Event: 20, Result: 9}
	es[1].st.resultsEvicted = 4
	a, err = allDelta(pureEnv, es, prev, nil, fr)
	if err != nil || !a.gap || len(a.buckets) != 1 || len(a.buckets[0].Gaps) != 1 || a.next.marks["b"] != es[1].st.cur {
		t.Fatalf("a gap: %+v %v", a, err)
	}
}

// allKey tells allMarks apart exactly when sameAllMark does.
func TestAllKey(t *testing.T) {
	base := func() *allMark {
		return &allMark{marks: map[string]sessionMark{"a": {Event: 1, Result: 2, Row: 3, Epoch: 1}, "bc": {Event: 4}}}
	}
	variants := []func(*allMark){
		func(a *allMark) { a.marks["a"] = sessionMark{Event: 1, Result: 2, Row: 3, Epoch: 2} },
		func(a *allMark) { a.marks["a"] = sessionMark{Event: 1, Result: 2, Row: 3, Epoch: 1, TextOff: 7} },
		func(a *allMark) { a.marks["a"] = sessionMark{Event: 1, Result: 2, Row: 3, Epoch: 1, RowOff: 7} },
		func(a *allMark) { delete(a.marks, "bc"); a.marks["b"] = sessionMark{Event: 4} },
		func(a *allMark) { a.marks["c"] = sessionMark{} },
		func(a *allMark) { a.enumerating = true },
		func(a *allMark) { a.enumerating, a.enum = true, []string{"x"} },
		func(a *allMark) { a.enumerating, a.enum = true, []string{"x", "y"} },
	}
	// Two marks built apart (maps filled in another order) give one key.
	other := &allMark{marks: map[string]sessionMark{"bc": {Event: 4}}}
	other.marks["a"] = sessionMark{Event: 1, Result: 2, Row: 3, Epoch: 1}
	if k1, k2 := allKey(base()), allKey(other); k1 != k2 {
		t.Fatal("equal marks, different keys")
	}
	seen := map[string]int{allKey(base()): -1}
	for i, v := range variants {
		a := base()
		v(a)
		k := allKey(a)
		if j, ok := seen[k]; ok {
			t.Errorf("variant %d has the key of %d", i, j)
		}
		seen[k] = i
	}
}

// A quiet delta (every Session known, none moved) answers what allDelta
// answers for the entries it stands for.
func TestAllDeltaQuiet(t *testing.T) {
	prev := &allMark{marks: map[string]sessionMark{"a": {Event: 3}, "b": {Event: 5, Result: 1}}}
	es := []allEntry{{uid: "a", from: prev.marks["a"], known: true}, {uid: "b", from: prev.marks["b"], known: true}}
	fr := &fetchReq{budget: 64 << 10}
	want, err := allDelta(pureEnv, es, prev, nil, fr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := allDeltaOf(pureEnv, nil, true, prev, nil, fr)
	if err != nil {
		t.Fatal(err)
	}
	if got.next != prev || want.next != prev {
		t.Fatalf("quiet next %p, full next %p, want prev %p", got.next, want.next, prev)
	}
	g, _ := json.Marshal(got.document(pureEnv, rpc.ReasonTimeout, 7))
	w, _ := json.Marshal(want.document(pureEnv, rpc.ReasonTimeout, 7))
	if string(g) != string(w) {
		t.Fatalf("quiet document\n%s\nfull document\n%s", g, w)
	}
}
