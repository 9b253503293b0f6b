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
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/sockets"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// Fault suite (reliability issue, "Faults"): harness processes killed or
// printing hostile bytes, the state directory full or read-only, the
// socket deleted while the daemon runs. Every wait has a generous
// deadline; no test asserts a duration.

// ---- harness killed -------------------------------------------------------

// A harness whose process group is SIGKILLed from outside mid-turn fails
// its Session with an interrupted result and a session.failed event.
func TestFaultHarnessKilled(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "fk-1", "[[slow 60000]] long work")
	td.waitState(t, r.Session.ID, rpc.StateBusy)
	// The spinner shows once the fake recorded the prompt in its
	// transcript, so the conversation can be resumed below.
	td.waitScreen(t, r.Session.ID, "Working")
	pid := harnessPID(t, r.Session.Cwd)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The long poll from the receipt's cursor ends with the result.
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusInterrupted || res.ExecutionSeq != 1 || res.Error == nil || res.Error.Code != "harness_exited" {
		t.Fatalf("result = %+v (error %+v)", res, res.Error)
	}
	rd := td.waitState(t, r.Session.ID, rpc.StateFailed)
	checkInterrupted(t, rd, 1, "harness_exited")
	evs := td.events(t, r.Session.ID)
	last := evs[len(evs)-1]
	if last.Type != rpc.EventSessionFailed || last.ExecutionSeq != 1 || last.Reason != "harness_exited" {
		t.Fatalf("last event = %+v (events %v)", last, eventTypes(evs))
	}
	waitNoProcs(t, r.Session.Cwd)
	// The failed Session refuses work until resumed; resume works.
	if err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "x", RequestID: "fk-2"}, nil); !errors.Is(err, rpc.ErrSessionUnavailable) {
		t.Fatalf("send to failed = %v", err)
	}
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "again", RequestID: "fk-3", Resume: true, Environment: td.env}, &r2)
	if _, res := td.waitResult(t, r.Session.ID, r2.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("after resume = %+v", res)
	}
}

