package daemon

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Long-polls woken by the same change share one rendering per position
// and bounds: every waiter gets the same window and the same cursor (one
// position minted per distinct bounds, not one per waiter), whatever its
// until mode, and a later replay of that position returns the same
// window. (A replay under other bounds than the first advancing fetch's
// may end short of its successor and mint its own position, as without
// sharing; so cursors are compared within a group only.)
func TestFetchSharedWake(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "w")
	startExec(rt, s)
	base, _ := fetchDoc(t, rt, map[string]any{"session": "claude:w", "screen": false})

	var parked atomic.Int64
	hook := func() { parked.Add(1) }
	fetchParkHook.Store(&hook)
	defer fetchParkHook.Store(nil)

	type group struct {
		name   string
		params map[string]any
		n      int
		mu     sync.Mutex
		docs   []string
		raws   [][]byte
	}
	long := strings.Repeat("long final text ", 200)
	groups := []*group{
		{name: "result", n: 40, params: map[string]any{"until": "result"}},
		{name: "any", n: 40, params: map[string]any{"until": "any"}},
		{name: "small", n: 20, params: map[string]any{"until": "any", "max_bytes": 1200}},
		{name: "screen", n: 20, params: map[string]any{"until": "result", "screen": 0}},
	}
	var wg sync.WaitGroup
	total := 0
	for _, g := range groups {
		g.params["session"], g.params["cursor"], g.params["wait_ms"] = "claude:w", base.Cursor, 20000
		if _, ok := g.params["screen"]; !ok {
			g.params["screen"] = false
		}
		for range g.n {
			total++
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, err := fetchRaw(t, rt, g.params)
				if err != nil {
					t.Errorf("%s: %v", g.name, err)
					return
				}
				g.mu.Lock()
				g.docs = append(g.docs, stripCurrent(t, raw))
				g.raws = append(g.raws, raw)
				g.mu.Unlock()
			}()
		}
	}
	for deadline := time.Now().Add(10 * time.Second); parked.Load() < int64(total); {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d waiters parked", parked.Load(), total)
		}
		time.Sleep(time.Millisecond)
	}
	before := rt.positions.LastMinted(s.uid)
	finishExec(rt, s, long)
	wg.Wait()
	minted := rt.positions.LastMinted(s.uid) - before
	if minted > uint64(len(groups)) {
		t.Errorf("%d positions minted for %d distinct requests", minted, len(groups))
	}
	for _, g := range groups {
		if len(g.docs) != g.n {
			t.Fatalf("%s: %d of %d answered", g.name, len(g.docs), g.n)
		}
		for i, d := range g.docs {
			if d != g.docs[0] {
				t.Fatalf("%s: waiter %d got\n%s\nwaiter 0 got\n%s", g.name, i, d, g.docs[0])
			}
		}
		var doc rpc.FetchDocument
		if err := json.Unmarshal(g.raws[0], &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Reason != rpc.ReasonResult && doc.Reason != rpc.ReasonPageFull {
			t.Errorf("%s: reason %s", g.name, doc.Reason)
		}
		if g.name == "small" && !doc.HasMore {
			t.Errorf("small: a 1200-byte page should not carry the whole result")
		}
		if mb, ok := g.params["max_bytes"].(int); ok && len(g.raws[0])+fetchdoc.CLIWrapper > mb {
			t.Errorf("%s: %d bytes over max_bytes %d", g.name, len(g.raws[0]), mb)
		}
	}
	// A replay of the position, now, returns the window of the first
	// advancing fetch from it (whichever group linked its successor).
	p0, err := rt.positions.Get(s.uid, mustUint(t, base.Cursor))
	if err != nil {
		t.Fatal(err)
	}
	next := rpc.FormatPosition(rt.positions.NextOf(p0))
	linked := 0
	for _, g := range groups {
		own := false
		for _, raw := range g.raws {
			var doc rpc.FetchDocument
			json.Unmarshal(raw, &doc)
			own = own || doc.Cursor == next
		}
		if !own {
			continue
		}
		linked++
		p := map[string]any{}
		for k, v := range g.params {
			p[k] = v
		}
		p["wait_ms"] = 0
		_, raw := fetchDoc(t, rt, p)
		if got, want := stripCursor(t, stripCurrent(t, raw), false), stripCursor(t, g.docs[0], false); got != want {
			t.Errorf("%s: replay\n%s\nwoken\n%s", g.name, got, want)
		}
	}
	if linked == 0 {
		t.Errorf("no group holds the successor position %s", next)
	}
	// The until:any and until:result waiters with the same bounds shared
	// one evaluation, so one cursor.
	var a, r rpc.FetchDocument
	json.Unmarshal(groups[0].raws[0], &r)
	json.Unmarshal(groups[1].raws[0], &a)
	if a.Cursor != r.Cursor {
		t.Errorf("until:any cursor %s, until:result cursor %s", a.Cursor, r.Cursor)
	}
}

