package daemon

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Positions across daemon restarts (issue 14): a position names the same
// window in every daemon lifetime, numbers are never handed out twice,
// and polling an unchanged Session does not spend positions.

// restartKind ends a child daemon: planned (SIGTERM) or a crash (SIGKILL).
type restartKind struct {
	name  string
	crash bool
}

var restartKinds = []restartKind{{"planned", false}, {"kill9", true}}

// restartChild ends cd as kind says (a crash leaves the fake harness of
// every cwd as an orphan, which is killed) and starts it again.
func restartChild(t *testing.T, cd *childDaemon, kind restartKind, cwds ...string) {
	t.Helper()
	var groups []int
	if kind.crash {
		for _, cwd := range cwds {
			groups = append(groups, harnessPIDs(t, cwd)...)
		}
		cd.kill9()
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
			waitGroupGone(t, g)
		}
	} else {
		cd.stop()
	}
	for _, cwd := range cwds {
		waitNoProcs(t, cwd)
	}
	cd.start()
}

// startChild starts a child daemon on a fresh home with the fake Claude,
// stopped (and its harnesses killed) when the test ends.
func startChild(t *testing.T) (*testDaemon, *childDaemon) {
	t.Helper()
	td, cd := newChildDaemon(t, fakeClaudeEnv(t))
	cd.start()
	return td, cd
}

func cursorNum(t testing.TB, c string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(c, 10, 64)
	if err != nil {
		t.Fatalf("cursor %q: %v", c, err)
	}
	return n
}

// immutable is a fetch document without what a replay may refresh (the
// runtime, the Session snapshot, the live screen, and reason and has_more,
// which say whether more was recorded since).
func immutable(t testing.TB, doc *rpc.FetchDocument) string {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	delete(m, "runtime")
	delete(m, "reason")
	delete(m, "has_more")
	return stripCurrentMap(m)
}

