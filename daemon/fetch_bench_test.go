package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/vt"
)

// Wake-up latency: from a recorded Stop (harness evidence applied through
// applyEvidence, exactly as internal.hook does) to each long-polling
// session.fetch until:"result" having its response line encoded (as the
// server writes it), with 1, 100 and 1,000 concurrent waiters. The long
// polls are started as the server starts them (rpc.Deferred) and the clock
// starts only once every one is parked. Run with:
//
//	go test -run '^$' -bench 'FetchWake|FetchBaseline' -benchtime 20x ./daemon/
//
// share=false gives every long poll an evaluation of its own
// (fetchShareWakes), for comparison on the same machine state.
func BenchmarkFetchWake(b *testing.B) {
	for _, share := range []bool{true, false} {
		for _, n := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("share=%v/waiters=%d", share, n), func(b *testing.B) {
				defer func(old bool) { fetchShareWakes = old }(fetchShareWakes)
				fetchShareWakes = share
				benchFetchWake(b, n)
			})
		}
	}
}

func benchFetchWake(b *testing.B, n int) {
	rt := newFetchRuntime(b)
	s := addSession(b, rt, "w")
	s.mu.Lock()
	s.gen = &generation{launchID: "internal:bench"}
	s.mu.Unlock()
	var parked atomic.Int64
	hook := func() { parked.Add(1) }
	fetchParkHook.Store(&hook)
	defer fetchParkHook.Store(nil)
	var lat, wake []time.Duration
	text := "done"
	id := json.RawMessage(`1`)
	at := make([]time.Time, n) // when each response line was encoded
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		doc, _ := fetchDoc(b, rt, map[string]any{"session": "claude:w", "screen": false})
		startExec(rt, s)
		var (
			stopped  atomic.Bool
			answered atomic.Int64
			bad      atomic.Pointer[string]
			all      = make(chan struct{})
		)
		parked.Store(0)
		params, _ := json.Marshal(map[string]any{"session": "claude:w", "cursor": doc.Cursor, "until": "result", "wait_ms": 60000, "screen": false})
		for w := 0; w < n; w++ {
			res, err := rt.methodOf[rpc.MethodSessionFetch](context.Background(), rpc.Peer{}, params)
			d, ok := res.(rpc.Deferred)
			if err != nil || !ok {
				b.Fatalf("the long poll did not wait: %v %v", res, err)
			}
			d.Start(func(res any, err error) {
				line := rpc.MarshalResponse(id, res, nil)
				at[w] = time.Now()
				if doc, ok := res.(*rpc.FetchDocument); err != nil || !ok || doc.Reason != rpc.ReasonResult || len(line) == 0 || !stopped.Load() {
					msg := fmt.Sprintf("waiter %d: stopped %v, %v %v", w, stopped.Load(), res, err)
					bad.Store(&msg)
				}
				if answered.Add(1) == int64(n) {
					close(all)
				}
			})
		}
		for parked.Load() < int64(n) {
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(5 * time.Millisecond)
		b.StartTimer()
		stopped.Store(true)
		t0 := time.Now()
		rt.applyEvidence(s, "internal:bench", harness.Evidence{Kind: harness.KindStop, FinalText: &text})
		t1 := time.Now()
		<-all
		b.StopTimer()
		if m := bad.Load(); m != nil {
			b.Fatal(*m)
		}
		for _, t := range at {
			lat = append(lat, t.Sub(t0))
			wake = append(wake, max(0, t.Sub(t1)))
		}
	}
	// stop-*: from the Stop evidence arriving (its result, state and
	// event are persisted first); wake-*: from the Stop being recorded
	// (applyEvidence returned) to the encoded response.
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"stop", lat}, {"wake", wake}} {
		sort.Slice(m.d, func(i, j int) bool { return m.d[i] < m.d[j] })
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds()), m.name+"-p99-µs")
	}
}