// ---- hostile output -------------------------------------------------------

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// wireFetch is session.fetch over the socket; it returns the result's
// raw JSON (the document) or the wire error.
func wireFetch(t testing.TB, c *rpc.Client, params map[string]any) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	line, err := c.CallRaw(ctx, rpc.MethodSessionFetch, params)
	if err != nil {
		return nil, err
	}
	var resp rpc.Response
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatalf("response %q: %v", line[:min(len(line), 200)], err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

type wireFollowed struct {
	*followed
	fragments int // documents that ended in a fragment_after
}

// followWire follows a Session's positions over the socket from cursor
// until has_more is false, at max_bytes mb, reassembling rows (and
// their fragments) with the checks of fetch_test.go.
func followWire(t testing.TB, td *testDaemon, id, cursor string, mb int) *wireFollowed {
	t.Helper()
	fragments := 0
	var c *rpc.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	ra := newReassembler(t)
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("no end")
		}
		// A connection may make 1,000 requests per 10 s (rate limit).
		if i%500 == 0 {
			if c != nil {
				c.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			var err error
			c, err = rpc.Dial(ctx, td.paths.Socket)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		params := map[string]any{"session": id, "cursor": cursor, "max_bytes": mb}
		raw, err := wireFetch(t, c, params)
		if err != nil {
			var re *rpc.Error
			if !errors.As(err, &re) || re.WorkableMaxBytes == 0 {
				t.Fatalf("fetch: %v", err)
			}
			params["max_bytes"] = re.WorkableMaxBytes
			if raw, err = wireFetch(t, c, params); err != nil {
				t.Fatalf("retry at workable %d: %v", re.WorkableMaxBytes, err)
			}
		} else if len(raw)+fetchdoc.CLIWrapper > mb {
			t.Fatalf("document of %d bytes (+%d) exceeds max_bytes %d", len(raw), fetchdoc.CLIWrapper, mb)
		}
		if !utf8.Valid(raw) {
			t.Fatalf("document is not valid UTF-8")
		}
		doc := ra.apply(raw)
		if len(doc.Sessions) > 0 && doc.Sessions[0].Screen != nil && doc.Sessions[0].Screen.FragmentAfter != nil {
			fragments++
		}
		cursor = doc.Cursor
		if !doc.HasMore {
			return &wireFollowed{followed: ra.f, fragments: fragments}
		}
	}
}

// checkBigRows checks rows printed from one [[bigline]]: each is a
// stretch of the repeating pattern continuing the previous one, and all
// but the last fill the width.
func checkBigRows(t testing.TB, rows []string, cols int) {
	t.Helper()
	const pat = "abcdefghijklmnopqrstuvwxyz0123456789"
	if len(rows) == 0 {
		t.Fatal("no bigline rows")
	}
	off := strings.Index(pat, rows[0][:1])
	for i, r := range rows {
		want := strings.Repeat(pat, len(r)/len(pat)+2)[off : off+len(r)]
		if r != want {
			t.Fatalf("bigline row %d of %d is not the pattern: %q", i, len(rows), r[:min(len(r), 80)])
		}
		if i < len(rows)-1 && len(r) != cols {
			t.Fatalf("bigline row %d has %d columns, want %d", i, len(r), cols)
		}
		off = (off + len(r)) % len(pat)
	}
}

// A harness printing invalid UTF-8, a 5 MB line without a line break
// and 100k-character lines: the daemon stays responsive, rows are valid
// UTF-8 (U+FFFD for bad bytes), fetch documents stay within max_bytes
// (long rows come as fragments), scrollback works and the heap stays
// bounded.
func TestFaultHostileOutput(t *testing.T) {
	td := startTestDaemon(t)
	base := heapInUse()

	// Invalid bytes: a lone continuation byte, 0xff, a truncated
	// sequence, an overlong encoding and a surrogate, between markers.
	prompt := "[[raw 52 41 57 3c 80 ff c3 28 c0 af ed a0 80 3e 45 4e 44]] [[bigline 5000000]] hostile"
	r := td.create(t, "ho-1", prompt)

	// The daemon answers other requests while the harness floods.
	var calls, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak atomic.Uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var st rpc.DaemonStatus
			if err := td.call(rpc.MethodDaemonStatus, struct{}{}, &st); err != nil {
				failures.Add(1)
			}
			var list rpc.SessionListResult
			if err := td.call(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list); err != nil {
				failures.Add(1)
			}
			calls.Add(2)
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	close(stop)
	wg.Wait()
	if res.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if failures.Load() != 0 || calls.Load() == 0 {
		t.Fatalf("%d of %d requests failed during the flood", failures.Load(), calls.Load())
	}
	t.Logf("%d requests answered during the 5 MB line; heap in use %d MiB at start, peak %d MiB", calls.Load(), base>>20, peak.Load()>>20)

	// Scrollback: every line valid UTF-8, the bad bytes are U+FFFD, and
	// the newest rows of the big line continue its pattern.
	var page rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: r.Session.ID, Lines: 10000}, &page)
	var big []string
	sawRaw := false
	for _, l := range page.Lines {
		if !utf8.ValidString(l) {
			t.Fatalf("scrollback line is not valid UTF-8: %q", l)
		}
		if strings.Contains(l, "RAW<") {
			sawRaw = true
			if !strings.Contains(l, "\ufffd") || !strings.Contains(l, ">END") {
				t.Fatalf("raw line = %q, want U+FFFD between the markers", l)
			}
		}
		if len(l) > 0 && strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789") == "" {
			big = append(big, l)
		}
	}
	if len(big) < 1000 {
		t.Fatalf("scrollback holds %d rows of the big line", len(big))
	}
	checkBigRows(t, big, defaultCols)
	// The raw-bytes line was printed first; 5 MB later it may have aged
	// out of the row window (10,000 per Session), but never silently:
	// the row log's first id moved.
	if !sawRaw {
		t.Logf("raw-bytes row aged out of the scrollback window (%d lines)", len(page.Lines))
	}

	// The same invalid bytes alone, then a 1000-column Session with
	// 100k-character lines read through small fetch budgets.
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "wide", Harness: "claude", Cwd: t.TempDir(), Prompt: "[[raw 52 41 57 3c 80 ff c3 28 3e 45 4e 44]] [[bigline 100000]] wide",
		RequestID: "ho-2", Environment: td.env, Cols: maxCols,
	}, &r2)
	td.waitResult(t, r2.Session.ID, r2.Cursor)
	var r3 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r2.Session.ID, Prompt: "[[bigline 100000]] again", RequestID: "ho-3"}, &r3)
	td.waitResult(t, r2.Session.ID, r3.Cursor)
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r2.Session.ID}, nil)

	// A row is 1000 bytes, so a 600-byte budget must split every row of
	// the big lines into fragments. (Following consumes positions, so
	// the Session is followed once.)
	for _, mb := range []int{600} {
		got := followWire(t, td, r2.Session.ID, r2.Cursor, mb)
		if got.fragments == 0 {
			t.Fatalf("max_bytes %d: no row came in fragments", mb)
		}
		var rawRow string
		var bigRows [][]string
		inBig := false
		for _, row := range got.rows {
			if !utf8.ValidString(row) {
				t.Fatalf("max_bytes %d: row not valid UTF-8: %q", mb, row)
			}
			if strings.HasPrefix(row, "RAW<") {
				rawRow = row
			}
			isBig := len(row) > 0 && strings.Trim(row, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
			if isBig && !inBig {
				bigRows = append(bigRows, nil)
			}
			if isBig {
				bigRows[len(bigRows)-1] = append(bigRows[len(bigRows)-1], row)
			}
			inBig = isBig
		}
		if rawRow != "RAW<\ufffd\ufffd\ufffd(>END" && (!strings.Contains(rawRow, "\ufffd") || !strings.HasSuffix(rawRow, ">END")) {
			t.Fatalf("max_bytes %d: raw row = %q", mb, rawRow)
		}
		if len(bigRows) != 2 {
			t.Fatalf("max_bytes %d: %d runs of big rows, want 2", mb, len(bigRows))
		}
		// The first line scrolled off whole; the second one's last rows
		// are still on the live screen (40 rows), not yet stable.
		n := 0
		for _, r := range bigRows[0] {
			n += len(r)
		}
		if n != 100000 {
			t.Fatalf("max_bytes %d: a 100000-byte line came back as %d bytes in %d rows", mb, n, len(bigRows[0]))
		}
		for _, rows := range bigRows {
			checkBigRows(t, rows, maxCols)
		}
	}

	// Memory: what the flood left behind is bounded (rows are in bbolt,
	// bytes in the raw log, not in the heap).
	after := heapInUse()
	t.Logf("heap in use after: %d MiB", after>>20)
	if after > base+64<<20 {
		t.Fatalf("heap in use grew from %d to %d MiB", base>>20, after>>20)
	}
	if peak.Load() > base+256<<20 {
		t.Fatalf("heap in use peaked at %d MiB (from %d MiB)", peak.Load()>>20, base>>20)
	}
}

