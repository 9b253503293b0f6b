package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// ---- in-process fixture ---------------------------------------------------
//
// These tests drive session.fetch against a runtime with hand-made
// Sessions: events, results and rows are recorded through the same paths
// the harness evidence takes (emitLocked, finishExecLocked, RowLog), with
// no processes involved.

func newFetchRuntime(t testing.TB) *runtime {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := statedir.Paths{Home: dir, DataDir: dir, RawDir: filepath.Join(dir, "raw")}
	if err := os.MkdirAll(p.RawDir, 0o700); err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(db, p, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

var fakeSessionN int

// addSession registers a bound, idle Session named claude:<name>.
func addSession(t testing.TB, rt *runtime, name string) *session {
	t.Helper()
	fakeSessionN++
	rec := sessionRecord{UID: fmt.Sprintf("uid%06d", fakeSessionN), ID: "claude:" + name, ProviderID: name, Title: "t " + name,
		Harness: "claude", Cwd: "/tmp", State: rpc.StateIdle, CreatedAtMS: int64(fakeSessionN), Epoch: 1, Rows: 24, Cols: 80}
	s, err := rt.newSessionObject(rec)
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	rt.holdSessionLocked(s)
	rt.byID[rec.ID] = s
	rt.mu.Unlock()
	s.mu.Lock()
	rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionCreated})
	rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionReady})
	s.mu.Unlock()
	return s
}

// startExec accepts an execution (busy) and returns its seq.
func startExec(rt *runtime, s *session) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.LastExecSeq++
	s.exec = &execution{seq: s.rec.LastExecSeq, startedAt: time.Now(), submitted: make(chan struct{}), done: make(chan struct{})}
	rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionBusy, ExecutionSeq: s.exec.seq})
	return s.exec.seq
}

// finishExec completes the active execution with text, as a Stop does.
func finishExec(rt *runtime, s *session, text string) {
	s.rows.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	res := rt.finishExecLocked(s, rpc.StatusCompleted, text, rpc.TextSourceHook, nil)
	rt.transitionLocked(s, stIdle, rpc.Event{Type: rpc.EventSessionIdle, ExecutionSeq: res.ExecutionSeq, ResultStatus: res.Status})
}

func runExec(rt *runtime, s *session, text string, rows ...string) uint64 {
	seq := startExec(rt, s)
	if len(rows) > 0 {
		s.rows.Append(1, rows...)
	}
	finishExec(rt, s, text)
	return seq
}

// fetchCall is session.fetch in-process, waiting out a long poll as the
// server does (rpc.Deferred).
func fetchCall(ctx context.Context, rt *runtime, params json.RawMessage) (any, error) {
	res, err := rt.methodOf[rpc.MethodSessionFetch](ctx, rpc.Peer{}, params)
	d, ok := res.(rpc.Deferred)
	if err != nil || !ok {
		return res, err
	}
	type answer struct {
		res any
		err error
	}
	ch := make(chan answer, 1)
	stop := d.Start(func(res any, err error) { ch <- answer{res, err} })
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		stop()
		a := <-ch
		return a.res, a.err
	}
}

// fetchRaw calls session.fetch in-process and returns the result document
// exactly as the wire carries it.
func fetchRaw(t testing.TB, rt *runtime, params map[string]any) ([]byte, error) {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fetchCall(context.Background(), rt, b)
	if err != nil {
		return nil, err
	}
	return rpc.Marshal(res)
}

func fetchDoc(t testing.TB, rt *runtime, params map[string]any) (*rpc.FetchDocument, []byte) {
	t.Helper()
	raw, err := fetchRaw(t, rt, params)
	if err != nil {
		t.Fatalf("fetch %v: %v", params, err)
	}
	var doc rpc.FetchDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if mb, ok := params["max_bytes"].(int); ok && len(raw)+fetchdoc.CLIWrapper > mb {
		t.Fatalf("document of %d bytes (+%d) exceeds max_bytes %d", len(raw), fetchdoc.CLIWrapper, mb)
	}
	return &doc, raw
}

// stripCurrent removes what a replay may legitimately refresh: the Session
// snapshot and the live screen.
func stripCurrent(t testing.TB, raw []byte) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, b := range doc["sessions"].([]any) {
		m := b.(map[string]any)
		delete(m, "session")
		if sc, ok := m["screen"].(map[string]any); ok {
			delete(sc, "live")
			delete(sc, "live_truncated")
		}
	}
	out, _ := json.Marshal(doc)
	return string(out)
}

func wantCode(t testing.TB, err error, code rpc.Code) *rpc.Error {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	return re
}

// ---- cursors --------------------------------------------------------------