// Baseline fetch throughput over the socket against a Session with
// output, on one connection and on 16. A connection is replaced before
// it reaches the server's per-connection rate limit (the limit is not
// what this measures); the redial is inside the timing.
func BenchmarkFetchBaseline(b *testing.B) {
	td := startTestDaemon(b)
	r := td.create(b, "bench-1", "[[flood 400]] [[long 200]] fill")
	td.waitResult(b, r.Session.ID, r.Cursor)
	const perConn = rpc.DefaultRateLimit * 9 / 10
	for _, conns := range []int{1, 16} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			ctx := context.Background()
			dial := func() *rpc.Client {
				c, err := rpc.Dial(ctx, td.paths.Socket)
				if err != nil {
					b.Fatal(err)
				}
				return c
			}
			clients := make([]*rpc.Client, conns)
			for i := range clients {
				clients[i] = dial()
			}
			params := map[string]any{"session": r.Session.ID}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i, c := range clients {
				share := b.N / conns
				if i < b.N%conns {
					share++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { c.Close() }()
					for j := 0; j < share; j++ {
						fresh := false
						if j > 0 && j%perConn == 0 {
							c.Close()
							c, fresh = dial(), true
						}
						var doc rpc.FetchDocument
						err := c.Call(ctx, rpc.MethodSessionFetch, params, &doc)
						// The server may not have released the replaced
						// connection yet (at most 16 at once).
						for try := 0; fresh && errors.Is(err, rpc.ErrRPCUnavailable) && try < 1000; try++ {
							c.Close()
							time.Sleep(time.Millisecond)
							c = dial()
							err = c.Call(ctx, rpc.MethodSessionFetch, params, &doc)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "fetches/s")
		})
	}
}

// Polling cost with nothing new: a session.fetch from the position the
// previous fetch returned, wait_ms 0, when no Session changed since. all=N
// is all:true over N Sessions; one=N is one Session's fetch (with its live
// screen, as a default fetch) on a daemon holding N Sessions. The Sessions
// are built in-process (no harness process: a thousand harnesses would not
// fit on a small machine); the first 64 carry a finished turn with a result
// and stable rows, the rest only their lifecycle events. Reported per poll:
// cpu-µs (user+system CPU of the process over the loop, getrusage, so it
// includes the encoding of the response line as the server writes it) and
// readtx (bbolt read transactions begun). Run with:
//
//	go test -run '^$' -bench FetchIdlePoll -benchtime 2000x ./daemon/
func BenchmarkFetchIdlePoll(b *testing.B) {
	for _, c := range []struct {
		all bool
		n   int
	}{{true, 64}, {true, 256}, {false, 64}, {false, 1000}} {
		name := fmt.Sprintf("one=%d", c.n)
		if c.all {
			name = fmt.Sprintf("all=%d", c.n)
		}
		b.Run(name, func(b *testing.B) { benchIdlePoll(b, c.all, c.n) })
	}
}

// idleSessions registers n idle Sessions cheaply (one write transaction
// each); the first withTurn of them also run one turn with a result and
// a few stable rows.
func idleSessions(b testing.TB, rt *runtime, n, withTurn int) []*session {
	out := make([]*session, n)
	for i := range out {
		fakeSessionN++
		name := fmt.Sprintf("idle%d", fakeSessionN)
		rec := sessionRecord{UID: fmt.Sprintf("uid%06d", fakeSessionN), ID: "claude:" + name, ProviderID: name, Title: "t " + name,
			Harness: "claude", Cwd: "/tmp", State: rpc.StateIdle, CreatedAtMS: int64(fakeSessionN), Epoch: 1, Rows: 24, Cols: 80}
		s, err := rt.newSessionObject(rec)
		if err != nil {
			b.Fatal(err)
		}
		s.screen = vt.New(24, 80, vt.Callbacks{})
		s.screen.Write([]byte("$ idle session " + name + "\r\n> "))
		rt.mu.Lock()
		rt.holdSessionLocked(s)
		rt.byID[rec.ID] = s
		rt.mu.Unlock()
		s.mu.Lock()
		rt.oneTxLocked(s, func() {
			rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionCreated})
			rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionReady})
		})
		s.mu.Unlock()
		if i < withTurn {
			runExec(rt, s, "done "+name, "row one of "+name, "row two of "+name, "row three of "+name)
		}
		out[i] = s
	}
	return out
}

