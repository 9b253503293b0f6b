package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
)

// crashWorkload is what a scripted client saw before the daemon was
// SIGKILLed: the receipts it was handed and the windows its fetches
// returned.
type crashWorkload struct {
	receipts []crashReceipt
	windows  map[string]map[string]crashWindow // session -> cursor -> window seen from it
	cursors  map[string]map[string]bool        // session -> every cursor handed out
	cwds     []string
	ids      []string
	reqN     int
	expired  int // fetch-minted cursors lost to a crash (CURSOR_EXPIRED)
}

type crashReceipt struct {
	session string
	exec    uint64
	cursor  string
}

// crashWindow is the immutable part of a fetch from a cursor: the event
// seqs and (execution seq, offset) pieces of results it carried.
type crashWindow struct {
	events  []uint64
	results []string
}

func windowOf(doc *rpc.FetchDocument) crashWindow {
	var w crashWindow
	for _, b := range doc.Sessions {
		for _, e := range b.Events {
			w.events = append(w.events, e.Seq)
		}
		for _, r := range b.Results {
			off := 0
			if r.FinalTextOffset != nil {
				off = *r.FinalTextOffset
			}
			w.results = append(w.results, fmt.Sprintf("%d@%d+%d", r.ExecutionSeq, off, len(fetchdoc.DerefText(&r))))
		}
	}
	return w
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func isPrefix[T comparable](p, s []T) bool { return len(p) <= len(s) && slices.Equal(p, s[:len(p)]) }

// transportErr reports whether err is the daemon going away (not an RPC
// error the daemon answered).
func transportErr(err error) bool {
	var re *rpc.Error
	return err != nil && (!errors.As(err, &re) || re.Code == rpc.CodeRPCUnavailable || re.Code == rpc.CodeInternal)
}

// run drives the scripted workload until the daemon dies (or stop closes).
func (w *crashWorkload) run(t *testing.T, td *testDaemon, rng *rand.Rand, dead *atomic.Bool) {
	note := func(id, cursor string) {
		if w.cursors[id] == nil {
			w.cursors[id] = map[string]bool{}
			w.windows[id] = map[string]crashWindow{}
		}
		w.cursors[id][cursor] = true
	}
	accept := func(method string, params any) bool {
		var r rpc.Receipt
		err := td.call(method, params, &r)
		if err != nil {
			return !transportErr(err) && !dead.Load()
		}
		w.receipts = append(w.receipts, crashReceipt{r.Session.ID, r.ExecutionSeq, r.Cursor})
		note(r.Session.ID, r.Cursor)
		if !slices.Contains(w.ids, r.Session.ID) {
			w.ids = append(w.ids, r.Session.ID)
		}
		return true
	}
	for !dead.Load() {
		w.reqN++
		rid := fmt.Sprint("w", w.reqN)
		op := rng.IntN(100)
		if len(w.ids) == 0 || (op < 10 && len(w.ids) < 6) {
			cwd := t.TempDir()
			w.cwds = append(w.cwds, cwd)
			if !accept(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "crash " + rid, Harness: "claude", Cwd: cwd,
				Prompt: "create " + rid, RequestID: rid, Environment: td.env}) {
				return
			}
			continue
		}
		id := w.ids[rng.IntN(len(w.ids))]
		var err error
		switch {
		case op < 40: // a follow-up (resuming a stopped or failed Session)
			if !accept(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "follow " + rid, RequestID: rid,
				Resume: true, Environment: td.env}) {
				return
			}
		case op < 48: // a turn that is canceled
			if !accept(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "[[slow 5000]] cancel " + rid, RequestID: rid,
				Resume: true, Environment: td.env}) {
				return
			}
			err = td.call(rpc.MethodSessionCancel, map[string]any{"session": id, "timeout_ms": 3000}, nil)
		case op < 53:
			err = td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: rng.IntN(2) == 0}, nil)
		case op < 70: // a cursorless fetch
			var doc rpc.FetchDocument
			if err = td.call(rpc.MethodSessionFetch, map[string]any{"session": id, "screen": false}, &doc); err == nil {
				note(id, doc.Cursor)
			}
		default: // a fetch from a cursor this client holds
			var cs []string
			for c := range w.cursors[id] {
				cs = append(cs, c)
			}
			if len(cs) == 0 {
				continue
			}
			slices.Sort(cs)
			c := cs[rng.IntN(len(cs))]
			var doc rpc.FetchDocument
			err = td.call(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": c, "screen": false, "wait_ms": rng.IntN(300)}, &doc)
			if err == nil {
				if _, seen := w.windows[id][c]; !seen {
					w.windows[id][c] = windowOf(&doc)
				}
				note(id, doc.Cursor)
			}
		}
		if transportErr(err) || dead.Load() {
			return
		}
	}
}