// A woken waiter that joins a shared evaluation under which its bound
// execution is still running parks again on that evaluation's generation
// and is answered by the next change.
func TestFetchSharedWakeRewaits(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "w")
	base, _ := fetchDoc(t, rt, map[string]any{"session": "claude:w", "screen": false})
	seq := startExec(rt, s)
	var parked atomic.Int64
	hook := func() { parked.Add(1) }
	fetchParkHook.Store(&hook)
	defer fetchParkHook.Store(nil)
	const n = 30
	docs := make(chan *rpc.FetchDocument, n)
	for range n {
		go func() {
			d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:w", "cursor": base.Cursor, "until": "result", "wait_ms": 20000, "screen": false})
			docs <- d
		}()
	}
	waitParked := func(want int64) {
		for deadline := time.Now().Add(10 * time.Second); parked.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d parks", parked.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitParked(n)
	// A change that is not the result: everyone wakes, shares, re-parks.
	s.mu.Lock()
	rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionResumed, ExecutionSeq: seq})
	s.mu.Unlock()
	waitParked(2 * n)
	select {
	case d := <-docs:
		t.Fatalf("answered before the result: %+v", d)
	default:
	}
	finishExec(rt, s, "done")
	for range n {
		select {
		case d := <-docs:
			if d.Reason != rpc.ReasonResult || len(d.Sessions[0].Results) != 1 || len(d.Sessions[0].Events) != 3 {
				t.Fatalf("reason %s, %d results, %d events", d.Reason, len(d.Sessions[0].Results), len(d.Sessions[0].Events))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("waiter not answered")
		}
	}
}

// stripCursor drops a document's cursor unless keep.
func stripCursor(t testing.TB, doc string, keep bool) string {
	t.Helper()
	if keep {
		return doc
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "cursor")
	out, _ := json.Marshal(m)
	return string(out)
}

// jsonStrLen and chunkSizer size exactly what the wire encoding renders.
func TestFetchJSONSizers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f", "\x7f", "<", ">", "&",
		"é", "日", "😀", "\u2028", "\u2029", "\ufffd", "\xff", "\xe6\x97", "\xf0\x9f"}
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		str := b.String()
		if got, want := fetchdoc.JSONStrLen(str), fetchdoc.JSONLen(str); got != want {
			t.Fatalf("jsonStrLen(%q) = %d, want %d", str, got, want)
		}
		text := str
		for _, r := range []rpc.Result{
			{ExecutionSeq: 7, Status: rpc.StatusCompleted, FinalText: &text, FinalTextSource: rpc.TextSourceHook, StartedAtMS: 1, CompletedAtMS: 2},
			{ExecutionSeq: 8, Status: rpc.StatusInterrupted, Error: &rpc.ResultError{Code: "x", Message: "y"}},
		} {
			off := rng.IntN(100000)
			size := fetchdoc.ChunkSizer(r, off)
			for _, c := range []bool{true, false} {
				for _, piece := range []string{"", str, str[:len(str)/2]} {
					if got, want := size(piece, c), fetchdoc.JSONLen(fetchdoc.WithChunk(r, piece, off, c)); got != want {
						t.Fatalf("chunk %q off %d complete %v: %d, want %d", piece, off, c, got, want)
					}
				}
			}
		}
	}
}

