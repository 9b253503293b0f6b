package fetchdoc

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

func pureState(uid string) *State {
	return &State{UID: uid, Session: rpc.Session{ID: "claude:" + uid, State: rpc.StateIdle}, Epoch: 1,
		Live: []string{"> "}, RowsFirst: 1, LatestEnd: -1}
}

func pureReq(maxBytes int, screen bool) *Req {
	return &Req{Screen: screen, StableCap: Stable, MaxBytes: maxBytes, Budget: maxBytes - CLIWrapper}
}

func TestDeltaOf(t *testing.T) {
	from := Mark{Event: 10, Result: 1, Row: 3, Epoch: 1}
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name     string
		st       func(*State)
		upto     *Mark
		max      int
		want     Mark
		hasMore  bool
		events   int
		results  int
		stable   int
		complete bool // the last result's final_text is complete
		err      error
	}{
		{name: "nothing new: only the epoch is confirmed", max: 32 << 10, want: from},
		{name: "the epoch moved: a reset, nothing else", st: func(s *State) { s.Epoch = 2 },
			max: 32 << 10, want: Mark{Event: 10, Result: 1, Row: 3, Epoch: 2}},
		{name: "events, a result and rows", st: func(s *State) {
			s.Events = []store.Event{pureEvent(11, rpc.EventSessionBusy), pureEvent(14, rpc.EventSessionIdle)}
			s.Results = []store.Result{pureResult(2, "done")}
			s.Rows = pureRows(4, "a", "b")
		}, max: 32 << 10, want: Mark{Event: 14, Result: 2, Row: 5, Epoch: 1}, events: 2, results: 1, stable: 2, complete: true},
		{name: "a replay stops at its successor", st: func(s *State) {
			s.Events = []store.Event{pureEvent(11, rpc.EventSessionBusy), pureEvent(14, rpc.EventSessionIdle)}
			s.Results = []store.Result{pureResult(2, "done")}
			s.Rows = pureRows(4, "a", "b")
		}, upto: &Mark{Event: 11, Result: 1, Row: 4, Epoch: 1},
			max: 32 << 10, want: Mark{Event: 11, Result: 1, Row: 4, Epoch: 1}, hasMore: true, events: 1, stable: 1},
		{name: "a long final_text is chunked", st: func(s *State) {
			s.Results = []store.Result{pureResult(2, long)}
		}, max: 1500, want: Mark{Event: 10, Result: 1, Row: 3, Epoch: 1, TextOff: -1}, hasMore: true, results: 1},
		{name: "too small for one chunk", st: func(s *State) {
			s.Results = []store.Result{pureResult(2, long)}
		}, max: 500, err: errTooSmall},
		{name: "more events than a page", st: func(s *State) {
			for i := range MaxEvents + 1 {
				s.Events = append(s.Events, pureEvent(uint64(11+i), rpc.EventSessionBusy))
			}
		}, max: 256 << 10, want: Mark{Event: 10 + MaxEvents, Result: 1, Row: 3, Epoch: 1}, hasMore: true, events: MaxEvents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := pureState("u")
			if tc.st != nil {
				tc.st(st)
			}
			d, err := DeltaOf(pureEnv, st, from, tc.upto, pureReq(tc.max, true))
			if tc.err != nil || err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			want := tc.want
			if want.TextOff < 0 { // a chunk: some text, not all
				if d.Mark.TextOff <= 0 || d.Mark.TextOff >= len(long) {
					t.Fatalf("a chunk of %d bytes", d.Mark.TextOff)
				}
				want.TextOff = d.Mark.TextOff
			}
			b := d.Bucket
			if d.Mark != want || d.HasMore != tc.hasMore || len(b.Events) != tc.events || len(b.Results) != tc.results || len(b.Screen.Stable) != tc.stable {
				t.Fatalf("mark %+v has_more %v events %d results %d stable %d; want %+v %v %d %d %d",
					d.Mark, d.HasMore, len(b.Events), len(b.Results), len(b.Screen.Stable), want, tc.hasMore, tc.events, tc.results, tc.stable)
			}
			if n := len(b.Results); n > 0 && *b.Results[n-1].FinalTextComplete != tc.complete {
				t.Fatalf("final_text_complete %v", *b.Results[n-1].FinalTextComplete)
			}
			if st.Epoch != from.Epoch && (!b.Screen.Reset || b.Screen.ResetReason == nil) {
				t.Fatalf("epoch moved without a reset: %+v", b.Screen)
			}
			if got := JSONLen(d.Document(pureEnv, rpc.ReasonPageFull, ^uint64(0))) + CLIWrapper; got > tc.max {
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
		want    Mark
		hasMore bool
		stable  int
	}{
		{"current state, result and tail", res(3, "ok"), pureRows(1, "a", "b", "c"), nil, 32 << 10, Mark{Event: 9, Result: 3, Row: 3, Epoch: 1}, false, 3},
		{"a long result is chunked and the mark set back", res(3, long), nil, nil, 1500, Mark{Event: 9, Result: 2, Row: 3, Epoch: 1, TextOff: -1}, true, 0},
		{"a gap resets the screen", nil, pureRows(2, "b", "c"), []rpc.Gap{{Component: "screen", Reason: "retention_overrun"}}, 32 << 10,
			Mark{Event: 9, Result: 3, Row: 3, Epoch: 1}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := pureState("u")
			st.Cur = Mark{Event: 9, Result: 3, Row: 3, Epoch: 1}
			st.Latest, st.Tail = tc.latest, tc.tail
			d, err := BaselineOf(pureEnv, st, pureReq(tc.max, true), tc.gaps, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want.TextOff < 0 {
				if d.Mark.TextOff <= 0 || d.Mark.TextOff >= len(long) {
					t.Fatalf("a chunk of %d bytes", d.Mark.TextOff)
				}
				want.TextOff = d.Mark.TextOff
			}
			if d.Mark != want || d.HasMore != tc.hasMore || len(d.Bucket.Screen.Stable) != tc.stable {
				t.Fatalf("mark %+v has_more %v stable %d", d.Mark, d.HasMore, len(d.Bucket.Screen.Stable))
			}
			if tc.gaps != nil && !d.Bucket.Screen.Reset {
				t.Fatal("a screen gap without a reset")
			}
		})
	}
}

func TestEnumPage(t *testing.T) {
	in := func(n int, withResults bool) *EnumInput {
		in := &EnumInput{Marks: map[string]Mark{}, States: map[string]*State{}, Newest: map[string]uint64{}}
		for i := range n {
			uid := string(rune('a' + i))
			st := pureState(uid)
			st.Cur = Mark{Event: uint64(10 + i), Result: 1}
			if withResults {
				text := "r " + uid
				st.Latest = &rpc.Result{ExecutionSeq: 1, Status: rpc.StatusCompleted, FinalText: &text}
				st.Earlier = true
				in.Newest[uid] = 1
			}
			in.Todo = append(in.Todo, uid)
			in.States[uid] = st
		}
		return in
	}
	// Three Sessions fit one page: the enumeration ends, every mark taken.
	a, err := EnumPage(pureEnv, in(3, false), nil, pureReq(32<<10, false))
	if err != nil || len(a.Buckets) != 3 || a.HasMore || a.Next.Enumerating || len(a.Next.Marks) != 3 || a.Next.Marks["b"].Event != 11 {
		t.Fatalf("three Sessions: %+v %v", a, err)
	}
	// Results beyond fetchMaxResults wait for the next page.
	a, err = EnumPage(pureEnv, in(6, true), nil, pureReq(32<<10, false))
	if err != nil || len(a.Buckets) != MaxResults || !a.HasMore || !a.Next.Enumerating || len(a.Next.Enum) != 6-MaxResults {
		t.Fatalf("six results: %+v %v", a, err)
	}
	// A result delivered in part on the last page is owed: the enumeration
	// goes on, with no Sessions left to list, until it is delivered.
	i := in(1, false)
	i.Marks["z"] = Mark{Result: 1, TextOff: 5}
	if a, err := EnumPage(pureEnv, i, nil, pureReq(32<<10, false)); err != nil || !a.HasMore || !a.Next.Enumerating || len(a.Next.Enum) != 0 {
		t.Fatalf("a partial result on an earlier page: %+v %v", a, err)
	}
	// A replay ends where the page it replays ended.
	upto := &AllMark{Marks: map[string]Mark{"a": {Event: 10, Result: 1}}, Enumerating: true}
	if a, err := EnumPage(pureEnv, in(3, false), upto, pureReq(32<<10, false)); err != nil || len(a.Buckets) != 1 || len(a.Next.Enum) != 2 {
		t.Fatalf("replay: %+v %v", a, err)
	}
}

func TestAllDelta(t *testing.T) {
	prev := &AllMark{Marks: map[string]Mark{"a": {Event: 5}, "b": {Event: 6}, "c": {Event: 7}}}
	entries := func() []AllEntry {
		return []AllEntry{{UID: "a", From: prev.Marks["a"], Known: true}, {UID: "b", From: prev.Marks["b"], Known: true}, {UID: "c", From: prev.Marks["c"], Known: true}}
	}
	fr := pureReq(32<<10, false)

	// Nothing new: the same marks, nothing to say.
	a, err := allDelta(pureEnv, entries(), prev, nil, fr)
	if err != nil || len(a.Buckets) != 0 || a.HasMore || a.Next != prev {
		t.Fatalf("nothing new: %+v %v", a, err)
	}
	// A Session gone since: the marks move without it.
	a, err = allDelta(pureEnv, entries()[:2], prev, nil, fr)
	if err != nil || len(a.Buckets) != 0 || SameAllMark(a.Next, prev) || len(a.Next.Marks) != 2 {
		t.Fatalf("a Session gone: %+v %v", a, err)
	}

	// Events of two Sessions: one ascending prefix, their buckets only.
	es := entries()
	es[0].St, es[2].St = pureState("a"), pureState("c")
	es[0].St.Events = []store.Event{pureEvent(9, rpc.EventSessionBusy), pureEvent(12, rpc.EventSessionIdle)}
	es[2].St.Events = []store.Event{pureEvent(10, rpc.EventSessionBusy)}
	es[2].St.Results = []store.Result{pureResult(1, "done")}
	a, err = allDelta(pureEnv, es, prev, nil, fr)
	if err != nil || len(a.Buckets) != 2 || a.HasMore || a.Next.Marks["a"].Event != 12 || a.Next.Marks["c"] != (Mark{Event: 10, Result: 1}) || a.Next.Marks["b"] != prev.Marks["b"] {
		t.Fatalf("two Sessions: %+v %v", a, err)
	}
	if !AnyResults(a.Buckets) {
		t.Fatal("the result is missing")
	}

	// A dropped result is a gap: that Session's bucket is a baseline.
	es = entries()
	es[1].St = pureState("b")
	es[1].St.Cur = Mark{Event: 20, Result: 9}
	es[1].St.ResultsEvicted = 4
	a, err = allDelta(pureEnv, es, prev, nil, fr)
	if err != nil || !a.Gap || len(a.Buckets) != 1 || len(a.Buckets[0].Gaps) != 1 || a.Next.Marks["b"] != es[1].St.Cur {
		t.Fatalf("a gap: %+v %v", a, err)
	}
}

// allKey tells allMarks apart exactly when sameAllMark does.
func TestAllKey(t *testing.T) {
	base := func() *AllMark {
		return &AllMark{Marks: map[string]Mark{"a": {Event: 1, Result: 2, Row: 3, Epoch: 1}, "bc": {Event: 4}}}
	}
	variants := []func(*AllMark){
		func(a *AllMark) { a.Marks["a"] = Mark{Event: 1, Result: 2, Row: 3, Epoch: 2} },
		func(a *AllMark) { a.Marks["a"] = Mark{Event: 1, Result: 2, Row: 3, Epoch: 1, TextOff: 7} },
		func(a *AllMark) { a.Marks["a"] = Mark{Event: 1, Result: 2, Row: 3, Epoch: 1, RowOff: 7} },
		func(a *AllMark) { delete(a.Marks, "bc"); a.Marks["b"] = Mark{Event: 4} },
		func(a *AllMark) { a.Marks["c"] = Mark{} },
		func(a *AllMark) { a.Enumerating = true },
		func(a *AllMark) { a.Enumerating, a.Enum = true, []string{"x"} },
		func(a *AllMark) { a.Enumerating, a.Enum = true, []string{"x", "y"} },
	}
	// Two marks built apart (maps filled in another order) give one key.
	other := &AllMark{Marks: map[string]Mark{"bc": {Event: 4}}}
	other.Marks["a"] = Mark{Event: 1, Result: 2, Row: 3, Epoch: 1}
	if k1, k2 := AllKey(base()), AllKey(other); k1 != k2 {
		t.Fatal("equal marks, different keys")
	}
	seen := map[string]int{AllKey(base()): -1}
	for i, v := range variants {
		a := base()
		v(a)
		k := AllKey(a)
		if j, ok := seen[k]; ok {
			t.Errorf("variant %d has the key of %d", i, j)
		}
		seen[k] = i
	}
}

// A quiet delta (every Session known, none moved) answers what allDelta
// answers for the entries it stands for.
func TestAllDeltaQuiet(t *testing.T) {
	prev := &AllMark{Marks: map[string]Mark{"a": {Event: 3}, "b": {Event: 5, Result: 1}}}
	es := []AllEntry{{UID: "a", From: prev.Marks["a"], Known: true}, {UID: "b", From: prev.Marks["b"], Known: true}}
	fr := &Req{Budget: 64 << 10}
	want, err := allDelta(pureEnv, es, prev, nil, fr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AllDeltaOf(pureEnv, nil, true, prev, nil, fr)
	if err != nil {
		t.Fatal(err)
	}
	if got.Next != prev || want.Next != prev {
		t.Fatalf("quiet next %p, full next %p, want prev %p", got.Next, want.Next, prev)
	}
	g, _ := json.Marshal(got.Document(pureEnv, rpc.ReasonTimeout, 7))
	w, _ := json.Marshal(want.Document(pureEnv, rpc.ReasonTimeout, 7))
	if string(g) != string(w) {
		t.Fatalf("quiet document\n%s\nfull document\n%s", g, w)
	}
}

// EventLoss tells a mark after the newest dropped event from one before
// it, and lets the evicted seqs go once it holds more than 1024.
func TestEventLoss(t *testing.T) {
	var l EventLoss
	for _, seq := range []uint64{3, 5, 9} {
		l.Note(seq, 0)
	}
	if l.LostAfter(0, 2) {
		t.Fatal("nothing of the Session was evicted, yet a loss")
	}
	if !l.LostAfter(4, 6) || l.LostAfter(5, 6) {
		t.Fatal("seq 5 evicted: a mark before it lost it, one at it did not")
	}
	for seq := uint64(10); seq < 3000; seq++ {
		l.Note(seq, seq-100)
	}
	if len(l.seqs) > 1025 {
		t.Fatalf("%d seqs kept", len(l.seqs))
	}
}

// A result's tool_calls come only when asked, on its first chunk, as
// many of the first calls as take a quarter of the room, flagged when
// some are left out; a chunk that does not fit with them goes without.
func TestFitChunkToolCalls(t *testing.T) {
	text := "answer"
	var calls []rpc.ResultToolCall
	for i := 0; i < 10; i++ {
		calls = append(calls, rpc.ResultToolCall{ID: strings.Repeat("i", 20), Tool: "Bash", Status: rpc.ToolStatusCompleted, Input: json.RawMessage(`{"command":"` + strings.Repeat("x", 100) + `"}`)})
	}
	res := rpc.Result{ExecutionSeq: 1, Status: rpc.StatusCompleted, FinalText: &text, ToolCalls: calls}
	if r, _, _, ok := fitChunk(res, text, true, 0, 64<<10, false); !ok || r.ToolCalls != nil || r.ToolCallsTruncated {
		t.Errorf("not asked: %+v", r)
	}
	if r, _, _, ok := fitChunk(res, text, true, 0, 64<<10, true); !ok || len(r.ToolCalls) != 10 || r.ToolCallsTruncated {
		t.Errorf("room for all: %d calls, cut %v", len(r.ToolCalls), r.ToolCallsTruncated)
	}
	room := 4 * (JSONLen(calls[:3]) + 64)
	r, piece, _, ok := fitChunk(res, text, true, 0, room, true)
	if !ok || len(r.ToolCalls) != 3 || !r.ToolCallsTruncated || piece != text {
		t.Errorf("a quarter of %d: %d calls, cut %v, %q", room, len(r.ToolCalls), r.ToolCallsTruncated, piece)
	}
	if r, _, _, _ := fitChunk(res, text[2:], true, 2, 64<<10, true); r.ToolCalls != nil {
		t.Errorf("a later chunk carries %d calls", len(r.ToolCalls))
	}
	// Too small a room for any call: the chunk goes, flagged.
	r, piece, _, ok = fitChunk(res, text, true, 0, JSONLen(WithChunk(rpc.Result{ExecutionSeq: 1, Status: rpc.StatusCompleted}, text, 0, true))+40, true)
	if !ok || r.ToolCalls != nil || !r.ToolCallsTruncated || piece != text {
		t.Errorf("tight room: %+v %q %v", r, piece, ok)
	}
}
