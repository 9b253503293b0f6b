package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The latencies issue 46 asks for, with the real CLIs against their mock
// models, ROUNDS rounds per harness in one Session:
//
//	DLGT_BENCH_STEER=ROUNDS go test -count=1 -run TestSteerLatencyBench -v ./daemon/
//
// A round is three executions. The first runs a shell tool (it marks its
// start, sleeps, and touches a file at its end) and is steered while
// the tool sleeps: dlgt's share is session.send to its receipt (the paste
// and the CLI's acknowledgement); the CLI's share is the tool's end (or
// the receipt, if later) to the model request that carries the steer.
// The second runs the same tool unsteered: its tool's end to the next
// request is the CLI's own step, the baseline the steer's share is read
// against. A queue sent while it runs becomes the third: from the second
// execution's last model answer to its result (the CLI's end of turn and
// dlgt's reading of it) and from that result to the queued execution's
// first model request (dlgt typing it and the CLI sending it). Gemini CLI
// takes no steers: its rows have the queue only.

var steerBenchScript = mockapi.Script{
	mockapi.Prefix("BENCH-STEER-TURN", mockapi.Reply{Tool: "touch started && sleep 3 && touch ended", Text: "BENCH-TURN-DONE"}),
	mockapi.Prefix("BENCH-STEER-ME", mockapi.Reply{Text: "BENCH-STEERED-DONE"}),
	mockapi.Prefix("BENCH-PLAIN-TURN", mockapi.Reply{Tool: "touch started2 && sleep 3 && touch ended2", Text: "BENCH-PLAIN-DONE"}),
	mockapi.Prefix("BENCH-QUEUED", mockapi.Reply{Text: "BENCH-QUEUED-DONE"}),
}

func TestSteerLatencyBench(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("DLGT_BENCH_STEER"))
	if rounds <= 0 {
		t.Skip("a benchmark: DLGT_BENCH_STEER=ROUNDS runs it")
	}
	var table []string
	for _, row := range steerRows {
		t.Run(row.name, func(t *testing.T) {
			fig := benchSteer(t, row, rounds)
			for _, k := range steerBenchFigures {
				if len(fig[k]) > 0 {
					table = append(table, fmt.Sprintf("| %s | %s | %s |", row.name, k, msSpread(fig[k])))
				}
			}
		})
	}
	t.Logf("steer and queue latencies, %d rounds (min / median / max):\n| harness | step | ms |\n|---|---|---:|\n%s", rounds, strings.Join(table, "\n"))
}

// steerBenchFigures are the figures a round measures, in table order.
var steerBenchFigures = []string{
	"steer: send -> receipt (dlgt: paste, acknowledged)",
	"steer: tool end -> request carrying it (CLI)",
	"no steer: tool end -> next request (CLI, baseline)",
	"queue: last model answer -> result (CLI end of turn, dlgt reads it)",
	"queue: result -> queued execution's first request (dlgt types it, CLI sends)",
}

func benchSteer(t *testing.T, row steerRow, rounds int) map[string][]time.Duration {
	e := startSteerRig(t, row, steerBenchScript, "steer bench "+row.name)
	mock, cwd := e.mock, e.cwd
	fig := map[string][]time.Duration{}
	add := func(i int, d time.Duration) {
		fig[steerBenchFigures[i]] = append(fig[steerBenchFigures[i]], d)
	}
	for n := 1; n <= rounds; n++ {
		for _, f := range []string{"started", "ended", "started2", "ended2"} {
			os.Remove(filepath.Join(cwd, f))
		}
		steerTurn := fmt.Sprintf("BENCH-STEER-TURN r%d", n)
		if row.steers {
			r := e.turn(t, steerTurn, fmt.Sprintf("%s-bench-%d-1", row.name, n))
			waitFile(t, filepath.Join(cwd, "started"))
			text := fmt.Sprintf("BENCH-STEER-ME r%d", n)
			sent := time.Now()
			var sr rpc.Receipt
			e.call(t, rpc.MethodSessionSend, e.steer(text, fmt.Sprintf("%s-bench-%d-2", row.name, n), r.ExecutionSeq), &sr)
			acked := time.Now()
			add(0, acked.Sub(sent))
			e.waitResult(t, e.id, r.Cursor)
			end := fileClock(t, filepath.Join(cwd, "ended"))
			carried := benchRequest(t, mock, func(q mockapi.Request) bool { return strings.Contains(string(q.Body), text) })
			add(1, carried.Received.Sub(later(end, acked)))
		}
		plain := fmt.Sprintf("BENCH-PLAIN-TURN r%d", n)
		p := e.turn(t, plain, fmt.Sprintf("%s-bench-%d-3", row.name, n))
		waitFile(t, filepath.Join(cwd, "started2"))
		queued := fmt.Sprintf("BENCH-QUEUED r%d", n)
		q := e.queue(t, queued, fmt.Sprintf("%s-bench-%d-4", row.name, n))
		if !q.Queued {
			t.Fatalf("queue receipt = %+v", q)
		}
		_, res := e.waitResult(t, e.id, p.Cursor)
		if res.ExecutionSeq != p.ExecutionSeq {
			t.Fatalf("result of execution %d, want %d", res.ExecutionSeq, p.ExecutionSeq)
		}
		e.waitResult(t, e.id, q.Cursor)
		end := fileClock(t, filepath.Join(cwd, "ended2"))
		// The unsteered tool's result request; the turn's last answer.
		toolRes := benchRequest(t, mock, func(q mockapi.Request) bool {
			return q.Kind == mockapi.KindToolResult && q.Prompt == plain
		})
		add(2, toolRes.Received.Sub(end))
		var last time.Time
		for _, q := range mock.Requests() {
			if q.Prompt == plain && q.Answered.After(last) {
				last = q.Answered
			}
		}
		done := time.UnixMilli(res.CompletedAtMS)
		add(3, done.Sub(last))
		first := benchRequest(t, mock, func(q mockapi.Request) bool { return q.Kind == mockapi.KindPrompt && q.Prompt == queued })
		add(4, first.Received.Sub(done))
	}
	return fig
}

// benchRequest waits for the first request of mock that match accepts (a
// mock records a request once it has answered it).
func benchRequest(t *testing.T, mock *mockapi.Server, match func(mockapi.Request) bool) mockapi.Request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, q := range mock.Requests() {
			if match(q) {
				return q
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no such model request")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileClock is when the tool touched path (its modification time).
func fileClock(t *testing.T, path string) time.Time {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// msSpread is "min / median / max" in milliseconds.
func msSpread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return ms(s[0]) + " / " + ms(s[len(s)/2]) + " / " + ms(s[len(s)-1])
}