func TestFetchCursorInvalid(t *testing.T) {
	rt := newFetchRuntime(t)
	addSession(t, rt, "a")
	for _, c := range []string{`true`, `false`, `{}`, `[]`, `[1]`, `"abc"`, `"-1"`, `-1`, `"1.5"`, `1.5`, `1e3`, `"1e3"`,
		`""`, `" 1"`, `"1 "`, `"+1"`, `"0x10"`, `"99999999999999999999999"`, `99999999999999999999999`, `"١٢"`} {
		params := json.RawMessage(`{"session":"claude:a","cursor":` + c + `}`)
		_, err := fetchCall(context.Background(), rt, params)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeCursorInvalid {
			t.Errorf("cursor %s: err = %v, want CURSOR_INVALID", c, err)
		}
		params = json.RawMessage(`{"all":true,"cursor":` + c + `}`)
		if _, err := fetchCall(context.Background(), rt, params); !errors.Is(err, rpc.ErrCursorInvalid) {
			t.Errorf("all cursor %s: err = %v, want CURSOR_INVALID", c, err)
		}
	}
	// Absent and null are baselines.
	for _, params := range []string{`{"session":"claude:a"}`, `{"session":"claude:a","cursor":null}`} {
		res, err := fetchCall(context.Background(), rt, json.RawMessage(params))
		if err != nil || res.(*rpc.FetchDocument).Reason != rpc.ReasonSnapshot {
			t.Errorf("%s: %v %v", params, res, err)
		}
	}
}

func TestFetchCursorExpired(t *testing.T) {
	defer func(a, b, c int) { positions.PerSession, positions.PerAll, positions.Total = a, b, c }(positions.PerSession, positions.PerAll, positions.Total)
	positions.PerSession, positions.PerAll, positions.Total = 4, 3, 4
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	sb := addSession(t, rt, "b")

	// Never minted: in the Session's scope, 0, and in the all scope.
	// The error says what to do: take a fresh cursor from a cursorless
	// fetch.
	for _, c := range []any{1, "1", 0, "0", "000", uint64(18446744073709551615)} {
		_, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": c})
		if re := wantCode(t, err, rpc.CodeCursorExpired); !strings.Contains(re.Message, "has not minted") || !strings.Contains(re.Message, "fetch without one (dlgt session fetch SESSION)") {
			t.Errorf("message %q", re.Message)
		}
		_, err = fetchRaw(t, rt, map[string]any{"all": true, "cursor": c})
		if re := wantCode(t, err, rpc.CodeCursorExpired); !strings.Contains(re.Message, "(dlgt session fetch --all)") {
			t.Errorf("message %q", re.Message)
		}
	}
	// Minted positions resolve; beyond the per-Session bound the oldest is
	// no longer held.
	doc, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	first := doc.Cursor
	for i := 0; i < 4; i++ {
		runExec(rt, s, fmt.Sprint("r", i))
		doc, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor})
	}
	_, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": first})
	re := wantCode(t, err, rpc.CodeCursorExpired)
	if !strings.Contains(re.Message, "no longer holds") || !strings.Contains(re.Message, "take a fresh cursor") {
		t.Errorf("message %q", re.Message)
	}
	if _, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor}); err != nil {
		t.Fatal(err)
	}
	// A number minted in b's scope but not a's is not minted for a. (A
	// baseline of an unchanged Session returns its position again, so b
	// changes between them.)
	for i := 0; i < 6; i++ {
		runExec(rt, sb, fmt.Sprint("b", i))
		fetchDoc(t, rt, map[string]any{"session": "claude:b"})
	}
	_, err = fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": 9})
	wantCode(t, err, rpc.CodeCursorExpired)
	// The global cap drops the oldest across scopes: a's positions, older
	// than b's, go first.
	_, err = fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor})
	wantCode(t, err, rpc.CodeCursorExpired)
	// all positions: per-scope bound.
	all, _ := fetchDoc(t, rt, map[string]any{"all": true})
	for i := 0; i < 3; i++ {
		runExec(rt, sb, fmt.Sprint("b all ", i))
		fetchDoc(t, rt, map[string]any{"all": true})
	}
	_, err = fetchRaw(t, rt, map[string]any{"all": true, "cursor": all.Cursor})
	wantCode(t, err, rpc.CodeCursorExpired)
}

func TestFetchLeadingZerosAndSpellings(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	runExec(rt, s, "one", "row 1", "row 2")
	doc, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	n := doc.Cursor
	if strings.HasPrefix(n, "0") {
		t.Fatalf("cursor %q has a leading zero", n)
	}
	// Nothing moved: every spelling returns the caller's own position,
	// canonicalized.
	for _, c := range []any{n, "000" + n, json.Number(n), json.Number(n)} {
		d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": c})
		if d.Cursor != n || d.Reason != rpc.ReasonTimeout {
			t.Errorf("cursor %v: got cursor %s reason %s", c, d.Cursor, d.Reason)
		}
	}
	// After a change all spellings resolve the same position and replay
	// the same window.
	runExec(rt, s, "two", "row 3")
	_, a := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": n})
	_, b := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": "0000" + n})
	_, c := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": json.Number(n)})
	if stripCurrent(t, a) != stripCurrent(t, b) || stripCurrent(t, a) != stripCurrent(t, c) {
		t.Fatalf("spellings differ:\n%s\n%s\n%s", a, b, c)
	}
	var da rpc.FetchDocument
	json.Unmarshal(a, &da)
	if da.Cursor == n || strings.HasPrefix(da.Cursor, "0") || len(da.Sessions[0].Results) != 1 {
		t.Fatalf("advanced doc: %s", a)
	}
}

// ---- replay ---------------------------------------------------------------