// ---- state directory full or read-only -----------------------------------

// mountSmallTmpfs mounts an 8 MiB tmpfs on dir, unmounted at cleanup
// (registered first, so it runs after the daemon stopped). It skips when
// the test may not mount.
func mountSmallTmpfs(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot mount a tmpfs: %v", err)
		}
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Logf("unmount %s: %v; detaching", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
}

// startDaemonAt starts a test daemon whose DLGT_HOME is home.
func startDaemonAt(t testing.TB, home string, env map[string]string) *testDaemon {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "dlgt-t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	p, err := statedir.ResolvePaths(func(k string) string {
		switch k {
		case "DLGT_HOME":
			return home
		case "DLGT_SOCKET":
			return filepath.Join(sockDir, "d.sock")
		}
		return ""
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	td := &testDaemon{t: t, paths: p, done: make(chan error, 1), env: env}
	td.start()
	t.Cleanup(td.stop)
	return td
}

// fillDisk writes path until the filesystem has no room left, even for
// one byte.
func fillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n := len(buf); n > 0; {
		if _, err := f.Write(buf[:n]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling: %v", err)
			}
			n /= 2
		}
	}
}

// diskOutcome classifies an acceptance while the disk is full: nil, or
// RPC_UNAVAILABLE naming the state directory and the cause.
func checkDiskError(t testing.TB, what string, err error, dataDir, cause string) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeRPCUnavailable || !strings.Contains(re.Message, dataDir) || !strings.Contains(re.Message, cause) {
		t.Fatalf("%s: %v, want RPC_UNAVAILABLE naming %s and %q", what, err, dataDir, cause)
	}
	return true
}

