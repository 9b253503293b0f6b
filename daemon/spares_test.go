package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// warmParams is the session.warm of the shape td.create-like creates in
// cwd make.
func warmParams(td *testDaemon, cwd string, spares int) rpc.SessionWarmParams {
	return rpc.SessionWarmParams{Harness: "claude", Cwd: cwd, Environment: td.env, Spares: spares}
}

// awaitSpares asks for spares of p's shape until want of them are ready.
func awaitSpares(t *testing.T, td *testDaemon, p rpc.SessionWarmParams, want int) rpc.SessionWarmResult {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var r rpc.SessionWarmResult
		td.mustCall(rpc.MethodSessionWarm, p, &r)
		if r.Ready == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("spares never ready: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// claims records the spares creates claim while a test runs.
func claims(t *testing.T) func() []string {
	var mu sync.Mutex
	var got []string
	spareClaimed = func(uid string) {
		mu.Lock()
		got = append(got, uid)
		mu.Unlock()
	}
	t.Cleanup(func() { spareClaimed = nil })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func sessionEvents(t *testing.T, td *testDaemon, id string) []rpc.Event {
	t.Helper()
	var evs []rpc.Event
	td.mustCall(rpc.MethodEventRead, map[string]any{"session": id}, &evs)
	return evs
}

// A create of a warm shape claims a ready spare, and the Session it makes
// is what a cold create makes: the same receipt, events, result; spares
// are seen by no list or event reader; a new spare takes the claimed
// one's place.
func TestWarmSpareClaimedLikeACold(t *testing.T) {
	claimed := claims(t)
	td := startTestDaemon(t)
	cwd := t.TempDir()
	p := warmParams(td, cwd, 1)
	w := awaitSpares(t, td, p, 1)
	if len(w.Pids) != 1 || w.RSSBytes <= 0 || w.Shape == "" {
		t.Fatalf("warm = %+v, want one ready spare with its pid and memory", w)
	}

	var list rpc.SessionListResult
	td.mustCall(rpc.MethodSessionList, map[string]any{}, &list)
	var all []rpc.Event
	td.mustCall(rpc.MethodEventRead, map[string]any{}, &all)
	if len(list.Sessions) != 0 || len(all) != 0 {
		t.Fatalf("a spare is visible: list %+v, events %v", list.Sessions, eventTypes(all))
	}

	create := func(reqID, dir string) rpc.Receipt {
		var r rpc.Receipt
		td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: "warm test", Harness: "claude", Cwd: dir, Prompt: "hello " + reqID,
			RequestID: reqID, Environment: td.env,
		}, &r)
		return r
	}
	warm := create("warm-1", cwd)
	if n := len(claimed()); n != 1 {
		t.Fatalf("%d spares claimed, want 1", n)
	}
	cold := create("cold-1", t.TempDir())
	if n := len(claimed()); n != 1 {
		t.Fatalf("a create of another shape claimed a spare (%d claims)", n)
	}
	for _, r := range []rpc.Receipt{warm, cold} {
		if !strings.HasPrefix(r.Session.ID, "claude:") || r.ExecutionSeq != 1 || r.Submission != rpc.SubmissionConfirmed || r.Session.Title != "warm test" {
			t.Fatalf("receipt = %+v", r)
		}
	}
	// The claim is said: in the receipt and session.read ("warm"), and
	// daemon status counts it and the create of another shape.
	if !warm.Session.Warm || cold.Session.Warm {
		t.Fatalf("warm: %v in the claimed Session's receipt, %v in the cold one's", warm.Session.Warm, cold.Session.Warm)
	}
	var rd rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: warm.Session.ID}, &rd)
	if !rd.Session.Warm {
		t.Fatalf("session.read of the claimed Session: %+v", rd.Session)
	}
	var st rpc.DaemonStatus
	td.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
	if st.SpareClaims != 1 || st.SpareShapeMisses != 1 || st.SpareMisses != 0 {
		t.Fatalf("daemon status: %d claims, %d misses, %d shape misses; want 1, 0, 1", st.SpareClaims, st.SpareMisses, st.SpareShapeMisses)
	}
	_, wres := td.waitResult(t, warm.Session.ID, warm.Cursor)
	_, cres := td.waitResult(t, cold.Session.ID, cold.Cursor)
	if wres.Status != rpc.StatusCompleted || fetchdoc.DerefText(&wres) != "MOCK-REPLY: hello warm-1" || cres.Status != wres.Status {
		t.Fatalf("warm result %+v (%q), cold %+v", wres, fetchdoc.DerefText(&wres), cres)
	}
	we, ce := eventTypes(sessionEvents(t, td, warm.Session.ID)), eventTypes(sessionEvents(t, td, cold.Session.ID))
	if strings.Join(we, " ") != strings.Join(ce, " ") || len(we) == 0 || we[0] != rpc.EventSessionCreated {
		t.Fatalf("warm events %v, cold events %v", we, ce)
	}
	// Replaying the create's request_id replays its receipt.
	if again := create("warm-1", cwd); again.Session.ID != warm.Session.ID || again.ExecutionSeq != warm.ExecutionSeq {
		t.Fatalf("replay = %+v, want %s", again.Session, warm.Session.ID)
	}

	// The replacement spare comes, and stays out of the list.
	w2 := awaitSpares(t, td, p, 1)
	if w2.Pids[0] == w.Pids[0] {
		t.Fatalf("the claimed spare's process %d is still a spare", w.Pids[0])
	}
	td.mustCall(rpc.MethodSessionList, map[string]any{}, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("list has %d Sessions, want 2", len(list.Sessions))
	}

	// Stopping the spares stops their processes.
	var r0 rpc.SessionWarmResult
	td.mustCall(rpc.MethodSessionWarm, warmParams(td, cwd, 0), &r0)
	if r0.Ready+r0.Starting != 0 {
		t.Fatalf("spares 0 left %+v", r0)
	}
	waitGone(t, w2.Pids[0])
}

