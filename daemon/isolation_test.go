package daemon

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Isolation (issue 16, point 5): while one Session prints a flood and a
// 5 MB line without a line break, another Session's RPCs (daemon.status,
// session.list, session.read, scrollback.read, a non-waiting fetch) keep
// completing, and that Session's own turn (its ingest, hooks and result)
// completes too. Durations are measured and logged, never asserted; run
// BenchmarkNeighbourRPC for the p99 as a metric.

// noisyPrompt floods 20,000 numbered lines, then prints one 5 MB line.
const noisyPrompt = "[[flood 20000]] [[bigline 5000000]] noisy"

// neighbourStats are the latencies of the quiet Session's RPCs per method.
type neighbourStats struct {
	mu   sync.Mutex
	lat  map[string][]time.Duration
	errs []string
	// turn is how long the quiet Session's own turn took, from
	// session.send to its result in a fetch.
	turn time.Duration
}

func (ns *neighbourStats) add(method string, d time.Duration, err error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if err != nil {
		ns.errs = append(ns.errs, fmt.Sprintf("%s: %v", method, err))
		return
	}
	ns.lat[method] = append(ns.lat[method], d)
}

func (ns *neighbourStats) all() []time.Duration {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []time.Duration
	for _, l := range ns.lat {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func (ns *neighbourStats) summary() string {
	ns.mu.Lock()
	methods := make([]string, 0, len(ns.lat))
	for m := range ns.lat {
		methods = append(methods, m)
	}
	ns.mu.Unlock()
	slices.Sort(methods)
	var b strings.Builder
	all := ns.all()
	fmt.Fprintf(&b, "quiet turn %v; all: n=%d p50=%v p99=%v max=%v", ns.turn, len(all), quantile(all, 0.5), quantile(all, 0.99), quantile(all, 1))
	for _, m := range methods {
		ns.mu.Lock()
		l := slices.Clone(ns.lat[m])
		ns.mu.Unlock()
		slices.Sort(l)
		fmt.Fprintf(&b, "\n  %s: n=%d p50=%v p99=%v max=%v", m, len(l), quantile(l, 0.5), quantile(l, 0.99), quantile(l, 1))
	}
	return b.String()
}

// runNoisyNeighbour creates a quiet Session, then a noisy one printing
// noisyPrompt, and polls the quiet Session's read RPCs from two clients
// until the noisy turn's result is in. Halfway through it also sends the
// quiet Session a prompt and waits for that result (its ingest must not
// starve). It returns the latencies and the quiet turn's result.
func runNoisyNeighbour(t testing.TB, td *testDaemon, tag string) (*neighbourStats, rpc.Result) {
	return runNeighbour(t, td, tag, noisyPrompt)
}

// runNeighbour is runNoisyNeighbour with the noisy Session's prompt given;
// "" runs no noisy Session and polls for controlPoll instead (the same
// machine's RPC latency without a neighbour, for comparison).
func runNeighbour(t testing.TB, td *testDaemon, tag, prompt string) (*neighbourStats, rpc.Result) {
	t.Helper()
	quiet := td.create(t, tag+"-quiet", "quiet one")
	td.waitResult(t, quiet.Session.ID, quiet.Cursor)
	qid := quiet.Session.ID

	ns := &neighbourStats{lat: map[string][]time.Duration{}}
	timed := func(method string, params, out any) {
		start := time.Now()
		err := td.call(method, params, out)
		ns.add(method, time.Since(start), err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rounds atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				timed(rpc.MethodDaemonStatus, struct{}{}, new(rpc.DaemonStatus))
				timed(rpc.MethodSessionList, rpc.SessionListParams{All: true}, new(rpc.SessionListResult))
				timed(rpc.MethodSessionRead, rpc.SessionReadParams{Session: qid}, new(rpc.SessionReadResult))
				timed(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: qid, Lines: 100}, new(rpc.ScrollbackPage))
				timed(rpc.MethodSessionFetch, map[string]any{"session": qid}, new(rpc.FetchDocument))
				rounds.Add(1)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}

	var noisy rpc.Receipt
	if prompt != "" {
		noisy = td.create(t, tag+"-noisy", prompt)
	}
	start := time.Now()
	// The quiet Session takes a turn while the noisy one is printing.
	var qr rpc.Receipt
	sent := time.Now()
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: qid, Prompt: "still here", RequestID: tag + "-quiet-2"}, &qr)
	_, qres := td.waitResult(t, qid, qr.Cursor)
	ns.turn = time.Since(sent)
	if prompt != "" {
		_, nres := td.waitResult(t, noisy.Session.ID, noisy.Cursor)
		if nres.Status != rpc.StatusCompleted {
			t.Fatalf("noisy result = %+v", nres)
		}
	} else {
		time.Sleep(controlPoll - time.Since(start))
	}
	close(stop)
	wg.Wait()
	if rounds.Load() == 0 {
		t.Fatal("no neighbour RPC round completed during the noisy turn")
	}
	return ns, qres
}

func TestIsolationNoisyNeighbour(t *testing.T) {
	td := startTestDaemon(t)
	ns, qres := runNoisyNeighbour(t, td, "iso")
	if len(ns.errs) > 0 {
		t.Fatalf("%d neighbour RPCs failed, first: %s", len(ns.errs), ns.errs[0])
	}
	if qres.Status != rpc.StatusCompleted || qres.FinalText == nil || *qres.FinalText != "MOCK-REPLY: still here" {
		t.Fatalf("quiet Session's turn during the flood: %+v", qres)
	}
	for _, m := range []string{rpc.MethodDaemonStatus, rpc.MethodSessionList, rpc.MethodSessionRead, rpc.MethodScrollbackRead, rpc.MethodSessionFetch} {
		if len(ns.lat[m]) == 0 {
			t.Errorf("no %s completed during the noisy turn", m)
		}
	}
	t.Log(ns.summary())
}

// BenchmarkNeighbourRPC reports the p50/p99/max latency of the quiet
// Session's RPCs while the noisy one prints (one noisy turn per
// iteration):
//
//	go test -run '^$' -bench NeighbourRPC -benchtime 1x ./daemon/
//
// The "control" sub-benchmark polls the same way for controlPoll with no
// noisy Session: on a loaded machine its p99 is the scheduling noise the
// "noisy" figure should be compared with, in the same run.
func BenchmarkNeighbourRPC(b *testing.B) {
	for _, bc := range []struct{ name, prompt string }{{"noisy", noisyPrompt}, {"control", ""}} {
		b.Run(bc.name, func(b *testing.B) {
			td := startTestDaemon(b)
			var all []time.Duration
			var turns time.Duration
			i := 0
			for b.Loop() {
				ns, _ := runNeighbour(b, td, fmt.Sprintf("bn%d", i), bc.prompt)
				i++
				if len(ns.errs) > 0 {
					b.Fatalf("%d neighbour RPCs failed, first: %s", len(ns.errs), ns.errs[0])
				}
				all = append(all, ns.all()...)
				turns += ns.turn
				b.Log(ns.summary())
			}
			slices.Sort(all)
			b.ReportMetric(float64(quantile(all, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(quantile(all, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(quantile(all, 1).Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(turns.Microseconds())/1000/float64(i), "quiet-turn-ms")
		})
	}
}

// controlPoll is how long the control run polls (about a noisy turn).
const controlPoll = 1500 * time.Millisecond