func TestFetchReplayByteIdentical(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	start, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "max_bytes": 4000})
	long := strings.Repeat("ünïcode ", 900)
	var rows []string
	for i := 0; i < 60; i++ {
		rows = append(rows, fmt.Sprintf("row %03d %s", i, strings.Repeat("x", i*7)))
	}
	runExec(rt, s, long, rows...)
	runExec(rt, s, "short")

	// Walk the chain once, recording each window; then replay every
	// position after more output arrived and compare.
	type step struct {
		cursor string
		raw    []byte
		mb     int
	}
	var chain []step
	cur := start.Cursor
	for i := 0; i < 200; i++ {
		mb := 900 + (i*733)%5000
		doc, raw := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": cur, "max_bytes": mb})
		chain = append(chain, step{cur, raw, mb})
		if !doc.HasMore {
			break
		}
		if doc.Cursor == cur {
			t.Fatalf("has_more response did not advance: %s", raw)
		}
		cur = doc.Cursor
	}
	if len(chain) < 5 {
		t.Fatalf("expected a long chain, got %d", len(chain))
	}
	runExec(rt, s, "later", "later row")
	for _, st := range chain {
		_, raw := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": st.cursor, "max_bytes": st.mb})
		if got, want := stripCurrent(t, raw), stripCurrent(t, st.raw); got != want {
			// has_more may legitimately flip to true on the last step.
			var g, w rpc.FetchDocument
			json.Unmarshal(raw, &g)
			json.Unmarshal(st.raw, &w)
			g.HasMore, w.HasMore = false, false
			g.Reason, w.Reason = "", ""
			gb, _ := rpc.Marshal(g)
			wb, _ := rpc.Marshal(w)
			if stripCurrent(t, gb) != stripCurrent(t, wb) {
				t.Fatalf("replay of %s differs:\n got %s\nwant %s", st.cursor, raw, st.raw)
			}
		}
	}
}

// ---- bounds ---------------------------------------------------------------

func TestFetchVerifiedMinimum(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	doc, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	// A blocked event with a long command cannot be chunked: the workable
	// value depends on it.
	startExec(rt, s)
	s.mu.Lock()
	rt.transitionLocked(s, stBlocked, rpc.Event{Type: rpc.EventSessionBlocked, ExecutionSeq: 1, Reason: "permission", Tool: "Bash", Command: strings.Repeat("echo long; ", 300)})
	s.mu.Unlock()
	for _, mb := range []int{1, 11, 100, 500, 1500, 3000} {
		for _, cursor := range []any{nil, doc.Cursor} {
			params := map[string]any{"session": "claude:a", "max_bytes": mb}
			if cursor != nil {
				params["cursor"] = cursor
			}
			_, err := fetchRaw(t, rt, params)
			if err == nil {
				continue
			}
			re := wantCode(t, err, rpc.CodeInvalidArgument)
			if re.Field != "max_bytes" || re.WorkableMaxBytes <= mb || !strings.Contains(re.Message, fmt.Sprint(re.WorkableMaxBytes)) {
				t.Fatalf("max_bytes %d: %+v", mb, re)
			}
			params["max_bytes"] = re.WorkableMaxBytes
			d, raw := fetchDoc(t, rt, params)
			if cursor != nil && d.Cursor == doc.Cursor {
				t.Fatalf("retry at %d made no progress: %s", re.WorkableMaxBytes, raw)
			}
		}
	}
	for _, mb := range []int{-1, fetchdoc.HardBytes + 1} {
		_, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "max_bytes": mb})
		wantCode(t, err, rpc.CodeInvalidArgument)
	}
	_, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "wait_ms": fetchdoc.MaxWait + 1})
	wantCode(t, err, rpc.CodeInvalidArgument)
}

func TestFetchBoundsAndChunking(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	start, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	startSeq := rt.db.LastEventSeq()
	// Long rows with multi-byte text, 600 rows, 10 results, 100 events.
	var rows []string
	for i := 0; i < 600; i++ {
		rows = append(rows, fmt.Sprintf("%04d %s", i, strings.Repeat("é€😀", i%97)))
	}
	s.rows.Append(1, rows...)
	var texts []string
	for i := 0; i < 10; i++ {
		t := fmt.Sprintf("result %d %s", i, strings.Repeat("ßx", i*3000))
		texts = append(texts, t)
		runExec(rt, s, t)
	}
	s.mu.Lock()
	for i := 0; i < 70; i++ {
		rt.emitLocked(s, rpc.Event{Type: rpc.EventProviderRetrying, ExecutionSeq: 10, Attempt: i})
	}
	s.mu.Unlock()

	got := followAll(t, rt, "claude:a", start.Cursor, func(i int) int { return []int{700, 1200, 32 << 10, 5000, 256 << 10}[i%5] }, nil)
	if strings.Join(got.rows, "\n") != strings.Join(rows, "\n") {
		t.Fatalf("rows differ: got %d want %d", len(got.rows), len(rows))
	}
	for i, want := range texts {
		if g := got.results[resKey("claude:a", uint64(i+1))]; g != want {
			t.Fatalf("result %d differs (len %d vs %d)", i+1, len(g), len(want))
		}
	}
	evs, _ := rt.db.ReadEvents(startSeq, 0, s.uid)
	if len(got.events) != len(evs) {
		t.Fatalf("events %d want %d", len(got.events), len(evs))
	}
	for i, e := range evs {
		if got.events[i] != string(e.Data) {
			t.Fatalf("event %d: %s vs %s", i, got.events[i], e.Data)
		}
	}
	if got.maxEvents > fetchdoc.MaxEvents || got.maxResults > fetchdoc.MaxResults || got.maxStable > fetchdoc.Stable {
		t.Fatalf("per-response bounds exceeded: %+v", got)
	}
	// screen:512 raises the stable bound.
	sb := addSession(t, rt, "b")
	bstart, _ := fetchDoc(t, rt, map[string]any{"session": "claude:b"})
	sb.rows.Append(1, rows...)
	sb.rows.Flush()
	d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:b", "cursor": bstart.Cursor, "screen": 512, "max_bytes": 256 << 10})
	if n := len(d.Sessions[0].Screen.Stable); n != fetchdoc.StableMax {
		t.Fatalf("screen:512 gave %d stable rows", n)
	}
	// screen:false omits the screen.
	d, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": start.Cursor, "screen": false})
	if d.Sessions[0].Screen != nil {
		t.Fatal("screen:false carried a screen")
	}
}