func mustUint(t testing.TB, s string) uint64 {
	t.Helper()
	n, ok, err := rpc.ParsePosition(json.RawMessage(`"` + s + `"`))
	if err != nil || !ok {
		t.Fatalf("cursor %q: %v", s, err)
	}
	return n
}

// The parking lot: long polls of one key share one evaluation made only
// after the change, handed to each of them; the last one to leave before
// the change abandons it (nothing evaluates); one that parks after the
// change gets an evaluation of its own at once; a panicking evaluation
// is handed out as INTERNAL instead of taking the daemon down.
func TestFetchSharesParkingLot(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "w")
	fs := &fetchShares{}
	pos := &positions.Position{}
	changed := make(chan struct{})
	k := shareKey{pos: pos, maxBytes: 1, wokeFrom: changed}
	var evals atomic.Int64
	eval := func(st *stepResult) {
		evals.Add(1)
		select {
		case <-changed:
		default:
			t.Error("evaluated before the change")
		}
		st.err = rpc.Errorf(rpc.CodeInternal, "evaluation %d", evals.Load())
	}
	// Long polls that answer with whatever evaluation they are handed.
	answers := make(chan error, 100)
	newPoll := func() *longPoll {
		lp := &longPoll{ft: rt.fetch, s: s, pos: pos, fr: &fetchdoc.Req{}}
		lp.respond = func(_ any, err error) { answers <- err }
		lp.timer = time.NewTimer(time.Hour)
		return lp
	}
	lotSize := func() int { return fs.lot.Len("s") }

	// Abandoned: both waiters leave before the change.
	a, b := newPoll(), newPoll()
	ea := fs.park("s", k, a, eval)
	if eb := fs.park("s", k, b, eval); eb != ea {
		t.Fatal("two waiters of one key got two entries")
	}
	if !fs.unpark("s", k, ea, a) || lotSize() != 1 {
		t.Fatal("abandoned while a waiter remained")
	}
	fs.unpark("s", k, ea, b)
	select {
	case <-ea.Abandoned():
	case <-time.After(5 * time.Second):
		t.Fatal("not abandoned after the last waiter left")
	}
	if lotSize() != 0 {
		t.Error("abandoned entry still parked")
	}

	// Shared: many waiters, one evaluation after the change, handed to all.
	var e *shareEntry
	for range 50 {
		e = fs.park("s", k, newPoll(), eval)
	}
	select {
	case err := <-answers:
		t.Fatalf("answered before the change: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(changed)
	for range 50 {
		select {
		case err := <-answers:
			if !strings.Contains(fmt.Sprint(err), "evaluation 1") {
				t.Fatalf("handed %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not answered")
		}
	}
	if evals.Load() != 1 || lotSize() != 0 || fs.unpark("s", k, e, newPoll()) {
		t.Errorf("%d evaluations, %d parked, fired entry unparked", evals.Load(), lotSize())
	}

	// Late: the change has happened, so a new parker is evaluated at once.
	fs.park("s", k, newPoll(), eval)
	select {
	case err := <-answers:
		if !strings.Contains(fmt.Sprint(err), "evaluation 2") {
			t.Errorf("late waiter handed %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter parked after its change was not answered")
	}

	// Panic.
	fs.park("s", shareKey{pos: pos, wokeFrom: changed}, newPoll(), func(*stepResult) { panic("boom") })
	select {
	case err := <-answers:
		if rpc.AsError(err).Code != rpc.CodeInternal || !strings.Contains(err.Error(), "boom") {
			t.Errorf("panicking evaluation handed %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a panicking evaluation answered nobody")
	}
}