// TestCrashLoopPositions SIGKILLs the daemon at random points of a
// scripted workload (creates, follow-ups, cancels, stops, cursorless and
// cursored fetches), 20 times, and checks through the public RPC only:
// every acceptance cursor resolves to a window whose results are exactly
// those after its acceptance; a cursor handed out before a crash replays
// what it returned then, or is CURSOR_EXPIRED, and numbers minted later
// are new; every retained result is readable; and every retained result
// has an event closing its execution with its status.
// DLGT_CRASH_LOOPS sets the number of kills (-short: 5).
func TestCrashLoopPositions(t *testing.T) {
	loops := 20
	if testing.Short() {
		loops = 5
	}
	if v, err := strconv.Atoi(os.Getenv("DLGT_CRASH_LOOPS")); err == nil && v > 0 {
		loops = v
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	td, cd := startChild(t)
	w := &crashWorkload{windows: map[string]map[string]crashWindow{}, cursors: map[string]map[string]bool{}}
	// A follower, as dlgt events --follow is: it subscribes from seq 0 and,
	// whenever the daemon goes away, subscribes again after the last seq
	// it received.
	fctx, fstop := context.WithCancel(context.Background())
	var fmu sync.Mutex
	var seqs []uint64 // guarded by fmu
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		for fctx.Err() == nil {
			c, err := rpc.Dial(fctx, td.paths.Socket)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			after := uint64(0)
			fmu.Lock()
			if n := len(seqs); n > 0 {
				after = seqs[n-1]
			}
			fmu.Unlock()
			if _, next, err := c.Subscribe(fctx, rpc.MethodEventSubscribe, rpc.EventReadParams{After: &after}); err == nil {
				for {
					line, err := next()
					if err != nil {
						break
					}
					var e rpc.Event
					if json.Unmarshal(line, &e) == nil {
						fmu.Lock()
						seqs = append(seqs, e.Seq)
						fmu.Unlock()
					}
				}
			}
			c.Close()
		}
	}()
	for loop := 0; loop < loops; loop++ {
		var dead atomic.Bool
		kill := time.Duration(200+rng.IntN(1500)) * time.Millisecond
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.run(t, td, rng, &dead)
		}()
		time.Sleep(kill)
		dead.Store(true)
		cd.kill9()
		<-done
		// The harnesses outlive the daemon as orphans: kill their groups.
		var groups []int
		for _, cwd := range w.cwds {
			groups = append(groups, harnessPIDs(t, cwd)...)
		}
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
			waitGroupGone(t, g)
		}
		cd.start()
		checkCrashLoop(t, td, w, loop)
	}
	windows := 0
	for _, ws := range w.windows {
		windows += len(ws)
	}
	// The follower saw every event seq exactly once, in order.
	var all []rpc.Event
	for after := uint64(0); ; {
		var page []rpc.Event
		td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{After: &after}, &page)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	var want []uint64
	for _, e := range all {
		want = append(want, e.Seq)
	}
	for deadline := time.Now().Add(lifecycleGuard); ; time.Sleep(10 * time.Millisecond) {
		fmu.Lock()
		n := len(seqs)
		fmu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	fstop()
	<-followed
	got := seqs
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("the follower saw %d events, the log has %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("the follower saw seq %d after %d", got[i], got[i-1])
		}
	}
	t.Logf("%d kills: %d Sessions, %d requests, %d receipts checked, %d fetch windows replayed, %d expired after a crash, %d events followed across the kills",
		loops, len(w.ids), w.reqN, len(w.receipts), windows, w.expired, len(got))
	cd.stop()
}

