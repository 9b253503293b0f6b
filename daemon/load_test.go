package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/procmem"
	"github.com/dlgt-dev/dlgt/rpc"
)

// startWithLimits restarts td's daemon with transport limits.
func (td *testDaemon) startWithLimits(limits rpc.Limits) {
	td.t.Helper()
	td.stop()
	exe, _ := os.Executable()
	ctx, cancel := context.WithCancel(context.Background())
	td.cancel = cancel
	td.done = make(chan error, 1)
	ready := make(chan struct{})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() {
		td.done <- Run(ctx, Config{Paths: td.paths, Logger: log, Limits: limits, Ready: func() { close(ready) },
			Options: Options{HookCommand: []string{"env", "DLGT_TEST_ROLE=hook", exe}, StopGrace: 2 * time.Second}})
	}()
	select {
	case <-ready:
	case err := <-td.done:
		td.t.Fatalf("daemon failed to start: %v", err)
	case <-time.After(20 * time.Second):
		td.t.Fatal("daemon did not start")
	}
}

// usage is the CPU time of this process (the in-process daemon plus the
// test's own clients) and of its reaped children (fake harnesses, and the
// hook forwarders they ran).
type usage struct{ self, children time.Duration }

func readUsage() usage {
	var s, c syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	tv := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return usage{tv(s), tv(c)}
}

// peakRSS reads VmHWM (KiB) of this process.
func peakRSS() int64 {
	_, hwm, _ := procmem.Of(os.Getpid())
	return hwm
}

// subscriber follows event.subscribe from the beginning.
type subscriber struct {
	mu    sync.Mutex
	seqs  []uint64
	err   error     // why the stream ended early, if it did
	endAt time.Time // when it did
}

func (sb *subscriber) last() (uint64, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.seqs) == 0 {
		return 0, sb.err
	}
	return sb.seqs[len(sb.seqs)-1], sb.err
}

func (sb *subscriber) run(ctx context.Context, socket string, started chan<- error) {
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		started <- err
		return
	}
	defer c.Close()
	zero := uint64(0)
	_, next, err := c.Subscribe(ctx, rpc.MethodEventSubscribe, rpc.EventReadParams{After: &zero})
	started <- err
	if err != nil {
		return
	}
	for {
		line, err := next()
		if err != nil {
			if ctx.Err() == nil {
				sb.mu.Lock()
				sb.err, sb.endAt = err, time.Now()
				sb.mu.Unlock()
			}
			return
		}
		var ev rpc.Event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Seq == 0 {
			sb.mu.Lock()
			sb.err = fmt.Errorf("undecodable stream line %q: %v", line, err)
			sb.mu.Unlock()
			return
		}
		sb.mu.Lock()
		sb.seqs = append(sb.seqs, ev.Seq)
		sb.mu.Unlock()
	}
}

// waitResultErr is waitResult for worker goroutines: it long-polls from
// cursor until execution seq's result and checks nothing else arrives.
func (td *testDaemon) waitResultErr(id, cursor string, seq uint64) (rpc.Result, error) {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var doc rpc.FetchDocument
		if err := td.call(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": 10000}, &doc); err != nil {
			return rpc.Result{}, err
		}
		for _, r := range doc.Sessions[0].Results {
			if r.ExecutionSeq != seq {
				return r, fmt.Errorf("fetch bound to execution %d returned execution %d", seq, r.ExecutionSeq)
			}
			if r.FinalTextComplete == nil || *r.FinalTextComplete {
				return r, nil
			}
		}
		cursor = doc.Cursor
	}
	return rpc.Result{}, fmt.Errorf("no result for execution %d", seq)
}