// acked is an acknowledged acceptance, to be found again after recovery.
type acked struct {
	reqID, session, cursor string
	seq                    uint64
	create                 rpc.SessionCreateParams
	send                   rpc.SessionSendParams
}

// checkAcked replays every acknowledged request id: each returns its
// receipt (replayed), and its Session holds the execution.
func checkAcked(t testing.TB, td *testDaemon, all []acked) {
	t.Helper()
	for _, a := range all {
		var r rpc.Receipt
		if a.create.RequestID != "" {
			td.mustCall(rpc.MethodSessionCreate, a.create, &r)
		} else {
			td.mustCall(rpc.MethodSessionSend, a.send, &r)
		}
		if !r.Replayed || r.Session.ID != a.session || r.ExecutionSeq != a.seq {
			t.Fatalf("%s after recovery: %+v, want a replay of %s execution %d", a.reqID, r, a.session, a.seq)
		}
		if rd := td.read(t, a.session); rd.Result == nil || rd.Result.ExecutionSeq < a.seq {
			t.Fatalf("%s after recovery: Session %s has result %+v, want execution %d or later", a.reqID, a.session, rd.Result, a.seq)
		}
	}
}

// With the state directory's disk full, acceptances fail with a typed
// error naming it (or, where bbolt could still reuse its free pages,
// succeed and stay durable); nothing hangs; once space returns, new
// Sessions work, the store checks clean, and every acknowledged
// acceptance is still there.
func TestFaultDiskFull(t *testing.T) {
	home := filepath.Join(t.TempDir(), "state")
	mountSmallTmpfs(t, home)
	env := fakeClaudeEnv(t)
	td := startDaemonAt(t, home, env)
	var all []acked

	create := func(id, prompt string) (rpc.Receipt, rpc.SessionCreateParams, error) {
		p := rpc.SessionCreateParams{Title: "disk", Harness: "claude", Cwd: t.TempDir(), Prompt: prompt, RequestID: id, Environment: env}
		var r rpc.Receipt
		err := td.call(rpc.MethodSessionCreate, p, &r)
		return r, p, err
	}
	r, p, err := create("df-1", "before the disk filled")
	if err != nil {
		t.Fatal(err)
	}
	td.waitResult(t, r.Session.ID, r.Cursor)
	all = append(all, acked{reqID: "df-1", session: r.Session.ID, seq: 1, create: p, cursor: r.Cursor})
	sess := r.Session.ID

	filler := filepath.Join(home, "filler")
	fillDisk(t, filler)

	// Sends (with output for the row flusher) until some are refused;
	// any that succeeds while bbolt still finds free pages must survive.
	// Results and events that cannot be stored wait in memory, so the
	// Session is followed by session.read, which does not need them.
	refused := 0
	for i := 0; i < 40 && refused < 3; i++ {
		td.waitState(t, sess, rpc.StateIdle)
		sp := rpc.SessionSendParams{Session: sess, Prompt: fmt.Sprintf("[[flood 300]] full %d", i), RequestID: fmt.Sprintf("df-s%d", i)}
		var rs rpc.Receipt
		err := td.call(rpc.MethodSessionSend, sp, &rs)
		if !checkDiskError(t, "send while full", err, td.paths.DataDir, "no space left") {
			all = append(all, acked{reqID: sp.RequestID, session: sess, seq: rs.ExecutionSeq, send: sp, cursor: rs.Cursor})
			continue
		}
		refused++
		t.Logf("send %d refused: %v", i, err)
		// A retry of the refused id is refused the same way, or, if its
		// receipt could now be stored, replayed: never a second
		// execution.
		var again rpc.Receipt
		err = td.call(rpc.MethodSessionSend, sp, &again)
		switch {
		case errors.Is(err, rpc.ErrSessionBusy):
			t.Fatalf("retry of a refused send acted again: %v", err)
		case checkDiskError(t, "retry while full", err, td.paths.DataDir, "no space left"):
		default:
			all = append(all, acked{reqID: sp.RequestID, session: sess, seq: again.ExecutionSeq, send: sp, cursor: again.Cursor})
		}
	}
	if refused == 0 {
		t.Fatal("no send was refused while the disk was full")
	}
	// A new Session is refused too (or, if it succeeds, it survives).
	for i := 0; i < 3; i++ {
		rc, pc, err := create(fmt.Sprintf("df-c%d", i), "[[flood 300]] create while full")
		if checkDiskError(t, "create while full", err, td.paths.DataDir, "no space left") {
			t.Logf("create %d refused: %v", i, err)
			continue
		}
		all = append(all, acked{reqID: pc.RequestID, session: rc.Session.ID, seq: 1, create: pc, cursor: rc.Cursor})
	}
	// Reads keep working.
	td.read(t, sess)
	var list rpc.SessionListResult
	td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list)

	// Space returns: the daemon recovers without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var ok rpc.Receipt
	deadline := time.Now().Add(lifecycleGuard)
	for {
		rc, pc, err := create("df-after", "after space returned")
		if err == nil {
			ok = rc
			all = append(all, acked{reqID: pc.RequestID, session: rc.Session.ID, seq: 1, create: pc})
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create after space returned: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, res := td.waitResult(t, ok.Session.ID, ok.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("after recovery: %+v", res)
	}
	// Every acknowledged execution's result arrives, in order.
	for _, a := range all {
		if a.cursor == "" {
			continue
		}
		if _, res := td.waitResult(t, a.session, a.cursor); res.ExecutionSeq != a.seq || res.Status != rpc.StatusCompleted {
			t.Fatalf("%s: result %+v, want execution %d completed", a.reqID, res, a.seq)
		}
	}
	checkAcked(t, td, all)

	// Across a restart too, and the file checks clean.
	td.stop()
	db, err := store.Open(td.paths.DB, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatalf("store check: %v", err)
	}
	db.Close()
	td.start()
	checkAcked(t, td, all)
}

// A read-only state directory: the daemon refuses to start with an
// error naming it (nothing is written), and starts with every record
// once it is writable again. A running daemon's state directory cannot
// be remounted read-only (its open files keep the mount busy), so the
// running case is covered by the raw-log directory alone: new Sessions
// are refused with a typed error while it is read-only.
func TestFaultReadOnly(t *testing.T) {
	home := filepath.Join(t.TempDir(), "state")
	mountSmallTmpfs(t, home)
	env := fakeClaudeEnv(t)
	td := startDaemonAt(t, home, env)
	p := rpc.SessionCreateParams{Title: "ro", Harness: "claude", Cwd: t.TempDir(), Prompt: "before read-only", RequestID: "ro-1", Environment: env}
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, p, &r)
	td.waitResult(t, r.Session.ID, r.Cursor)
	all := []acked{{reqID: "ro-1", session: r.Session.ID, seq: 1, create: p}}

	// While running: the raw-log directory bound read-only.
	raw := td.paths.RawDir
	if err := syscall.Mount(raw, raw, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	bound := true
	unbind := func() {
		if bound {
			bound = false
			if err := syscall.Unmount(raw, 0); err != nil {
				syscall.Unmount(raw, syscall.MNT_DETACH)
			}
		}
	}
	t.Cleanup(unbind)
	if err := syscall.Mount("", raw, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		// The first Session's raw log is open for writing there.
		t.Logf("raw directory cannot be made read-only while in use (%v); skipping the running case", err)
	} else {
		p2 := rpc.SessionCreateParams{Title: "ro", Harness: "claude", Cwd: t.TempDir(), Prompt: "while read-only", RequestID: "ro-2", Environment: env}
		err := td.call(rpc.MethodSessionCreate, p2, nil)
		if !checkDiskError(t, "create with a read-only raw directory", err, td.paths.DataDir, "read-only") {
			t.Fatal("create succeeded with a read-only raw directory")
		}
		t.Logf("create refused: %v", err)
		// The running Session still works: its files are open.
		var rs rpc.Receipt
		td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "while raw is read-only", RequestID: "ro-s1"}, &rs)
		td.waitResult(t, r.Session.ID, rs.Cursor)
		all = append(all, acked{reqID: "ro-s1", session: r.Session.ID, seq: rs.ExecutionSeq, send: rpc.SessionSendParams{Session: r.Session.ID, Prompt: "while raw is read-only", RequestID: "ro-s1"}})
	}
	unbind()

	// At startup: the whole state directory read-only.
	td.stop()
	if err := syscall.Mount("", home, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, "size=8m,mode=0700"); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := Run(ctx, Config{Paths: td.paths, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), td.paths.DataDir) {
		t.Fatalf("Run on a read-only state directory = %v, want an error naming it", err)
	}
	if err := syscall.Mount("", home, "", syscall.MS_REMOUNT, "size=8m,mode=0700"); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	td.start()
	checkAcked(t, td, all)
	var r3 rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "ro", Harness: "claude", Cwd: t.TempDir(), Prompt: "writable again", RequestID: "ro-3", Environment: env}, &r3)
	if _, res := td.waitResult(t, r3.Session.ID, r3.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("after remount: %+v", res)
	}
}