// waitGone waits for process pid to be gone (or a zombie: reaped by its
// parent soon).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A spare is never handed out when the create's environment differs, or
// when its harness binary changed since it started, or when it died; the
// create then starts cold and works.
func TestWarmSpareNotHandedOut(t *testing.T) {
	claimed := claims(t)
	td := startTestDaemon(t)
	cwd := t.TempDir()
	p := warmParams(td, cwd, 1)
	awaitSpares(t, td, p, 1)

	create := func(reqID string, env map[string]string) rpc.Receipt {
		var r rpc.Receipt
		td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: "t", Harness: "claude", Cwd: cwd, Prompt: "hi", RequestID: reqID, Environment: env,
		}, &r)
		if r.Submission != rpc.SubmissionConfirmed {
			t.Fatalf("%s: receipt %+v", reqID, r)
		}
		return r
	}
	other := map[string]string{}
	for k, v := range td.env {
		other[k] = v
	}
	other["SOME_SECRET"] = "another client's"
	create("env", other)
	if n := len(claimed()); n != 0 {
		t.Fatalf("a create with another environment claimed a spare")
	}

	// The binary replaced (a new version installed).
	bin := td.env["DLGT_CLAUDE_BIN"]
	data, _ := os.ReadFile(bin)
	if err := os.WriteFile(bin, append(data, "# upgraded\n"...), 0o755); err != nil {
		t.Fatal(err)
	}
	create("upgraded", td.env)
	if n := len(claimed()); n != 0 {
		t.Fatalf("a spare of the old binary was handed out")
	}

	// The replacement (of the new binary) is claimed; then one that died
	// is not.
	w := awaitSpares(t, td, p, 1)
	create("fresh", td.env)
	if n := len(claimed()); n != 1 {
		t.Fatalf("%d claims, want the new binary's spare claimed", n)
	}
	w = awaitSpares(t, td, p, 1)
	syscall.Kill(w.Pids[0], syscall.SIGKILL)
	waitGone(t, w.Pids[0])
	create("after-kill", td.env)
	if n := len(claimed()); n > 2 {
		t.Fatalf("%d claims", n)
	}
	// Whether the create came before or after the daemon saw the exit,
	// a dead spare's process is never the Session's: a replacement
	// spare or a cold launch served it, and a spare is ready again.
	awaitSpares(t, td, p, 1)
}