// followed is what a client reassembled by following positions.
type followed struct {
	events                           []string
	results                          map[string]string // by "session-id#seq"
	resultDocs                       map[string]rpc.Result
	rows                             []string
	calls                            int
	maxEvents, maxResults, maxStable int
	lastCursor                       string
	lastEventSeq                     uint64
}

// reassembler applies documents in order, checking the contract's
// ordering rules as it goes.
type reassembler struct {
	t       testing.TB
	f       *followed
	partial map[uint64]string // row id -> text so far
	pRow    uint64
	textOff map[string]int
	// first is each result's first chunk, which alone carries the prompt.
	first map[string]rpc.Result
}

func resKey(id string, seq uint64) string { return fmt.Sprintf("%s#%d", id, seq) }

func newReassembler(t testing.TB) *reassembler {
	return &reassembler{t: t, f: &followed{results: map[string]string{}, resultDocs: map[string]rpc.Result{}}, partial: map[uint64]string{}, textOff: map[string]int{}, first: map[string]rpc.Result{}}
}

func (ra *reassembler) apply(raw []byte) *rpc.FetchDocument {
	t := ra.t
	t.Helper()
	var doc rpc.FetchDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Sessions []struct {
			Events []json.RawMessage `json:"events"`
		} `json:"sessions"`
	}
	json.Unmarshal(raw, &parsed)
	f := ra.f
	f.calls++
	if doc.Reason == rpc.ReasonGap {
		t.Fatalf("unexpected gap: %s", raw)
	}
	// The events of one document are a prefix of what is pending across
	// Sessions: in seq order they continue the previous document's.
	type evRaw struct {
		seq uint64
		raw string
	}
	var docEvents []evRaw
	nev, nres := 0, 0
	for bi, b := range doc.Sessions {
		for i, e := range b.Events {
			if i > 0 && e.Seq <= b.Events[i-1].Seq {
				t.Fatalf("events out of order within a Session: %s", raw)
			}
			docEvents = append(docEvents, evRaw{e.Seq, string(parsed.Sessions[bi].Events[i])})
		}
		nev += len(b.Events)
		nres += len(b.Results)
	}
	sort.Slice(docEvents, func(i, j int) bool { return docEvents[i].seq < docEvents[j].seq })
	for _, e := range docEvents {
		if e.seq <= f.lastEventSeq {
			t.Fatalf("event seq %d after %d (duplicate or reordered)", e.seq, f.lastEventSeq)
		}
		f.lastEventSeq = e.seq
		f.events = append(f.events, e.raw)
	}
	f.maxEvents = max(f.maxEvents, nev)
	f.maxResults = max(f.maxResults, nres)
	for _, b := range doc.Sessions {
		for _, r := range b.Results {
			k := resKey(b.Session.ID, r.ExecutionSeq)
			off := 0
			if r.FinalTextOffset != nil {
				off = *r.FinalTextOffset
			}
			if off != ra.textOff[k] {
				t.Fatalf("result %d chunk at offset %d, have %d", r.ExecutionSeq, off, ra.textOff[k])
			}
			if _, done := f.resultDocs[k]; done {
				t.Fatalf("result %d delivered twice", r.ExecutionSeq)
			}
			if off == 0 {
				ra.first[k] = r
			} else if r.Prompt != nil || r.PromptTruncated {
				t.Fatalf("result %d: a prompt on the chunk at offset %d", r.ExecutionSeq, off)
			}
			f.results[k] += fetchdoc.DerefText(&r)
			ra.textOff[k] += len(fetchdoc.DerefText(&r))
			if r.FinalTextComplete == nil || *r.FinalTextComplete {
				whole := r
				txt := f.results[k]
				whole.FinalText = &txt
				if r.FinalText == nil && off == 0 {
					whole.FinalText = nil
				}
				whole.FinalTextOffset, whole.FinalTextComplete = nil, nil
				whole.Prompt, whole.PromptTruncated = ra.first[k].Prompt, ra.first[k].PromptTruncated
				f.resultDocs[k] = whole
			}
		}
		sc := b.Screen
		if sc == nil {
			continue
		}
		f.maxStable = max(f.maxStable, len(sc.Stable))
		if fb := sc.FragmentBefore; fb != nil {
			if fb.RowID != ra.pRow || fb.Offset != len(ra.partial[fb.RowID]) {
				t.Fatalf("fragment_before %+v does not continue row %d at %d", fb, ra.pRow, len(ra.partial[ra.pRow]))
			}
			ra.partial[fb.RowID] += fb.Text
			if fb.Complete {
				f.rows = append(f.rows, ra.partial[fb.RowID])
				delete(ra.partial, fb.RowID)
				ra.pRow = 0
			}
		} else if ra.pRow != 0 && (len(sc.Stable) > 0 || sc.FragmentAfter != nil) {
			t.Fatalf("row %d left unfinished", ra.pRow)
		}
		if len(sc.Stable) > 0 && ra.pRow != 0 {
			t.Fatalf("stable rows while row %d is split", ra.pRow)
		}
		f.rows = append(f.rows, sc.Stable...)
		if fa := sc.FragmentAfter; fa != nil {
			if fa.Complete || fa.Offset != 0 || ra.pRow != 0 {
				t.Fatalf("bad fragment_after %+v", fa)
			}
			ra.pRow = fa.RowID
			ra.partial[fa.RowID] = fa.Text
		}
	}
	f.lastCursor = doc.Cursor
	return &doc
}