// TestLoadConcurrentSessions runs many Sessions on the fake harness at
// once, each through several turns (send, then fetch until:result), with
// event.subscribe followers. Every execution must get exactly one result
// and every follower every event in order. The default size (16 Sessions
// x 10 turns) keeps the package's -race run short on two cores;
// DLGT_LOAD_FULL=1 runs 32 Sessions x 20 turns (about 40 s under -race on
// two cores). CPU and peak RSS are logged (run with -v).
func TestLoadConcurrentSessions(t *testing.T) {
	nSess, nTurns := 16, 10
	if os.Getenv("DLGT_LOAD_FULL") == "1" {
		nSess, nTurns = 32, 20
	}
	const nSubs = 4
	td := startTestDaemon(t)
	// The default 16-connection cap would refuse the clients (and the
	// hook forwarders) of this many concurrent Sessions.
	td.startWithLimits(rpc.Limits{MaxConnections: 1024})
	env := envWith(td.env, "FAKECLAUDE_IDLE_MS", "600000")

	// Peak RSS from here on (writing 5 to clear_refs resets VmHWM).
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	u0 := readUsage()
	begin := time.Now()

	subCtx, stopSubs := context.WithCancel(context.Background())
	defer stopSubs()
	subs := make([]*subscriber, nSubs)
	var subWG sync.WaitGroup
	for i := range subs {
		subs[i] = &subscriber{}
		started := make(chan error, 1)
		subWG.Add(1)
		go func() {
			defer subWG.Done()
			subs[i].run(subCtx, td.paths.Socket, started)
		}()
		if err := <-started; err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}

	type outcome struct {
		id      string
		results int
		err     error
	}
	outcomes := make([]outcome, nSess)
	cwds := make([]string, nSess)
	for i := range cwds {
		cwds[i] = t.TempDir()
	}
	var wg sync.WaitGroup
	for i := range nSess {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outcomes[i]
			check := func(r rpc.Result, prompt string) error {
				if r.Status != rpc.StatusCompleted || r.FinalText == nil || *r.FinalText != "MOCK-REPLY: "+prompt {
					return fmt.Errorf("execution %d: status %s text %q", r.ExecutionSeq, r.Status, fetchdoc.DerefText(&r))
				}
				o.results++
				return nil
			}
			prompt := fmt.Sprintf("load %d turn 1", i)
			var rc rpc.Receipt
			if o.err = td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: fmt.Sprintf("load %d", i), Harness: "claude", Cwd: cwds[i], Prompt: prompt,
				RequestID: fmt.Sprintf("load-%d-1", i), Environment: env,
			}, &rc); o.err != nil {
				return
			}
			o.id = rc.Session.ID
			res, err := td.waitResultErr(o.id, rc.Cursor, 1)
			if o.err = err; err != nil {
				return
			}
			if o.err = check(res, prompt); o.err != nil {
				return
			}
			for k := 2; k <= nTurns; k++ {
				prompt := fmt.Sprintf("load %d turn %d", i, k)
				var rs rpc.Receipt
				if o.err = td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: o.id, Prompt: prompt, RequestID: fmt.Sprintf("load-%d-%d", i, k)}, &rs); o.err != nil {
					return
				}
				if rs.ExecutionSeq != uint64(k) {
					o.err = fmt.Errorf("send %d got execution %d", k, rs.ExecutionSeq)
					return
				}
				res, err := td.waitResultErr(o.id, rs.Cursor, uint64(k))
				if o.err = err; err != nil {
					return
				}
				if o.err = check(res, prompt); o.err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	u1 := readUsage()
	rss := peakRSS()

	lost := 0
	for i, o := range outcomes {
		lost += nTurns - o.results
		if o.err != nil {
			t.Errorf("session %d (%s): %v", i, o.id, o.err)
		}
	}

	// Every execution has exactly one busy and one completed idle event.
	for i, o := range outcomes {
		if o.id == "" {
			continue
		}
		busy, idle := map[uint64]int{}, map[uint64]int{}
		for _, e := range td.events(t, o.id) {
			switch e.Type {
			case rpc.EventSessionBusy:
				busy[e.ExecutionSeq]++
			case rpc.EventSessionIdle:
				if e.ResultStatus != rpc.StatusCompleted {
					t.Errorf("session %d: %+v", i, e)
				}
				idle[e.ExecutionSeq]++
			case rpc.EventSessionFailed, rpc.EventSessionCanceling:
				t.Errorf("session %d: unexpected %+v", i, e)
			}
		}
		for k := uint64(1); k <= uint64(nTurns); k++ {
			if busy[k] != 1 || idle[k] != 1 {
				t.Errorf("session %d execution %d: %d busy, %d idle events", i, k, busy[k], idle[k])
			}
		}
		if len(busy) != nTurns || len(idle) != nTurns {
			t.Errorf("session %d: executions %d busy / %d idle, want %d", i, len(busy), len(idle), nTurns)
		}
		if rd := td.read(t, o.id); rd.Result == nil || rd.Result.ExecutionSeq != uint64(nTurns) || rd.Session.State != rpc.StateIdle {
			t.Errorf("session %d read = %+v", i, rd)
		}
	}

	// The complete event log, read back in pages.
	var all []uint64
	for after := uint64(0); ; {
		var evs []rpc.Event
		td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{After: &after}, &evs)
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			all = append(all, e.Seq)
		}
		after = evs[len(evs)-1].Seq
	}
	want := all[len(all)-1]
	deadline := time.Now().Add(60 * time.Second)
	for _, sb := range subs {
		for {
			last, err := sb.last()
			if last >= want || err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("subscriber stuck at seq %d of %d", last, want)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stopSubs()
	subWG.Wait()
	eventsLost := 0
	for i, sb := range subs {
		sb.mu.Lock()
		seqs, err := sb.seqs, sb.err
		sb.mu.Unlock()
		if err != nil {
			// A follower may be disconnected, but only with a reason.
			t.Logf("subscriber %d disconnected after %d events: %v", i, len(seqs), err)
			if err.Error() == "" {
				t.Errorf("subscriber %d disconnected without a reason", i)
			}
			continue
		}
		// Every event, in seq order, none twice.
		j := 0
		for _, s := range seqs {
			if s > want {
				continue // later events (none expected before stop)
			}
			if j >= len(all) || s != all[j] {
				t.Errorf("subscriber %d: event %d is seq %d, want %d", i, j, s, all[min(j, len(all)-1)])
				break
			}
			j++
		}
		eventsLost += len(all) - j
	}

	td.stop() // stops and reaps every harness
	u2 := readUsage()
	turns := nSess * nTurns
	t.Logf("load: %d sessions x %d turns = %d turns, %d subscribers, %d events in %v (%.1f turns/s)",
		nSess, nTurns, turns, nSubs, len(all), elapsed.Round(time.Millisecond), float64(turns)/elapsed.Seconds())
	t.Logf("load: results lost %d, subscriber events lost %d", lost, eventsLost)
	t.Logf("load: CPU of this process (daemon + test clients) %v = %.1f ms/turn; children (fake harnesses + hook forwarders, reaped at stop) %v; peak RSS %d KiB",
		(u1.self - u0.self).Round(time.Millisecond), float64((u1.self-u0.self).Milliseconds())/float64(turns),
		(u2.children - u0.children).Round(time.Millisecond), rss)
	if lost != 0 || eventsLost != 0 {
		t.Errorf("results lost %d, events lost %d", lost, eventsLost)
	}
}