func stripCurrentMap(doc map[string]any) string {
	for _, b := range doc["sessions"].([]any) {
		m := b.(map[string]any)
		delete(m, "session")
		if sc, ok := m["screen"].(map[string]any); ok {
			delete(sc, "live")
			delete(sc, "live_truncated")
		}
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

func (td *testDaemon) fetch(t testing.TB, params map[string]any) (*rpc.FetchDocument, error) {
	t.Helper()
	var doc rpc.FetchDocument
	err := td.call(rpc.MethodSessionFetch, params, &doc)
	return &doc, err
}

func (td *testDaemon) mustFetch(t testing.TB, params map[string]any) *rpc.FetchDocument {
	t.Helper()
	doc, err := td.fetch(t, params)
	if err != nil {
		t.Fatalf("fetch %v: %v", params, err)
	}
	return doc
}

// The replayed-receipt scenario of issue 14: a receipt replayed after a
// restart names its own turn, a position minted by a fetch before the
// restart replays the same window after it, and numbers minted after the
// restart are above every number handed out before it.
func TestRestartReceiptCursorNamesItsTurn(t *testing.T) {
	for _, kind := range restartKinds {
		t.Run(kind.name, func(t *testing.T) {
			td, cd := startChild(t)
			cwd := t.TempDir()
			create := rpc.SessionCreateParams{Title: "r1", Harness: "claude", Cwd: cwd, Prompt: "first",
				RequestID: "r1", Environment: td.env}
			var r1 rpc.Receipt
			td.mustCall(rpc.MethodSessionCreate, create, &r1)
			id := r1.Session.ID
			_, res := td.waitResult(t, id, r1.Cursor)
			if res.ExecutionSeq != 1 || fetchdoc.DerefText(&res) != "MOCK-REPLY: first" {
				t.Fatalf("first result %+v", res)
			}
			// The window of the receipt's cursor, and a fetch-minted
			// position after it.
			before := td.mustFetch(t, map[string]any{"session": id, "cursor": r1.Cursor, "screen": false})
			if len(before.Sessions[0].Results) != 1 {
				t.Fatalf("window of %s: %+v", r1.Cursor, before.Sessions[0].Results)
			}
			base := td.mustFetch(t, map[string]any{"session": id, "screen": false})
			handed := []uint64{cursorNum(t, r1.Cursor), cursorNum(t, before.Cursor), cursorNum(t, base.Cursor)}
			// Batched position writes land well within this.
			time.Sleep(4 * positions.FlushDelay)

			restartChild(t, cd, kind, cwd)

			// The fetch-minted position is still held and means the same.
			again := td.mustFetch(t, map[string]any{"session": id, "cursor": r1.Cursor, "screen": false})
			if immutable(t, again) != immutable(t, before) {
				t.Fatalf("window of %s changed across the restart:\n%s\n%s", r1.Cursor, immutable(t, before), immutable(t, again))
			}
			var r2 rpc.Receipt
			td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "second", RequestID: "r2",
				Resume: true, Environment: td.env}, &r2)
			if r2.ExecutionSeq != 2 {
				t.Fatalf("resume receipt %+v", r2)
			}
			for _, n := range handed {
				if cursorNum(t, r2.Cursor) <= n {
					t.Fatalf("cursor %s minted after the restart is not above %d handed out before it", r2.Cursor, n)
				}
			}
			_, res2 := td.waitResult(t, id, r2.Cursor)
			if res2.ExecutionSeq != 2 || fetchdoc.DerefText(&res2) != "MOCK-REPLY: second" {
				t.Fatalf("second result %+v", res2)
			}
			// From the baseline's position: what came after it, in order.
			after := td.mustFetch(t, map[string]any{"session": id, "cursor": base.Cursor, "screen": false})
			rs := after.Sessions[0].Results
			if len(rs) == 0 || rs[0].ExecutionSeq != 2 {
				t.Fatalf("results after the baseline %s: %+v", base.Cursor, rs)
			}
			// The replayed receipt, and its cursor, name execution 1.
			var replay rpc.Receipt
			td.mustCall(rpc.MethodSessionCreate, create, &replay)
			if !replay.Replayed || replay.ExecutionSeq != 1 || replay.Cursor != r1.Cursor {
				t.Fatalf("replay %+v, first receipt %+v", replay, r1)
			}
			doc := td.mustFetch(t, map[string]any{"session": id, "cursor": replay.Cursor, "until": "result", "wait_ms": 10000, "screen": false})
			rs = doc.Sessions[0].Results
			if len(rs) == 0 || rs[0].ExecutionSeq != 1 || fetchdoc.DerefText(&rs[0]) != "MOCK-REPLY: first" {
				t.Fatalf("fetch from the replayed cursor %s: %+v", replay.Cursor, rs)
			}
			// Every retained result, from either lifetime, by execution.
			all := td.mustFetch(t, map[string]any{"session": id, "after_execution": 0, "screen": false})
			if rs = all.Sessions[0].Results; len(rs) != 2 || rs[0].ExecutionSeq != 1 || rs[1].ExecutionSeq != 2 {
				t.Fatalf("after_execution 0: %+v", rs)
			}
			cd.stop()
		})
	}
}

// A baseline of an unchanged Session returns the position it returned
// before instead of minting, so polling never evicts another client's
// cursor; all:true alike.
func TestFetchBaselineDoesNotChurn(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	runExec(rt, s, "one", "row 1")
	mine, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	runExec(rt, s, "two", "row 2")
	first, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	allFirst, _ := fetchDoc(t, rt, map[string]any{"all": true})
	for i := 0; i < 2*positions.PerAll+10; i++ {
		d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
		if d.Cursor != first.Cursor {
			t.Fatalf("baseline %d of an unchanged Session: cursor %s, first %s", i, d.Cursor, first.Cursor)
		}
		a, _ := fetchDoc(t, rt, map[string]any{"all": true})
		if a.Cursor != allFirst.Cursor {
			t.Fatalf("all baseline %d: cursor %s, first %s", i, a.Cursor, allFirst.Cursor)
		}
	}
	d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": mine.Cursor, "screen": false})
	if rs := d.Sessions[0].Results; len(rs) != 1 || fetchdoc.DerefText(&rs[0]) != "two" {
		t.Fatalf("the other client's cursor: %+v", rs)
	}
	// A change mints.
	runExec(rt, s, "three")
	if d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"}); d.Cursor == first.Cursor {
		t.Fatal("a baseline after a change returned the old position")
	}
}