// followAll follows positions from cursor until has_more is false,
// choosing max_bytes per call; a too-small budget is retried at the named
// workable value, which must succeed.
func followAll(t testing.TB, rt *runtime, id, cursor string, budget func(int) int, ra *reassembler) *followed {
	t.Helper()
	if ra == nil {
		ra = newReassembler(t)
	}
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("no end")
		}
		mb := budget(i)
		params := map[string]any{"session": id, "cursor": cursor, "max_bytes": mb}
		raw, err := fetchRaw(t, rt, params)
		if err != nil {
			re := wantCode(t, err, rpc.CodeInvalidArgument)
			mb = re.WorkableMaxBytes
			params["max_bytes"] = mb
			if raw, err = fetchRaw(t, rt, params); err != nil {
				t.Fatalf("retry at workable %d: %v", mb, err)
			}
		}
		if len(raw)+fetchdoc.CLIWrapper > mb {
			t.Fatalf("document %d bytes over max_bytes %d", len(raw)+fetchdoc.CLIWrapper, mb)
		}
		doc := ra.apply(raw)
		if doc.HasMore && doc.Cursor == cursor {
			t.Fatalf("has_more without advancing: %s", raw)
		}
		cursor = doc.Cursor
		if !doc.HasMore {
			return ra.f
		}
	}
}

// ---- gaps -----------------------------------------------------------------

func TestFetchGapScreen(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	start, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	rows := make([]string, store.RowRetention+50)
	for i := range rows {
		rows[i] = fmt.Sprint("r", i)
	}
	s.rows.Append(1, rows...)
	s.rows.Flush()
	if s.rows.First() <= 1 {
		t.Fatal("no eviction")
	}
	doc, raw := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": start.Cursor})
	b := doc.Sessions[0]
	if doc.Reason != rpc.ReasonGap || len(b.Gaps) != 1 || b.Gaps[0] != (rpc.Gap{Component: "screen", Reason: "retention_overrun"}) || len(doc.Gaps) != 0 {
		t.Fatalf("gap doc: %s", raw)
	}
	if !b.Screen.Reset || len(b.Screen.Stable) == 0 || len(b.Screen.Stable) > fetchdoc.Stable || b.Screen.Stable[len(b.Screen.Stable)-1] != rows[len(rows)-1] {
		t.Fatalf("not a bounded baseline: %d stable", len(b.Screen.Stable))
	}
	if doc.Cursor == start.Cursor {
		t.Fatal("gap kept the stale cursor")
	}
	next, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor})
	if next.Reason != rpc.ReasonTimeout || next.Cursor != doc.Cursor {
		t.Fatalf("after gap: %+v", next)
	}
}

// A reader that takes no stable rows loses nothing when rows are evicted:
// it must not be thrown back to a baseline (which would skip its events).
func TestFetchNoGapForScreenlessReader(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	for _, screen := range []any{false, 0} {
		start, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "screen": screen})
		rows := make([]string, store.RowRetention+50)
		for i := range rows {
			rows[i] = fmt.Sprint("r", i)
		}
		s.rows.Append(1, rows...)
		s.rows.Flush()
		doc, raw := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": start.Cursor, "screen": screen})
		if doc.Reason == rpc.ReasonGap || len(doc.Sessions[0].Gaps) != 0 {
			t.Fatalf("screen %v: %s", screen, raw)
		}
	}
}

