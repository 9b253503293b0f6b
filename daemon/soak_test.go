package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/procmem"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// Soak, load and kill -9 tests against a daemon in a child process, so
// that its CPU time and RSS are measured apart from the clients and the
// harness processes. The short forms here always run (go test -run Soak,
// about a minute under -race on two cores); soak_long_test.go (build tag
// soak) holds the several-minute forms and the scale figures of
// docs/measurements/2026-12-03-scale-and-soak.md, and scripts/soak.sh runs them.

// ---- the child daemon ----

// TestSoakDaemonRole is not a test of its own: the soak runs the test
// binary with -test.run=^TestSoakDaemonRole$ and DLGT_SOAK_ROLE=daemon to
// get a daemon in a child process whose transport limits it chooses
// (DLGT_SOAK_MAX_CONNS, DLGT_SOAK_PENDING). It prints "ready" and serves
// until SIGTERM.
func TestSoakDaemonRole(t *testing.T) {
	if os.Getenv("DLGT_SOAK_ROLE") != "daemon" {
		t.Skip("helper process of the soak tests")
	}
	os.Exit(soakDaemonMain())
}

func soakDaemonMain() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := soakPaths(os.Getenv("DLGT_CHILD_HOME"), os.Getenv("DLGT_CHILD_SOCKET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var lim rpc.Limits
	lim.MaxConnections, _ = strconv.Atoi(os.Getenv("DLGT_SOAK_MAX_CONNS"))
	lim.PendingBytes, _ = strconv.Atoi(os.Getenv("DLGT_SOAK_PENDING"))
	if ms, _ := strconv.Atoi(os.Getenv("DLGT_SOAK_WRITE_TIMEOUT_MS")); ms > 0 {
		lim.WriteTimeout = time.Duration(ms) * time.Millisecond
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err = Run(ctx, Config{Paths: p, Logger: log, Limits: lim, Ready: func() { fmt.Println("ready") },
		Options: Options{HookCommand: []string{"env", "DLGT_TEST_ROLE=hook", exe}, StopGrace: 2 * time.Second}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	return 0
}

func soakPaths(home, socket string) (statedir.Paths, error) {
	return statedir.ResolvePaths(func(k string) string {
		switch k {
		case "DLGT_HOME":
			return home
		case "DLGT_SOCKET":
			return socket
		}
		return ""
	}, "test")
}

// soakDaemon is a daemon in a child process on a private home.
type soakDaemon struct {
	daemonProc
	paths statedir.Paths
	env   map[string]string // the fake harness's client environment
	mark  string            // DLGT_SOAK_MARK in every harness's environment
}

// newSoakDaemon prepares (but does not start) a child daemon; childEnv
// adds DLGT_SOAK_* settings.
func newSoakDaemon(t testing.TB, childEnv ...string) *soakDaemon {
	t.Helper()
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "dlgt-s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	p, err := soakPaths(filepath.Join(dir, "state"), filepath.Join(sockDir, "d.sock"))
	if err != nil {
		t.Fatal(err)
	}
	mark := strconv.FormatUint(rand.Uint64(), 36)
	proc := daemonProc{t: t, name: "soak daemon", stopWait: 2 * lifecycleGuard, args: []string{"-test.run=^TestSoakDaemonRole$"},
		env: append([]string{"DLGT_TEST_ROLE=", "DLGT_SOAK_ROLE=daemon", "DLGT_CHILD_HOME=" + p.Home,
			"DLGT_CHILD_SOCKET=" + p.Socket, "GORACE=atexit_sleep_ms=0"}, childEnv...)}
	env := fakeClaudeEnv(t)
	env["FAKECLAUDE_IDLE_MS"], env["DLGT_SOAK_MARK"] = "600000", mark
	sd := &soakDaemon{daemonProc: proc, paths: p, mark: mark, env: env}
	t.Cleanup(func() {
		if sd.running() {
			sd.cmd.Process.Kill()
			<-sd.exited
		}
		killMarked(t, mark)
	})
	return sd
}

func (sd *soakDaemon) running() bool {
	if sd.cmd == nil {
		return false
	}
	select {
	case <-sd.exited:
		return false
	default:
		return true
	}
}

func (sd *soakDaemon) pid() int { return sd.cmd.Process.Pid }

// call makes one RPC on a fresh connection.
func (sd *soakDaemon) call(method string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*lifecycleGuard)
	defer cancel()
	c, err := rpc.Dial(ctx, sd.paths.Socket)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, method, params, out)
}

// allEvents reads the whole event log in pages.
func (sd *soakDaemon) allEvents() ([]rpc.Event, error) {
	var all []rpc.Event
	for after := uint64(0); ; {
		var evs []rpc.Event
		if err := sd.call(rpc.MethodEventRead, rpc.EventReadParams{After: &after}, &evs); err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return all, nil
		}
		all = append(all, evs...)
		after = evs[len(evs)-1].Seq
	}
}

// killMarked SIGKILLs every process group holding a process whose
// environment carries DLGT_SOAK_MARK=mark (the fake harnesses of one soak
// daemon, orphaned by its kill -9, and their hook forwarders), and waits
// until none is left. It returns how many groups it killed.
func killMarked(t testing.TB, mark string) int {
	t.Helper()
	needle := []byte("DLGT_SOAK_MARK=" + mark + "\x00")
	self := syscall.Getpgrp()
	killed := map[int]bool{}
	deadline := time.Now().Add(lifecycleGuard)
	for {
		groups := map[int]bool{}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(env, needle) {
				continue
			}
			if st := procState(pid); st == 0 || st == 'Z' {
				continue
			}
			if pg, err := syscall.Getpgid(pid); err == nil && pg != self && pg > 1 {
				groups[pg] = true
			}
		}
		if len(groups) == 0 {
			return len(killed)
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness groups %v survive SIGKILL", groups)
		}
		for pg := range groups {
			syscall.Kill(-pg, syscall.SIGKILL)
			killed[pg] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- /proc measurements ----

// procCPU is the user+system CPU time of pid itself (children excluded).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// procMem reads VmRSS and VmHWM (KiB) of pid.
func procMem(pid int) (rss, hwm int64) {
	rss, hwm, _ = procmem.Of(pid)
	return rss, hwm
}

// procFDs counts the open file descriptors of pid.
func procFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// resetPeak restarts VmHWM of pid at its current RSS.
func resetPeak(pid int) {
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

// soakReply is the fake harness's reply to prompt (defaultReply in
// harnesstest/fakeclaude): "MOCK-REPLY: " and its first 40 runes.
func soakReply(prompt string) string {
	r := []rune(prompt)
	if len(r) > 40 {
		r = r[:40]
	}
	return "MOCK-REPLY: " + string(r)
}

func isTransport(err error) bool {
	var re *rpc.Error
	return errors.Is(err, rpc.ErrRPCUnavailable) || errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re)
}

// storeCounts opens the (stopped) daemon's store, runs the bbolt
// consistency check and counts what it holds.
type storeCounts struct {
	sessions, rows, retainedRows, results, events int
	records                                       map[string]sessionRecord // by public id
	results_                                      map[string][]rpc.Result  // by public id
	evs                                           []store.Event
}

func checkStore(t testing.TB, path string) storeCounts {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("bbolt consistency check: %v", err)
	}
	sc := storeCounts{records: map[string]sessionRecord{}, results_: map[string][]rpc.Result{}}
	recs, err := db.ListSessions()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		var rec sessionRecord
		if err := json.Unmarshal(r.Data, &rec); err != nil {
			t.Fatal(err)
		}
		sc.sessions++
		sc.records[rec.ID] = rec
		rl, err := db.Rows(rec.UID)
		if err != nil {
			t.Fatal(err)
		}
		if c := rl.Committed(); c > 0 {
			sc.rows += int(c)
			sc.retainedRows += int(c - rl.First() + 1)
		}
		rs, err := db.ListResults(rec.UID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range rs {
			var res rpc.Result
			if err := json.Unmarshal(x.Data, &res); err != nil {
				t.Fatal(err)
			}
			if res.ExecutionSeq != x.Seq {
				t.Errorf("%s: result stored under %d says execution %d", rec.ID, x.Seq, res.ExecutionSeq)
			}
			sc.results_[rec.ID] = append(sc.results_[rec.ID], res)
		}
		sc.results += len(rs)
	}
	if sc.evs, err = db.ReadEvents(0, 0, ""); err != nil {
		t.Fatal(err)
	}
	sc.events = len(sc.evs)
	for i := 1; i < len(sc.evs); i++ {
		if sc.evs[i].Seq <= sc.evs[i-1].Seq {
			t.Errorf("stored event seqs not strictly increasing at %d: %d then %d", i, sc.evs[i-1].Seq, sc.evs[i].Seq)
		}
	}
	return sc
}

// ---- 1. soak and load ----

type soakLoadConfig struct {
	sessions, fetchers, followers int
	duration                      time.Duration
	prompt                        string        // directives added to every prompt
	pending                       int           // the daemon's per-connection pending budget (0: default)
	writeTimeout                  time.Duration // the daemon's socket write timeout (0: default)
}

// follower is one event.subscribe client; slow ones read a line every
// slowEvery.
type follower struct {
	subscriber
	slow  time.Duration
	drain atomic.Bool // a slow follower reads at full speed from now on
}

func (f *follower) run(ctx context.Context, socket string, started chan<- error) {
	if f.slow > 0 {
		f.runSlow(ctx, socket, started)
		return
	}
	f.subscriber.run(ctx, socket, started)
}

// runSlow subscribes on a raw connection and then reads 64 bytes every
// f.slow (no client-side buffering hides the backlog from the daemon).
func (f *follower) runSlow(ctx context.Context, socket string, started chan<- error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		started <- err
		return
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	_, err = nc.Write([]byte(`{"id":"slow","method":"event.subscribe","params":{"after":0}}` + "\n"))
	started <- err
	buf := make([]byte, 64)
	for {
		if !f.drain.Load() {
			select {
			case <-time.After(f.slow):
			case <-ctx.Done():
				return
			}
		}
		n, err := nc.Read(buf)
		f.mu.Lock()
		for range bytes.Count(buf[:n], []byte("\n")) {
			f.seqs = append(f.seqs, 0) // lines, ack included
		}
		if err != nil && ctx.Err() == nil {
			f.err, f.endAt = err, time.Now()
		}
		f.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// dropReason is the daemon's log line about a dropped connection.
func dropReason(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "dropping connection") {
			return l
		}
	}
	return "no drop logged"
}

func (f *follower) state() (n int, last uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seqs) > 0 {
		last = f.seqs[len(f.seqs)-1]
	}
	return len(f.seqs), last, f.err
}

// runSoakLoad runs cfg.sessions Sessions turning continuously for
// cfg.duration (each turn streams output per cfg.prompt), cfg.fetchers
// long-poll fetchers spread over them (until:any, screen:false), and
// cfg.followers event.subscribe followers, the first deliberately slow.
// It asserts that no result and no event a connected follower should
// have seen is lost, and logs the figures.
func runSoakLoad(t *testing.T, cfg soakLoadConfig) {
	childEnv := []string{"DLGT_SOAK_MAX_CONNS=4096"}
	if cfg.pending > 0 {
		childEnv = append(childEnv, "DLGT_SOAK_PENDING="+strconv.Itoa(cfg.pending))
	}
	if cfg.writeTimeout > 0 {
		childEnv = append(childEnv, "DLGT_SOAK_WRITE_TIMEOUT_MS="+strconv.Itoa(int(cfg.writeTimeout.Milliseconds())))
	}
	sd := newSoakDaemon(t, childEnv...)
	sd.start()
	pid := sd.pid()
	db0 := fileSize(sd.paths.DB)
	resetPeak(pid)
	cpu0, t0 := procCPU(pid), time.Now()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Followers, from the first event.
	fols := make([]*follower, cfg.followers)
	var folWG sync.WaitGroup
	for i := range fols {
		fols[i] = &follower{}
		if i == 0 {
			fols[i].slow = 500 * time.Millisecond
		}
		started := make(chan error, 1)
		folWG.Add(1)
		go func() {
			defer folWG.Done()
			fols[i].run(ctx, sd.paths.Socket, started)
		}()
		if err := <-started; err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}

	// Sessions: each worker creates its Session, then turns until the
	// soak ends, waiting for every result with until:"result".
	type worker struct {
		id       string
		accepted uint64 // executions accepted (receipts)
		results  uint64 // completed results received
		err      error
	}
	workers := make([]*worker, cfg.sessions)
	ids := make([]chan string, cfg.sessions)
	stopTurns := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{}
		workers[i] = w
		ids[i] = make(chan string, 1)
		cwd := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ids[i])
			c, err := rpc.Dial(ctx, sd.paths.Socket)
			if err != nil {
				w.err = err
				return
			}
			defer c.Close()
			prompt := fmt.Sprintf("soak %d turn %d %s", i, 1, cfg.prompt)
			var rc rpc.Receipt
			if w.err = c.Call(ctx, rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: fmt.Sprintf("soak %d", i), Harness: "claude",
				Cwd: cwd, Prompt: prompt, RequestID: fmt.Sprintf("soak-%d-1", i), Environment: sd.env}, &rc); w.err != nil {
				return
			}
			w.id = rc.Session.ID
			ids[i] <- w.id
			for k := uint64(1); ; k++ {
				if rc.ExecutionSeq != k {
					w.err = fmt.Errorf("turn %d accepted as execution %d", k, rc.ExecutionSeq)
					return
				}
				w.accepted++
				cursor := rc.Cursor
				for got := false; !got; {
					var doc rpc.FetchDocument
					if w.err = c.Call(ctx, rpc.MethodSessionFetch, map[string]any{"session": w.id, "cursor": cursor, "until": "result", "wait_ms": 30000, "screen": false}, &doc); w.err != nil {
						return
					}
					for _, r := range doc.Sessions[0].Results {
						if r.ExecutionSeq != k {
							w.err = fmt.Errorf("fetch bound to execution %d returned %d", k, r.ExecutionSeq)
							return
						}
						if r.FinalTextComplete != nil && !*r.FinalTextComplete {
							continue
						}
						if r.Status != rpc.StatusCompleted || fetchdoc.DerefText(&r) != soakReply(prompt) {
							w.err = fmt.Errorf("execution %d: %s %q", k, r.Status, fetchdoc.DerefText(&r))
							return
						}
						w.results++
						got = true
					}
					cursor = doc.Cursor
				}
				select {
				case <-stopTurns:
					return
				default:
				}
				prompt = fmt.Sprintf("soak %d turn %d %s", i, k+1, cfg.prompt)
				if w.err = c.Call(ctx, rpc.MethodSessionSend, rpc.SessionSendParams{Session: w.id, Prompt: prompt,
					RequestID: fmt.Sprintf("soak-%d-%d", i, k+1)}, &rc); w.err != nil {
					return
				}
			}
		}()
	}
	sessIDs := make([]string, cfg.sessions)
	for i := range ids {
		id, ok := <-ids[i]
		if !ok {
			wg.Wait()
			t.Fatalf("session %d: %v", i, workers[i].err)
		}
		sessIDs[i] = id
	}

	// Fetchers: long polls (until:any, screen:false) spread over the
	// Sessions, each on its own connection. A wake-up is a response
	// carrying a result completed after the request was sent; its
	// latency runs from the result's completed_at_ms to the response.
	type fetcher struct {
		results   []uint64 // execution seqs received, in order
		first     uint64   // latest execution of the baseline
		latencies []time.Duration
		expired   int
		polls     int
		err       error
	}
	fetchers := make([]*fetcher, cfg.fetchers)
	finals := make([]atomic.Uint64, cfg.sessions) // set when a worker stopped
	var fwg sync.WaitGroup
	for f := range fetchers {
		fe := &fetcher{}
		fetchers[f] = fe
		si := f % cfg.sessions
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			c, err := rpc.Dial(ctx, sd.paths.Socket)
			if err != nil {
				fe.err = err
				return
			}
			defer c.Close()
			var cursor any
			for {
				if fin := finals[si].Load(); fin > 0 && len(fe.results) > 0 && fe.results[len(fe.results)-1] >= fin {
					return
				}
				sent := time.Now()
				params := map[string]any{"session": sessIDs[si], "wait_ms": 20000, "screen": false}
				if cursor != nil {
					params["cursor"] = cursor
				}
				var doc rpc.FetchDocument
				err := c.Call(ctx, rpc.MethodSessionFetch, params, &doc)
				recv := time.Now()
				fe.polls++
				if errors.Is(err, rpc.ErrCursorExpired) {
					fe.expired++
					cursor = nil
					continue
				}
				if err != nil {
					fe.err = err
					return
				}
				if doc.Reason == rpc.ReasonGap {
					fe.err = fmt.Errorf("gap: %+v %+v", doc.Gaps, doc.Sessions[0].Gaps)
					return
				}
				for _, r := range doc.Sessions[0].Results {
					if cursor == nil { // a baseline
						fe.first = r.ExecutionSeq
						continue
					}
					if r.FinalTextComplete != nil && !*r.FinalTextComplete {
						continue
					}
					fe.results = append(fe.results, r.ExecutionSeq)
					if done := time.UnixMilli(r.CompletedAtMS); done.After(sent) {
						fe.latencies = append(fe.latencies, recv.Sub(done))
					}
				}
				cursor = doc.Cursor
			}
		}()
	}

	// Turn for cfg.duration, and on until the daemon dropped the slow
	// follower (its log says why). The follower then reads what the
	// kernel still buffers for it at full speed, up to the end of stream.
	time.Sleep(cfg.duration)
	for guard := time.Now().Add(2 * lifecycleGuard); time.Now().Before(guard); {
		if strings.Contains(sd.log(), "dropping connection") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fols[0].drain.Store(true)
	close(stopTurns)
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1 := procCPU(pid)
	rss, hwm := procMem(pid)
	fds := procFDs(pid)
	dbSize := fileSize(sd.paths.DB)
	for i, w := range workers {
		finals[i].Store(w.accepted)
	}
	fwait := make(chan struct{})
	go func() { fwg.Wait(); close(fwait) }()
	select {
	case <-fwait:
	case <-time.After(2 * lifecycleGuard):
		t.Fatal("fetchers did not see their Sessions' final results")
	}

	var turns, accepted uint64
	for i, w := range workers {
		turns += w.results
		accepted += w.accepted
		if w.err != nil {
			t.Errorf("session %d (%s): %v", i, w.id, w.err)
		}
	}
	resultsLost := accepted - turns

	// Fetchers saw every result after their baseline, once, in order.
	var lats []time.Duration
	fetchLost, expired, polls := 0, 0, 0
	for f, fe := range fetchers {
		if fe.err != nil {
			t.Errorf("fetcher %d: %v", f, fe.err)
		}
		lats = append(lats, fe.latencies...)
		expired += fe.expired
		polls += fe.polls
		want := fe.first + 1
		for _, s := range fe.results {
			if s != want {
				t.Errorf("fetcher %d: result %d, want %d", f, s, want)
				break
			}
			want++
		}
		if fin := workers[f%cfg.sessions].accepted; want <= fin {
			fetchLost += int(fin - want + 1)
		}
	}

	// The complete log; connected followers have all of it, in order.
	all, err := sd.allEvents()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("event log not strictly increasing at %d", i)
		}
	}
	last := all[len(all)-1].Seq
	deadline := time.Now().Add(lifecycleGuard)
	for time.Now().Before(deadline) {
		if _, _, err := fols[0].state(); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, f := range fols[1:] {
		for {
			_, l, err := f.state()
			if l >= last || err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	folWG.Wait()
	eventsLost, dropped := 0, 0
	for i, f := range fols {
		n, _, err := f.state()
		if i == 0 {
			if err == nil {
				t.Errorf("the slow follower was not disconnected (%d of %d events read)", n, len(all))
			} else {
				t.Logf("slow follower (64 bytes read per %v) dropped by the daemon (%s); it read %d lines of %d events, then %v", f.slow, dropReason(sd.log()), n, len(all), err)
			}
			continue
		}
		if err != nil {
			dropped++
			t.Errorf("follower %d disconnected after %d events: %v", i, n, err)
			continue
		}
		// A follower subscribed from the start sees every seq in order;
		// the ones retention has since dropped from the log (a run past
		// store.EventRetention events) can be checked for order only.
		j, prev := 0, uint64(0)
		for _, s := range f.seqs {
			if s != prev+1 {
				t.Errorf("follower %d: seq %d after %d", i, s, prev)
				break
			}
			prev = s
			if len(all) > 0 && s < all[0].Seq {
				continue
			}
			if j < len(all) && s == all[j].Seq {
				j++
				continue
			}
			t.Errorf("follower %d: event %d is seq %d, want %d", i, j, s, all[min(j, len(all)-1)].Seq)
			break
		}
		eventsLost += len(all) - j
	}

	sd.stop()
	sc := checkStore(t, sd.paths.DB)
	cpu := cpu1 - cpu0
	t.Logf("soak: %d sessions, %d fetchers, %d followers (1 slow), %v of turns (%v wall incl. start-up)", cfg.sessions, cfg.fetchers, cfg.followers, cfg.duration, elapsed.Round(time.Millisecond))
	t.Logf("soak: turns completed %d (%.1f/s), results lost %d, fetcher results missed %d, events lost by connected followers %d (%d events, %d connected followers dropped)",
		turns, float64(turns)/elapsed.Seconds(), resultsLost, fetchLost, eventsLost, len(all), dropped)
	t.Logf("soak: fetch wake-ups %d over %d polls, p50 %v p99 %v max %v (completed_at_ms to response; 1 ms resolution); %d CURSOR_EXPIRED re-baselines",
		len(lats), polls, percentile(lats, 0.5), percentile(lats, 0.99), percentile(lats, 1), expired)
	t.Logf("soak: daemon pid %d CPU %v over %v = %.0f%% of one core (%.2f ms/turn); RSS %d KiB now, peak %d KiB; %d fds",
		pid, cpu.Round(time.Millisecond), elapsed.Round(time.Millisecond), 100*cpu.Seconds()/elapsed.Seconds(), float64(cpu.Milliseconds())/float64(max(turns, 1)), rss, hwm, fds)
	t.Logf("soak: bbolt %d -> %d bytes; %d rows committed (%d retained), %d results, %d events, %d sessions; %.0f bytes of file per 1,000 rows committed",
		db0, dbSize, sc.rows, sc.retainedRows, sc.results, sc.events, sc.sessions, float64(dbSize-db0)/float64(max(sc.rows, 1))*1000)
	if resultsLost != 0 || eventsLost != 0 || fetchLost != 0 {
		t.Errorf("results lost %d, fetcher results missed %d, events lost %d: want 0", resultsLost, fetchLost, eventsLost)
	}
}

// TestSoakLoadShort is the CI form of the soak: 8 Sessions streaming
// output for 12 s, 24 fetchers, 4 followers (one slow, dropped by a
// 16 KiB pending budget and a 1 s write timeout). The several-minute form is TestSoakLoadLong.
func TestSoakLoadShort(t *testing.T) {
	runSoakLoad(t, soakLoadConfig{sessions: 8, fetchers: 24, followers: 4, duration: 12 * time.Second,
		prompt: "[[flood 40]] [[slow 150]]", pending: 16 << 10, writeTimeout: time.Second})
}

// ---- 2. kill -9 loop ----

// klReceipt is one acknowledged acceptance: what was sent and what came
// back.
type klReceipt struct {
	method string
	params any
	reqID  string
	id     string
	seq    uint64
}

// runKillLoop SIGKILLs the daemon kills times at random moments while
// nSess Sessions turn (every send carries resume:true, so a retry of the
// same request_id after a restart is the identical payload). After each
// kill it kills the orphaned harness groups, restarts the daemon, replays
// every receipt the clients got (replayed:true, same Session and
// execution_seq) and checks every event a follower received is still in
// the log, identical, with strictly increasing seqs. At the end it stops
// the daemon, runs the bbolt check on the file and checks every
// acknowledged result is stored once, unchanged.
func runKillLoop(t *testing.T, nSess, kills int, prompt string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("kill loop: seed %d", seed)
	sd := newSoakDaemon(t, "DLGT_SOAK_MAX_CONNS=1024")
	sd.start()

	var (
		mu       sync.Mutex
		receipts []klReceipt
		results  = map[string]rpc.Result{} // acknowledged, by id#seq
		acked    = map[uint64]rpc.Event{}  // events a follower received
		lastAck  uint64
		gen      = make(chan struct{}) // closed when the daemon is back up
	)
	waitUp := func(old chan struct{}) {
		// Block until a daemon newer than the one that failed us runs.
		for {
			mu.Lock()
			g := gen
			mu.Unlock()
			if g != old {
				<-g
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(gen)
	current := func() chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		return gen
	}

	// A follower per daemon lifetime, from the last event received.
	var folWG sync.WaitGroup
	follow := func() {
		mu.Lock()
		after := lastAck
		mu.Unlock()
		c, err := rpc.Dial(context.Background(), sd.paths.Socket)
		if err != nil {
			t.Errorf("follower dial: %v", err)
			return
		}
		_, next, err := c.Subscribe(context.Background(), rpc.MethodEventSubscribe, rpc.EventReadParams{After: &after})
		if err != nil {
			c.Close()
			t.Errorf("subscribe: %v", err)
			return
		}
		folWG.Add(1)
		go func() {
			defer folWG.Done()
			defer c.Close()
			for {
				line, err := next()
				if err != nil {
					return // the daemon died or stopped
				}
				var ev rpc.Event
				if err := json.Unmarshal(line, &ev); err != nil {
					t.Errorf("follower: %q: %v", line, err)
					return
				}
				mu.Lock()
				if ev.Seq <= lastAck {
					t.Errorf("follower: seq %d after %d", ev.Seq, lastAck)
				}
				acked[ev.Seq], lastAck = ev, ev.Seq
				mu.Unlock()
			}
		}()
	}
	follow()

	// Sessions, created before the kills start.
	ids := make([]string, nSess)
	for i := range ids {
		p := rpc.SessionCreateParams{Title: fmt.Sprintf("kl %d", i), Harness: "claude", Cwd: t.TempDir(),
			Prompt: fmt.Sprintf("kl %d turn 1 %s", i, prompt), RequestID: fmt.Sprintf("kl-%d-1", i), Environment: sd.env}
		var r rpc.Receipt
		if err := sd.call(rpc.MethodSessionCreate, p, &r); err != nil {
			t.Fatal(err)
		}
		ids[i] = r.Session.ID
		receipts = append(receipts, klReceipt{rpc.MethodSessionCreate, p, p.RequestID, r.Session.ID, r.ExecutionSeq})
	}

	// Workers: wait for the turn's result, then send the next; a call
	// that fails in transport is retried, identical, on the next daemon.
	var stopping atomic.Bool
	var retried, replayedOnRetry, interrupted, completed atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, nSess)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := ids[i]
			seq, cursor, k := uint64(1), "", 1
			turnPrompt := fmt.Sprintf("kl %d turn 1 %s", i, prompt)
			for {
				// Wait for execution seq's result.
				for got := false; !got; {
					g := current()
					params := map[string]any{"session": id, "until": "result", "wait_ms": 10000, "screen": false}
					if cursor != "" {
						params["cursor"] = cursor
					}
					var doc rpc.FetchDocument
					err := sd.call(rpc.MethodSessionFetch, params, &doc)
					if err != nil && isTransport(err) {
						waitUp(g)
						cursor = "" // positions do not survive a restart
						continue
					}
					if err != nil {
						errs[i] = fmt.Errorf("fetch: %w", err)
						return
					}
					for _, r := range doc.Sessions[0].Results {
						if r.ExecutionSeq < seq && cursor == "" {
							continue // a baseline bound before our execution existed
						}
						if r.ExecutionSeq != seq {
							errs[i] = fmt.Errorf("waiting for execution %d got %d", seq, r.ExecutionSeq)
							return
						}
						if r.FinalTextComplete != nil && !*r.FinalTextComplete {
							continue
						}
						switch {
						case r.Status == rpc.StatusCompleted && fetchdoc.DerefText(&r) == soakReply(turnPrompt):
							completed.Add(1)
						case r.Status == rpc.StatusInterrupted && r.Error != nil && r.Error.Code == "daemon_restarted":
							interrupted.Add(1)
						default:
							errs[i] = fmt.Errorf("execution %d: %s %q %+v", seq, r.Status, fetchdoc.DerefText(&r), r.Error)
							return
						}
						mu.Lock()
						results[fmt.Sprintf("%s#%d", id, seq)] = r
						mu.Unlock()
						got = true
					}
					cursor = doc.Cursor
				}
				if stopping.Load() {
					return
				}
				k++
				turnPrompt = fmt.Sprintf("kl %d turn %d %s", i, k, prompt)
				p := rpc.SessionSendParams{Session: id, Prompt: turnPrompt, RequestID: fmt.Sprintf("kl-%d-%d", i, k), Resume: true, Environment: sd.env}
				var r rpc.Receipt
				for {
					g := current()
					err := sd.call(rpc.MethodSessionSend, p, &r)
					if err == nil {
						break
					}
					if !isTransport(err) {
						errs[i] = fmt.Errorf("send %s: %w", p.RequestID, err)
						return
					}
					retried.Add(1)
					waitUp(g)
				}
				if r.Replayed {
					replayedOnRetry.Add(1)
				}
				if r.Session.ID != id || r.ExecutionSeq <= seq {
					errs[i] = fmt.Errorf("send %s: receipt %+v after execution %d", p.RequestID, r, seq)
					return
				}
				seq, cursor = r.ExecutionSeq, r.Cursor
				if r.Replayed {
					cursor = ""
				}
				mu.Lock()
				receipts = append(receipts, klReceipt{rpc.MethodSessionSend, p, p.RequestID, id, r.ExecutionSeq})
				mu.Unlock()
			}
		}()
	}

	// verify replays every receipt and checks the event log.
	verify := func(when string) {
		mu.Lock()
		rs := slices.Clone(receipts)
		mu.Unlock()
		if len(rs) > store.ReceiptRetention {
			rs = rs[len(rs)-store.ReceiptRetention:]
		}
		for _, rc := range rs {
			var r rpc.Receipt
			if err := sd.call(rc.method, rc.params, &r); err != nil {
				t.Fatalf("%s: replaying %s: %v", when, rc.reqID, err)
			}
			if !r.Replayed || r.Session.ID != rc.id || r.ExecutionSeq != rc.seq {
				t.Fatalf("%s: replay of %s = %+v, want replayed %s execution %d", when, rc.reqID, r, rc.id, rc.seq)
			}
		}
		all, err := sd.allEvents()
		if err != nil {
			t.Fatalf("%s: event.read: %v", when, err)
		}
		byseq := map[uint64]rpc.Event{}
		for i, e := range all {
			if i > 0 && e.Seq <= all[i-1].Seq {
				t.Fatalf("%s: event seqs %d then %d", when, all[i-1].Seq, e.Seq)
			}
			byseq[e.Seq] = e
		}
		mu.Lock()
		defer mu.Unlock()
		for s, e := range acked {
			if byseq[s] != e {
				t.Fatalf("%s: acknowledged event %+v is now %+v", when, e, byseq[s])
			}
		}
	}

	start := time.Now()
	orphans := 0
	for n := 1; n <= kills; n++ {
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		mu.Lock()
		gen = make(chan struct{}) // callers failing from now on wait for it
		mu.Unlock()
		sd.kill9()
		orphans += killMarked(t, sd.mark)
		sd.start()
		verify(fmt.Sprintf("after kill %d", n))
		follow()
		mu.Lock()
		close(gen)
		mu.Unlock()
	}
	stopping.Store(true)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("session %d (%s): %v", i, ids[i], err)
		}
	}
	verify("at the end")
	loopTime := time.Since(start)
	sd.stop()
	folWG.Wait()

	// The file: consistent, every acknowledged result stored once and
	// unchanged, no execution without a receipt (a retried acceptance
	// that ran twice would leave one).
	sc := checkStore(t, sd.paths.DB)
	lost, changed := 0, 0
	for key, want := range results {
		id, s, _ := strings.Cut(key, "#")
		seq, _ := strconv.ParseUint(s, 10, 64)
		var got *rpc.Result
		n := 0
		for _, r := range sc.results_[id] {
			if r.ExecutionSeq == seq {
				got = &r
				n++
			}
		}
		switch {
		case n == 0:
			lost++
			t.Errorf("acknowledged result %s is not stored", key)
		case n > 1 || got.Status != want.Status || fetchdoc.DerefText(got) != fetchdoc.DerefText(&want) || got.CompletedAtMS != want.CompletedAtMS:
			changed++
			t.Errorf("acknowledged result %s: stored %d times, now %+v, was %+v", key, n, *got, want)
		}
	}
	bySess := map[string]map[uint64]bool{}
	for _, rc := range receipts {
		if bySess[rc.id] == nil {
			bySess[rc.id] = map[uint64]bool{}
		}
		if bySess[rc.id][rc.seq] {
			t.Errorf("execution %s#%d acknowledged to two request ids", rc.id, rc.seq)
		}
		bySess[rc.id][rc.seq] = true
	}
	unreceipted := 0
	for _, id := range ids {
		rec := sc.records[id]
		for s := uint64(1); s <= rec.LastExecSeq; s++ {
			if !bySess[id][s] {
				unreceipted++
				var st string
				for _, r := range sc.results_[id] {
					if r.ExecutionSeq == s {
						st = fmt.Sprintf("%s %+v", r.Status, r.Error)
					}
				}
				t.Errorf("%s: execution %d has no receipt (%s): an acceptance ran without a receipt a retry could replay", id, s, st)
			}
		}
	}
	if sc.sessions != nSess {
		t.Errorf("store holds %d sessions, want %d", sc.sessions, nSess)
	}
	t.Logf("kill loop: %d kills in %v, %d sessions; %d receipts replayed after every restart; %d results acknowledged (%d completed, %d interrupted by a kill), lost %d, changed or duplicated %d",
		kills, loopTime.Round(time.Millisecond), nSess, len(receipts), len(results), completed.Load(), interrupted.Load(), lost, changed)
	t.Logf("kill loop: %d acknowledged events all intact; %d sends retried after a kill (%d came back replayed:true); %d executions without a receipt; %d orphaned harness groups killed; bbolt check ok, %d events, %d bytes",
		len(acked), retried.Load(), replayedOnRetry.Load(), unreceipted, orphans, sc.events, fileSize(sd.paths.DB))
}

// TestSoakKillLoopShort: 20 kill -9s of the daemon at random moments
// while 4 Sessions turn.
func TestSoakKillLoopShort(t *testing.T) {
	runKillLoop(t, 4, 20, "[[flood 30]] [[slow 300]]", uint64(time.Now().UnixNano()))
}