func benchIdlePoll(b *testing.B, all bool, n int) {
	rt := newFetchRuntime(b)
	ss := idleSessions(b, rt, n, min(n, 64))
	base := map[string]any{"all": true}
	if !all {
		base = map[string]any{"session": ss[0].rec.ID}
	}
	// Catch up: the baseline (all:true enumerates in pages), then the
	// deltas, until a fetch with nothing new returns the same position.
	doc, _ := fetchDoc(b, rt, base)
	for i := 0; ; i++ {
		if i == 100 {
			b.Fatal("the fetch never caught up")
		}
		p := maps.Clone(base)
		p["cursor"] = doc.Cursor
		next, _ := fetchDoc(b, rt, p)
		if !next.HasMore && next.Cursor == doc.Cursor {
			break
		}
		doc = next
	}
	p := maps.Clone(base)
	p["cursor"] = doc.Cursor
	params, _ := json.Marshal(p)
	id := json.RawMessage(`1`)
	ctx := context.Background()
	poll := func() *rpc.FetchDocument {
		res, err := rt.methodOf[rpc.MethodSessionFetch](ctx, rpc.Peer{}, params)
		if err != nil {
			b.Fatal(err)
		}
		rpc.MarshalResponse(id, res, nil)
		d, _ := res.(*rpc.FetchDocument)
		return d
	}
	if d := poll(); d == nil || d.Reason != rpc.ReasonTimeout || d.Cursor != doc.Cursor || len(d.Sessions) != fetchdoc.BoolInt(!all) {
		b.Fatalf("an idle poll answered %+v", d)
	}
	var ru0, ru1 syscall.Rusage
	tx0 := rt.db.ReadTxns()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		poll()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime)+syscall.TimevalToNsec(ru1.Stime)-
		syscall.TimevalToNsec(ru0.Utime)-syscall.TimevalToNsec(ru0.Stime)) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(rt.db.ReadTxns()-tx0)/float64(b.N), "readtx/op")
}

// The same poll when one Session changed since (an event): the poll
// answers with that Session's bucket and advances. Only the poll is
// measured (the event's own commit is outside the clock and the CPU
// count). Run with:
//
//	go test -run '^$' -bench FetchChangedPoll -benchtime 2000x ./daemon/
func BenchmarkFetchChangedPoll(b *testing.B) {
	for _, n := range []int{64, 256} {
		b.Run(fmt.Sprintf("all=%d", n), func(b *testing.B) {
			rt := newFetchRuntime(b)
			ss := idleSessions(b, rt, n, min(n, 64))
			doc, _ := fetchDoc(b, rt, map[string]any{"all": true})
			for doc.HasMore {
				doc, _ = fetchDoc(b, rt, map[string]any{"all": true, "cursor": doc.Cursor})
			}
			cursor := doc.Cursor
			ctx := context.Background()
			var cpu time.Duration
			var txns uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := ss[i%len(ss)]
				s.mu.Lock()
				rt.emitLocked(s, rpc.Event{Type: rpc.EventSessionReady})
				s.mu.Unlock()
				params, _ := json.Marshal(map[string]any{"all": true, "cursor": cursor})
				var ru0, ru1 syscall.Rusage
				tx0 := rt.db.ReadTxns()
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				b.StartTimer()
				res, err := rt.methodOf[rpc.MethodSessionFetch](ctx, rpc.Peer{}, params)
				rpc.MarshalResponse(json.RawMessage(`1`), res, nil)
				b.StopTimer()
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				txns += rt.db.ReadTxns() - tx0
				cpu += time.Duration(syscall.TimevalToNsec(ru1.Utime) + syscall.TimevalToNsec(ru1.Stime) -
					syscall.TimevalToNsec(ru0.Utime) - syscall.TimevalToNsec(ru0.Stime))
				d, _ := res.(*rpc.FetchDocument)
				if err != nil || d == nil || d.Reason != rpc.ReasonChange || len(d.Sessions) != 1 {
					b.Fatalf("a poll after one event: %+v %v", d, err)
				}
				cursor = d.Cursor
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(txns)/float64(b.N), "readtx/op")
		})
	}
}