func TestFetchGapResults(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	start, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "screen": false})
	for i := 0; i < store.ResultRetention+3; i++ {
		runExec(rt, s, fmt.Sprint("text ", i))
	}
	doc, raw := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": start.Cursor})
	b := doc.Sessions[0]
	if doc.Reason != rpc.ReasonGap || len(b.Gaps) != 1 || b.Gaps[0].Component != "results" || b.Gaps[0].Reason != "retention_overrun" || len(doc.Gaps) != 0 {
		t.Fatalf("gap doc: %s", raw)
	}
	if len(b.Results) != 1 || b.Results[0].ExecutionSeq != store.ResultRetention+3 || len(b.Events) != 0 {
		t.Fatalf("baseline results: %s", raw)
	}
	next, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor})
	if next.Reason != rpc.ReasonTimeout || len(next.Sessions[0].Results) != 0 {
		t.Fatalf("after gap: %+v", next)
	}
}

func TestFetchGapEvents(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	other := addSession(t, rt, "b")
	start, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	allStart, _ := fetchDoc(t, rt, map[string]any{"all": true})
	otherStart, _ := fetchDoc(t, rt, map[string]any{"session": "claude:b"})
	runExec(rt, s, "x")
	runExec(rt, other, "y")
	last := rt.db.LastEventSeq()
	// Simulate retention dropping every event so far (50,000 real appends
	// would dominate the run); the store's own tests cover eviction.
	defer func(f func(*store.DB) uint64) { eventsEvictedThrough = f }(eventsEvictedThrough)
	evicted := last - 1 // the newest event (b's idle) survives
	eventsEvictedThrough = func(*store.DB) uint64 { return evicted }

	doc, raw := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": start.Cursor})
	if doc.Reason != rpc.ReasonGap || len(doc.Gaps) != 1 || doc.Gaps[0] != (rpc.Gap{Component: "events", Reason: "retention_overrun"}) || len(doc.Sessions[0].Gaps) != 0 {
		t.Fatalf("gap doc: %s", raw)
	}
	if doc.Cursor == start.Cursor || len(doc.Sessions[0].Results) != 1 {
		t.Fatalf("not a fresh bounded baseline: %s", raw)
	}
	// b lost events too (its busy), so it gaps as well.
	if d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:b", "cursor": otherStart.Cursor}); d.Reason != rpc.ReasonGap {
		t.Fatalf("b: %+v", d)
	}
	// A reader already past every evicted event of its Session has no gap.
	runExec(rt, s, "z")
	if d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor}); d.Reason == rpc.ReasonGap || len(d.Sessions[0].Events) != 2 {
		t.Fatalf("after gap: %+v", d)
	}
	// all:true reports it at top level.
	for d := allStart; ; {
		var raw []byte
		d, raw = fetchDoc(t, rt, map[string]any{"all": true, "cursor": d.Cursor})
		if d.Reason == rpc.ReasonGap {
			if len(d.Gaps) != 1 || d.Gaps[0].Component != "events" {
				t.Fatalf("all gap: %s", raw)
			}
			break
		}
		if !d.HasMore {
			t.Fatalf("all:true saw no gap: %s", raw)
		}
	}
}

// ---- all:true -------------------------------------------------------------

func TestFetchAllPager(t *testing.T) {
	rt := newFetchRuntime(t)
	var ss []*session
	for i := 0; i < 70; i++ {
		s := addSession(t, rt, fmt.Sprintf("s%02d", i))
		if i%3 == 0 {
			runExec(rt, s, fmt.Sprint("result of ", i))
		}
		ss = append(ss, s)
	}
	for _, bad := range []map[string]any{
		{"all": true, "until": "result"}, {"all": true, "screen": true}, {"all": true, "screen": 10},
		{"all": true, "session": "claude:s01"}, {},
	} {
		_, err := fetchRaw(t, rt, bad)
		wantCode(t, err, rpc.CodeInvalidArgument)
	}
	// Enumeration: baseline buckets, 32 at most per page, has_more until
	// done, every Session exactly once.
	seen := map[string]int{}
	cursor := any(nil)
	pages := 0
	for {
		params := map[string]any{"all": true, "wait_ms": 60000}
		if cursor != nil {
			params["cursor"] = cursor
		}
		doc, raw := fetchDoc(t, rt, params)
		pages++
		if doc.Reason != rpc.ReasonSnapshot || len(doc.Sessions) > fetchdoc.AllPage || len(doc.Sessions) == 0 {
			t.Fatalf("page %d: %s", pages, raw)
		}
		for _, b := range doc.Sessions {
			seen[b.Session.ID]++
			if b.Screen != nil || len(b.Events) != 0 {
				t.Fatalf("enumeration bucket: %+v", b)
			}
		}
		cursor = doc.Cursor
		if !doc.HasMore {
			break
		}
	}
	if len(seen) != 70 || pages < 3 {
		t.Fatalf("enumerated %d Sessions in %d pages", len(seen), pages)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s enumerated %d times", id, n)
		}
	}
	// Nothing changed: the caller's own position, no Sessions.
	doc, _ := fetchDoc(t, rt, map[string]any{"all": true, "cursor": cursor})
	if doc.Cursor != cursor || len(doc.Sessions) != 0 || doc.Reason != rpc.ReasonTimeout {
		t.Fatalf("idle: %+v", doc)
	}
	// A long poll wakes on a change and returns only changed Sessions.
	done := make(chan *rpc.FetchDocument, 1)
	go func() {
		raw, err := fetchRaw(t, rt, map[string]any{"all": true, "cursor": cursor, "wait_ms": 60000})
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		var d rpc.FetchDocument
		json.Unmarshal(raw, &d)
		done <- &d
	}()
	runExec(rt, ss[5], "five")
	runExec(rt, ss[40], "forty")
	var got []rpc.Event
	var ids = map[string]bool{}
	d := <-done
	for d != nil {
		for _, b := range d.Sessions {
			ids[b.Session.ID] = true
			got = append(got, b.Events...)
		}
		if !d.HasMore && ids["claude:s40"] && len(got) == 4 {
			break
		}
		d, _ = fetchDoc(t, rt, map[string]any{"all": true, "cursor": d.Cursor, "wait_ms": 30000})
	}
	if len(ids) != 2 || !ids["claude:s05"] || !ids["claude:s40"] {
		t.Fatalf("changed Sessions: %v", ids)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("events out of order: %+v", got)
		}
	}
}

