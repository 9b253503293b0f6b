package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"dlgt/harness"
	"dlgt/rpc"
)

// Wake-up latency: from a recorded Stop (harness evidence applied through
// applyEvidence, exactly as internal.hook does) to each long-polling
// session.fetch until:"result" returning, with 1, 100 and 1,000
// concurrent waiters. Run with:
//
//	go test -run x -bench 'FetchWake|FetchBaseline' -benchtime 20x ./daemon/
func BenchmarkFetchWake(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			rt := newFetchRuntime(b)
			s := addSession(b, rt, "w")
			s.mu.Lock()
			s.gen = &generation{launchID: "internal:bench"}
			s.mu.Unlock()
			var lat, wake []time.Duration
			text := "done"
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				doc, _ := fetchDoc(b, rt, map[string]any{"session": "claude:w", "screen": false})
				startExec(rt, s)
				var (
					wg      sync.WaitGroup
					started sync.WaitGroup
					mu      sync.Mutex
					t0, t1  time.Time
					applied = make(chan struct{})
					stopped = make(chan struct{})
				)
				params, _ := json.Marshal(map[string]any{"session": "claude:w", "cursor": doc.Cursor, "until": "result", "wait_ms": 60000, "screen": false})
				for w := 0; w < n; w++ {
					wg.Add(1)
					started.Add(1)
					go func() {
						defer wg.Done()
						started.Done()
						res, err := rt.sessionFetch(context.Background(), rpc.Peer{}, params)
						<-stopped
						now := time.Now()
						<-applied
						d, w := now.Sub(t0), max(0, now.Sub(t1))
						if err != nil || res.(*rpc.FetchDocument).Reason != rpc.ReasonResult {
							b.Errorf("waiter: %v %v", err, res)
						}
						mu.Lock()
						lat = append(lat, d)
						wake = append(wake, w)
						mu.Unlock()
					}()
				}
				started.Wait()
				time.Sleep(50*time.Millisecond + time.Duration(n)*50*time.Microsecond) // let them park
				b.StartTimer()
				t0 = time.Now()
				close(stopped)
				rt.applyEvidence(s, "internal:bench", harness.Evidence{Kind: harness.KindStop, FinalText: &text})
				t1 = time.Now()
				close(applied)
				wg.Wait()
			}
			b.StopTimer()
			// stop-*: from the Stop evidence arriving (its result, state
			// and event are persisted first); wake-*: from the Stop being
			// recorded (applyEvidence returned) to the response.
			for _, m := range []struct {
				name string
				d    []time.Duration
			}{{"stop", lat}, {"wake", wake}} {
				sort.Slice(m.d, func(i, j int) bool { return m.d[i] < m.d[j] })
				b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
				b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds()), m.name+"-p99-µs")
			}
		})
	}
}

// Baseline fetch throughput over the socket against a Session with
// output, on one connection and on 16.
func BenchmarkFetchBaseline(b *testing.B) {
	td := startTestDaemon(b)
	r := td.create(b, "bench-1", "[[flood 400]] [[long 200]] fill")
	td.waitResult(b, r.Session.ID, r.Cursor)
	for _, conns := range []int{1, 16} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			ctx := context.Background()
			clients := make([]*rpc.Client, conns)
			for i := range clients {
				c, err := rpc.Dial(ctx, td.paths.Socket)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				clients[i] = c
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
					for j := 0; j < share; j++ {
						var doc rpc.FetchDocument
						if err := c.Call(ctx, rpc.MethodSessionFetch, params, &doc); err != nil {
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