// Spares are bounded: per shape and in all.
func TestWarmSparesBounded(t *testing.T) {
	td := startTestDaemon(t)
	var r rpc.SessionWarmResult
	err := td.call(rpc.MethodSessionWarm, warmParams(td, t.TempDir(), maxSparesPerShape+1), &r)
	if re := rpc.AsError(err); re == nil || re.Code != rpc.CodeInvalidArgument || re.Field != "spares" {
		t.Fatalf("err = %v, want INVALID_ARGUMENT spares", err)
	}
	for i := 0; i < maxSparesTotal/maxSparesPerShape; i++ {
		td.mustCall(rpc.MethodSessionWarm, warmParams(td, t.TempDir(), maxSparesPerShape), &r)
	}
	err = td.call(rpc.MethodSessionWarm, warmParams(td, t.TempDir(), 1), &r)
	if re := rpc.AsError(err); re == nil || re.Code != rpc.CodeInvalidArgument {
		t.Fatalf("err = %v, want INVALID_ARGUMENT past the daemon's bound", err)
	}
	err = td.call(rpc.MethodSessionWarm, rpc.SessionWarmParams{Harness: "claude", Cwd: "relative", Spares: 1}, &r)
	if re := rpc.AsError(err); re == nil || re.Field != "cwd" {
		t.Fatalf("err = %v, want INVALID_ARGUMENT cwd", err)
	}
}

// Spares of a shape unused for its idle time stop.
func TestWarmSparesExpire(t *testing.T) {
	td := startTestDaemon(t)
	p := warmParams(td, t.TempDir(), 1)
	p.IdleMS = 1500
	w := awaitSpares(t, td, p, 1)
	waitGone(t, w.Pids[0])
}

// A daemon killed with spares running leaves rows, raw logs and launch
// directories of uids that have no Session; the next start deletes
// them and keeps every Session's.
func TestSweepOrphans(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "keep", "hello")
	td.waitResult(t, r.Session.ID, r.Cursor)
	td.stop()

	db, err := store.Open(td.paths.DB, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Rows("orphanuid0")
	if err != nil {
		t.Fatal(err)
	}
	rows.Append(1, "a spare's banner")
	rows.Flush()
	db.Close()
	os.MkdirAll(filepath.Join(td.paths.DataDir, "launch", "orphanuid0"), 0o700)
	os.WriteFile(filepath.Join(td.paths.RawDir, "orphanuid0.0000000000000000.raw"), []byte("x"), 0o600)

	td.start()
	t.Cleanup(td.stop)
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, map[string]any{"session": r.Session.ID}, &read)
	if _, err := os.Stat(filepath.Join(td.paths.DataDir, "launch", "orphanuid0")); !os.IsNotExist(err) {
		t.Errorf("orphan launch directory kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(td.paths.RawDir, "orphanuid0.0000000000000000.raw")); !os.IsNotExist(err) {
		t.Errorf("orphan raw log kept: %v", err)
	}
	var sb rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, map[string]any{"session": r.Session.ID}, &sb)
	if len(sb.Lines) == 0 {
		t.Errorf("the Session's rows went with the orphans")
	}
	td.stop()
	if db, err = store.Open(td.paths.DB, store.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if left, err := db.Orphans(); err != nil || len(left) != 0 {
		t.Errorf("orphans after the restart: %v %v", left, err)
	}
}