// Events interleaved across many Sessions arrive as one ascending
// sequence under any budget, with nothing lost or repeated.
func TestFetchAllEventPrefix(t *testing.T) {
	rt := newFetchRuntime(t)
	start, _ := fetchDoc(t, rt, map[string]any{"all": true})
	var ss []*session
	for i := 0; i < 40; i++ {
		ss = append(ss, addSession(t, rt, fmt.Sprintf("p%02d", i)))
	}
	for round := 0; round < 4; round++ {
		for i, s := range ss {
			if (i+round)%3 != 0 {
				runExec(rt, s, strings.Repeat(fmt.Sprint(i), 50*round))
			}
		}
	}
	want, _ := rt.db.ReadEvents(0, 0, "")
	ra := newReassembler(t)
	cursor := start.Cursor
	for i := 0; i < 10000; i++ {
		mb := []int{900, 2000, 32 << 10, 1500, 8000}[i%5]
		params := map[string]any{"all": true, "cursor": cursor, "max_bytes": mb}
		raw, err := fetchRaw(t, rt, params)
		if err != nil {
			params["max_bytes"] = wantCode(t, err, rpc.CodeInvalidArgument).WorkableMaxBytes
			mb = params["max_bytes"].(int)
			if raw, err = fetchRaw(t, rt, params); err != nil {
				t.Fatal(err)
			}
		}
		if len(raw)+fetchdoc.CLIWrapper > mb {
			t.Fatalf("over budget")
		}
		doc := ra.apply(raw)
		if doc.HasMore && doc.Cursor == cursor {
			t.Fatalf("no progress: %s", raw)
		}
		cursor = doc.Cursor
		if !doc.HasMore {
			break
		}
	}
	if len(ra.f.events) != len(want) {
		t.Fatalf("got %d events want %d", len(ra.f.events), len(want))
	}
	for i := range want {
		if ra.f.events[i] != string(want[i].Data) {
			t.Fatalf("event %d: %s vs %s", i, ra.f.events[i], want[i].Data)
		}
	}
}

func TestFetchAllTooManySessions(t *testing.T) {
	rt := newFetchRuntime(t)
	for i := 0; i < fetchdoc.AllSessions+1; i++ {
		addSession(t, rt, fmt.Sprintf("m%03d", i))
	}
	_, err := fetchRaw(t, rt, map[string]any{"all": true})
	wantCode(t, err, rpc.CodeInvalidArgument)
	if _, err := fetchRaw(t, rt, map[string]any{"session": "claude:m000"}); err != nil {
		t.Fatal(err)
	}
}

// ---- long-poll --------------------------------------------------------------

func TestFetchLongPoll(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	base, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})

	// A wake-up that changes nothing (a live repaint) does not complete
	// the wait; the deadline does, keeping the caller's position.
	res := make(chan *rpc.FetchDocument, 1)
	go func() {
		raw, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": base.Cursor, "wait_ms": 300})
		if err != nil {
			t.Error(err)
		}
		var d rpc.FetchDocument
		json.Unmarshal(raw, &d)
		res <- &d
	}()
	for i := 0; i < 20; i++ {
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	if d := <-res; d.Reason != rpc.ReasonTimeout || d.Cursor != base.Cursor {
		t.Fatalf("repaint completed the wait: %+v", d)
	}

	// until:result binds to the active execution: a busy event alone does
	// not complete it, the result does.
	seq := startExec(rt, s)
	var wg sync.WaitGroup
	wg.Add(1)
	var got *rpc.FetchDocument
	go func() {
		defer wg.Done()
		raw, err := fetchRaw(t, rt, map[string]any{"session": "claude:a", "cursor": base.Cursor, "until": "result", "wait_ms": 60000})
		if err != nil {
			t.Error(err)
			return
		}
		got = &rpc.FetchDocument{}
		json.Unmarshal(raw, got)
	}()
	time.Sleep(50 * time.Millisecond)
	finishExec(rt, s, "done")
	wg.Wait()
	if got == nil || got.Reason != rpc.ReasonResult || len(got.Sessions[0].Results) != 1 || got.Sessions[0].Results[0].ExecutionSeq != seq {
		t.Fatalf("until:result: %+v", got)
	}
	// Cursorless until:result waits for the bound execution too.
	startExec(rt, s)
	go func() { time.Sleep(50 * time.Millisecond); finishExec(rt, s, "two") }()
	d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "until": "result", "wait_ms": 60000})
	if d.Reason != rpc.ReasonResult || *d.Sessions[0].Results[0].FinalText != "two" {
		t.Fatalf("cursorless until:result: %+v", d)
	}
	// has_more returns at once even with wait_ms.
	s.mu.Lock()
	for i := 0; i < 100; i++ {
		rt.emitLocked(s, rpc.Event{Type: rpc.EventProviderRetrying, ExecutionSeq: 2, Attempt: i})
	}
	s.mu.Unlock()
	d, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": base.Cursor, "wait_ms": 600000})
	if !d.HasMore || d.Reason != rpc.ReasonPageFull {
		t.Fatalf("page: %+v", d)
	}
	d, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": d.Cursor, "wait_ms": 600000, "until": "result"})
	if d.Reason == rpc.ReasonTimeout {
		t.Fatalf("has_more continuation waited: %+v", d)
	}
	// until:result returns early on blocked.
	startExec(rt, s)
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.mu.Lock()
		rt.transitionLocked(s, stBlocked, rpc.Event{Type: rpc.EventSessionBlocked, ExecutionSeq: 3, Reason: "permission"})
		s.mu.Unlock()
	}()
	cur := d.Cursor
	for {
		d, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": cur, "wait_ms": 60000, "until": "result"})
		if !d.HasMore {
			break
		}
		cur = d.Cursor
	}
	if d.Reason != rpc.ReasonBlocked {
		t.Fatalf("blocked: %+v", d)
	}
}