// Positions stored by one runtime resolve in the next on the same store;
// numbering continues above every reservation; a position lost before
// its batch was stored answers CURSOR_EXPIRED.
func TestPositionsReloaded(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	s.mu.Lock()
	rt.persistLocked(s)
	s.mu.Unlock()
	runExec(rt, s, "one", "row 1")
	p1, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "screen": false})
	runExec(rt, s, "two")
	w1, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": p1.Cursor, "screen": false})
	if err := rt.positions.Flush(); err != nil {
		t.Fatal(err)
	}
	// Minted, never stored: as if the daemon died before the batch.
	rt.positions.DropUnsaved()
	runExec(rt, s, "three")
	lost, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": w1.Cursor, "screen": false})

	rt2, err := newRuntime(rt.db, rt.paths, rt.log, rt.opts)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := fetchDoc(t, rt2, map[string]any{"session": "claude:a", "cursor": p1.Cursor, "screen": false})
	if immutable(t, got) != immutable(t, w1) {
		t.Fatalf("window of %s changed:\n%s\n%s", p1.Cursor, immutable(t, w1), immutable(t, got))
	}
	_, err = fetchRaw(t, rt2, map[string]any{"session": "claude:a", "cursor": lost.Cursor})
	wantCode(t, err, rpc.CodeCursorExpired)
	// The reload failed the Session (daemon_restarted), which a send would
	// resume; this test only needs one more execution on it, so it goes
	// back to idle without a relaunch (tests may write the state).
	s2 := rt2.sessions[s.uid]
	s2.mu.Lock()
	s2.rec.State = stIdle
	s2.mu.Unlock()
	runExec(rt2, s2, "four")
	next, _ := fetchDoc(t, rt2, map[string]any{"session": "claude:a", "screen": false})
	if cursorNum(t, next.Cursor) <= cursorNum(t, lost.Cursor) {
		t.Fatalf("position %s minted again after %s", next.Cursor, lost.Cursor)
	}
}

// closing finds the event of type typ after seq and checks it closes
// execution exec with result_status interrupted.
func closing(t testing.TB, evs []rpc.Event, after uint64, typ string, exec uint64) rpc.Event {
	t.Helper()
	for _, e := range evs {
		if e.Seq > after && e.Type == typ {
			if e.ExecutionSeq != exec || e.ResultStatus != rpc.StatusInterrupted {
				t.Fatalf("%s event %+v: want execution_seq %d, result_status interrupted", typ, e, exec)
			}
			return e
		}
	}
	t.Fatalf("no %s event after seq %d: %v", typ, after, eventTypes(evs))
	return rpc.Event{}
}

// A stop, a restart and a daemon crash that end an execution say so on the
// event that records it: execution_seq and result_status, matching the
// retained result; the restarted daemon records the crash's outcome once.
func TestEventsCloseEveryExecution(t *testing.T) {
	td, cd := startChild(t)
	cwd := t.TempDir()
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "closer", Harness: "claude", Cwd: cwd,
		Prompt: "[[slow 30000]] one", RequestID: "c1", Environment: td.env}, &r)
	id := r.Session.ID
	td.waitScreen(t, id, "Working")
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: true}, nil)
	evs := td.events(t, id)
	closing(t, evs, 0, rpc.EventSessionStopping, 1)
	closing(t, evs, 0, rpc.EventSessionStopped, 1)
	checkInterrupted(t, td.read(t, id), 1, "stopped")

	// restart ends execution 2.
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "[[slow 30000]] two", RequestID: "c2",
		Resume: true, Environment: td.env}, &r)
	td.waitScreen(t, id, "Working")
	evs = td.events(t, id)
	last := evs[len(evs)-1].Seq // the resume's own restarting is before it
	td.mustCall(rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: id, Environment: td.env}, nil)
	evs = td.events(t, id)
	closing(t, evs, last, rpc.EventSessionRestarting, 2)
	checkInterrupted(t, td.read(t, id), 2, "restarted")

	// A stop with nothing running closes nothing.
	last = evs[len(evs)-1].Seq
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id}, nil)
	for _, e := range td.events(t, id) {
		if e.Seq > last && (e.ExecutionSeq != 0 || e.ResultStatus != "") {
			t.Fatalf("idle stop: %+v", e)
		}
	}

	// A daemon crash ends execution 3: the next daemon records it once.
	evs = td.events(t, id)
	last = evs[len(evs)-1].Seq
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "[[slow 30000]] three", RequestID: "c3",
		Resume: true, Environment: td.env}, &r)
	td.waitScreen(t, id, "Working")
	restartChild(t, cd, restartKind{"kill9", true}, cwd)
	evs = td.events(t, id)
	closing(t, evs, last, rpc.EventSessionFailed, 3)
	n := 0
	for _, e := range evs {
		if e.ExecutionSeq == 3 && e.ResultStatus != "" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("execution 3 closed by %d events: %v", n, evs)
	}
	checkInterrupted(t, td.read(t, id), 3, "daemon_restarted")
	cd.stop()
	waitNoProcs(t, cwd)
}