func checkCrashLoop(t *testing.T, td *testDaemon, w *crashWorkload, loop int) {
	t.Helper()
	// Every position these checks are handed counts as handed out (and
	// toward retention, which may drop an old receipt's cursor).
	var minted []string
	fetch := func(params map[string]any) (*rpc.FetchDocument, error) {
		var doc rpc.FetchDocument
		err := td.call(rpc.MethodSessionFetch, params, &doc)
		if err == nil {
			minted = append(minted, params["session"].(string), doc.Cursor)
		}
		return &doc, err
	}
	defer func() {
		for i := 0; i+1 < len(minted); i += 2 {
			w.cursors[minted[i]][minted[i+1]] = true
		}
	}()
	maxSeen := map[string]uint64{}
	for id, cs := range w.cursors {
		for c := range cs {
			maxSeen[id] = max(maxSeen[id], cursorNum(t, c))
		}
	}
	// Acceptance cursors: the results after the acceptance, its own first.
	for _, r := range w.receipts {
		if len(w.cursors[r.session]) > positions.PerSession/2 {
			continue // retention may have dropped it legitimately
		}
		doc, err := fetch(map[string]any{"session": r.session, "cursor": r.cursor, "screen": false})
		if err != nil {
			t.Fatalf("loop %d: receipt cursor %s of %s (execution %d): %v", loop, r.cursor, r.session, r.exec, err)
		}
		for i, res := range doc.Sessions[0].Results {
			if res.ExecutionSeq != r.exec+uint64(i) {
				t.Fatalf("loop %d: receipt cursor %s of execution %d returned results %v", loop, r.cursor, r.exec, windowOf(doc).results)
			}
		}
	}
	// Fetch-minted cursors: the window seen then, or CURSOR_EXPIRED.
	for id, ws := range w.windows {
		for c, was := range ws {
			doc, err := fetch(map[string]any{"session": id, "cursor": c, "screen": false})
			if err != nil {
				var re *rpc.Error
				if !errors.As(err, &re) || re.Code != rpc.CodeCursorExpired {
					t.Fatalf("loop %d: cursor %s: %v", loop, c, err)
				}
				w.expired++
				delete(ws, c)
				continue
			}
			now := windowOf(doc)
			if !isPrefix(was.events, now.events) || !isPrefix(was.results, now.results) {
				t.Fatalf("loop %d: cursor %s of %s named another window after the crash: was %+v, now %+v", loop, c, id, was, now)
			}
		}
	}
	for _, id := range w.ids {
		// A position minted now is new, or an old one with the same vector.
		doc, err := fetch(map[string]any{"session": id, "screen": false})
		if err != nil {
			t.Fatalf("loop %d: baseline of %s: %v", loop, id, err)
		}
		if n := cursorNum(t, doc.Cursor); n <= maxSeen[id] && !w.cursors[id][doc.Cursor] {
			t.Fatalf("loop %d: baseline position %d of %s is not new (max handed out %d) and was never handed out", loop, n, id, maxSeen[id])
		}
		// Every retained result, in order, none missing.
		var rd rpc.SessionReadResult
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &rd)
		var seqs []uint64
		statuses := map[uint64]string{}
		for p := (map[string]any{"session": id, "after_execution": 0, "screen": false}); ; {
			doc, err := fetch(p)
			if err != nil {
				t.Fatalf("loop %d: results of %s: %v", loop, id, err)
			}
			for _, r := range doc.Sessions[0].Results {
				if r.FinalTextOffset == nil || *r.FinalTextOffset == 0 {
					seqs = append(seqs, r.ExecutionSeq)
					statuses[r.ExecutionSeq] = r.Status
				}
			}
			if !doc.HasMore {
				break
			}
			p = map[string]any{"session": id, "cursor": doc.Cursor, "screen": false}
		}
		last := uint64(0)
		if rd.Result != nil {
			last = rd.Result.ExecutionSeq
		}
		for i, s := range seqs {
			if s != uint64(i+1) {
				t.Fatalf("loop %d: retained results of %s: %v (latest %d)", loop, id, seqs, last)
			}
		}
		if uint64(len(seqs)) != last {
			t.Fatalf("loop %d: retained results of %s: %v, latest %d", loop, id, seqs, last)
		}
		// Every result's execution is closed by an event with its status.
		closed := map[uint64]bool{}
		for _, e := range td.events(t, id) {
			if e.ResultStatus == "" {
				continue
			}
			if st, ok := statuses[e.ExecutionSeq]; ok && st != e.ResultStatus {
				t.Fatalf("loop %d: event %+v disagrees with result status %s", loop, e, st)
			}
			closed[e.ExecutionSeq] = true
		}
		for s, st := range statuses {
			if !closed[s] {
				t.Fatalf("loop %d: execution %d of %s (%s) has no event closing it", loop, s, id, st)
			}
		}
	}
}