// until:"result" from a cursor past the bound execution's result (an idle
// Session whose result the caller fetched already) carries that result
// again: reason result always comes with the result. The cursor returned
// is the caller's own when nothing else changed, and a fetch without
// until:"result" from it still has nothing new.
func TestFetchUntilResultPastItsResult(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	runExec(rt, s, "the answer")
	base, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	past, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": base.Cursor})
	for i := 0; i < 2; i++ {
		d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": past.Cursor, "until": "result", "wait_ms": 60000})
		if d.Reason != rpc.ReasonResult || len(d.Sessions) != 1 || len(d.Sessions[0].Results) != 1 || *d.Sessions[0].Results[0].FinalText != "the answer" {
			t.Fatalf("fetch %d from a cursor past the result: %+v", i, d)
		}
		if d.Cursor != past.Cursor {
			t.Fatalf("cursor %s, want the caller's %s (nothing else changed)", d.Cursor, past.Cursor)
		}
	}
	d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": past.Cursor})
	if d.Reason != rpc.ReasonSnapshot && d.Reason != rpc.ReasonTimeout || len(d.Sessions) > 0 && len(d.Sessions[0].Results) != 0 {
		t.Fatalf("a plain fetch from it: %+v", d)
	}
}

// A request that opens on a Session already blocked (its Notification
// hook overtook its PermissionRequest hook, so session.blocked came with
// no request) wakes a fetch waiting from before it, which shows it; so
// does its answer, taken before the harness moves. dlgt acp follows a
// Session this way and never asked the editor (the acp test
// TestLateAnswerChangesNothing timed out waiting for the request).
func TestFetchWakesOnAPendingRequest(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "a")
	startExec(rt, s)
	s.mu.Lock()
	rt.transitionLocked(s, stBlocked, rpc.Event{Type: rpc.EventSessionBlocked, ExecutionSeq: 1, Reason: "permission"})
	s.mu.Unlock()
	base, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a"})
	if p := base.Sessions[0].Session.Pending; p != nil {
		t.Fatalf("pending before the request: %+v", p)
	}
	change := func(f func()) {
		go func() {
			time.Sleep(50 * time.Millisecond)
			s.mu.Lock()
			f()
			s.notifyLocked()
			s.mu.Unlock()
		}()
	}
	change(func() {
		rt.openPendingLocked(s, "l1", harness.Evidence{Kind: harness.KindBlocked, Answerable: true, Tool: "Bash", Input: "ls"})
	})
	d, _ := fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": base.Cursor, "wait_ms": 20000})
	if d.Reason == rpc.ReasonTimeout || len(d.Sessions) != 1 || d.Sessions[0].Session.Pending == nil || d.Sessions[0].Session.Pending.Tool != "Bash" {
		t.Fatalf("fetch after the request opened: %+v", d)
	}
	opened := d.Cursor
	change(func() { s.approvals.Answer(s.approvals.Open(), nil) }) // as answerLocked
	d, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": d.Cursor, "wait_ms": 20000})
	if d.Reason == rpc.ReasonTimeout || len(d.Sessions) != 1 || d.Sessions[0].Session.Pending != nil {
		t.Fatalf("fetch after the answer: %+v", d)
	}
	// A retry from before the request, once it came and went and an
	// event followed, replays up to the position the request made (it
	// used to be a delta cut with no progress: "no max_bytes can carry
	// this response", on every retry).
	s.mu.Lock()
	rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionResumed, ExecutionSeq: 1})
	s.mu.Unlock()
	d, _ = fetchDoc(t, rt, map[string]any{"session": "claude:a", "cursor": base.Cursor})
	if d.Cursor != opened {
		t.Fatalf("retry from before the request: cursor %s, want %s (%+v)", d.Cursor, opened, d)
	}
}