// ---- socket deleted -------------------------------------------------------

// The socket file deleted while the daemon runs is bound again at the
// same path; connections made before keep working, new ones connect.
func TestFaultSocketDeleted(t *testing.T) {
	td := startTestDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old, err := rpc.Dial(ctx, td.paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	for _, path := range []string{td.paths.Socket, td.paths.HookSocket} {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(lifecycleGuard)
	for {
		fi, err1 := os.Lstat(td.paths.Socket)
		hfi, err2 := os.Lstat(td.paths.HookSocket)
		if err1 == nil && err2 == nil {
			if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 || hfi.Mode().Perm() != 0o600 {
				t.Fatalf("rebound socket modes %v / %v", fi.Mode(), hfi.Mode())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket not bound again: %v / %v", err1, err2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A new client connects; the old connection still works; a Session
	// completes a turn, so hooks reach the rebound hook socket.
	var st rpc.DaemonStatus
	td.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
	if err := old.Call(ctx, rpc.MethodDaemonStatus, struct{}{}, &st); err != nil {
		t.Fatalf("connection from before the rebind: %v", err)
	}
	r := td.create(t, "sd-1", "after rebind")
	if _, res := td.waitResult(t, r.Session.ID, r.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	// A socket path taken by a non-socket file is left alone. (Renamed
	// over the socket: a deleted socket is bound again at once.)
	if err := os.WriteFile(td.paths.Socket+".tmp", []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(td.paths.Socket+".tmp", td.paths.Socket); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * sockets.CheckInterval)
	if b, err := os.ReadFile(td.paths.Socket); err != nil || string(b) != "not a socket" {
		t.Fatalf("foreign file at the socket path replaced: %q %v", b, err)
	}
	// Once it is gone, the socket comes back; shutdown removes it.
	os.Remove(td.paths.Socket)
	deadline = time.Now().Add(lifecycleGuard)
	for {
		if err := td.call(rpc.MethodDaemonStatus, struct{}{}, &st); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no reconnect: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	old.Close()
	td.stop()
	if _, err := os.Lstat(td.paths.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left after shutdown: %v", err)
	}
}