// after_execution pages through every retained result after an
// execution, from the store, and nothing else.
func TestFetchAfterExecution(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	for i := 1; i <= 6; i++ {
		runExec(rt, s, fmt.Sprint("text ", i), fmt.Sprint("row ", i))
	}
	page := func(params map[string]any) (*rpc.FetchDocument, []uint64) {
		d, _ := fetchDoc(t, rt, params)
		var seqs []uint64
		for _, r := range d.Sessions[0].Results {
			if fetchdoc.DerefText(&r) != fmt.Sprint("text ", r.ExecutionSeq) {
				t.Fatalf("result %+v", r)
			}
			seqs = append(seqs, r.ExecutionSeq)
		}
		if len(d.Sessions[0].Events) != 0 || d.Sessions[0].Screen != nil {
			t.Fatalf("after_execution returned more than results: %+v", d.Sessions[0])
		}
		return d, seqs
	}
	d, seqs := page(map[string]any{"session": "claude:a", "after_execution": 0, "screen": false})
	if fmt.Sprint(seqs) != "[1 2 3 4]" || !d.HasMore {
		t.Fatalf("first page %v has_more %v", seqs, d.HasMore)
	}
	d, seqs = page(map[string]any{"session": "claude:a", "cursor": d.Cursor, "screen": false})
	if fmt.Sprint(seqs) != "[5 6]" || d.HasMore {
		t.Fatalf("second page %v has_more %v", seqs, d.HasMore)
	}
	if _, seqs = page(map[string]any{"session": "claude:a", "after_execution": 4, "screen": false}); fmt.Sprint(seqs) != "[5 6]" {
		t.Fatalf("after 4: %v", seqs)
	}
	if _, seqs = page(map[string]any{"session": "claude:a", "after_execution": 99, "screen": false}); len(seqs) != 0 {
		t.Fatalf("after 99: %v", seqs)
	}
	for _, bad := range []map[string]any{
		{"session": "claude:a", "after_execution": 0, "cursor": d.Cursor},
		{"all": true, "after_execution": 0},
		{"session": "claude:a", "after_execution": -1},
	} {
		_, err := fetchRaw(t, rt, bad)
		wantCode(t, err, rpc.CodeInvalidArgument)
	}
}

var _ sync.Mutex

// An alias that names no active Session but did name one is NOT_FOUND
// naming that Session and how to reach it (for a call that does not read
// it or clean up after it: those take the Session, see
// TestWorktreeCleanupByAliasAfterStop), in this daemon lifetime and the
// next.
func TestStoppedAliasNamesItsSession(t *testing.T) {
	td, cd := startChild(t)
	cwd := t.TempDir()
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "aliased", Alias: "gone", Harness: "claude", Cwd: cwd,
		Prompt: "hi", RequestID: "a1", Environment: td.env}, &r)
	td.waitResult(t, r.Session.ID, r.Cursor)
	check := func(when, state string) {
		t.Helper()
		err := td.call(rpc.MethodSessionFetch, rpc.SessionFetchParams{Session: "@gone"}, nil)
		re := wantCode(t, err, rpc.CodeNotFound)
		var rd rpc.SessionReadResult
		if err := td.call(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "@gone"}, &rd); err != nil || rd.Session.ID != r.Session.ID {
			t.Fatalf("%s: read by the alias: %v %+v", when, err, rd.Session)
		}
		for _, want := range []string{"@gone", r.Session.ID, state, "--resume"} {
			if !strings.Contains(re.Message, want) {
				t.Fatalf("%s: message %q lacks %q", when, re.Message, want)
			}
		}
	}
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: "@gone"}, nil)
	check("after stop", rpc.StateStopped)
	restartChild(t, cd, restartKinds[0], cwd)
	check("after a daemon restart", rpc.StateStopped)
	// Never an alias: the plain message.
	err := td.call(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "@never"}, nil)
	if re := wantCode(t, err, rpc.CodeNotFound); strings.Contains(re.Message, "last named") {
		t.Fatalf("message %q", re.Message)
	}
	cd.stop()
}
