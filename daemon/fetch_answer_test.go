package daemon

import (
	"testing"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/rpc"
)

// answerOf is a pure function: the reasons of a fetch from a position,
// without a daemon.
func TestAnswerOf(t *testing.T) {
	done := func(seq uint64, complete bool) rpc.Result {
		return rpc.Result{ExecutionSeq: seq, FinalTextComplete: &complete}
	}
	at := fetchdoc.Mark{Event: 10, Result: 2}
	moved := fetchdoc.Mark{Event: 12, Result: 2}
	for _, tc := range []struct {
		name string
		in   answerInput
		want answer
	}{
		{"nothing new, waiting", answerInput{from: at, reached: at, waiting: true}, answer{false, false, rpc.ReasonTimeout}},
		{"nothing new, deadline passed", answerInput{from: at, reached: at}, answer{true, false, rpc.ReasonTimeout}},
		{"an event", answerInput{from: at, reached: moved, waiting: true}, answer{true, true, rpc.ReasonChange}},
		{"a result", answerInput{from: at, reached: fetchdoc.Mark{Event: 12, Result: 3}, results: []rpc.Result{done(3, true)}, waiting: true},
			answer{true, true, rpc.ReasonResult}},
		{"a full page wins", answerInput{from: at, reached: moved, hasMore: true, results: []rpc.Result{done(3, true)}, waiting: true},
			answer{true, true, rpc.ReasonPageFull}},
		{"blocked after a change", answerInput{from: at, reached: moved, blocked: true, waiting: true}, answer{true, true, rpc.ReasonBlocked}},
		{"until result: an event is not enough", answerInput{untilRes: true, bound: 3, from: at, reached: moved, waiting: true},
			answer{false, true, rpc.ReasonChange}},
		{"until result: a chunk is not the result", answerInput{untilRes: true, bound: 3, from: at, reached: moved, results: []rpc.Result{done(3, false)}, waiting: true},
			answer{false, true, rpc.ReasonChange}},
		{"until result: the bound result", answerInput{untilRes: true, bound: 3, from: at, reached: moved, results: []rpc.Result{done(3, true)}, waiting: true},
			answer{true, true, rpc.ReasonResult}},
		{"until result: delivered before this position", answerInput{untilRes: true, bound: 2, from: at, reached: at, boundDone: true, waiting: true},
			answer{true, false, rpc.ReasonResult}},
		{"until result: blocked, nothing moved", answerInput{untilRes: true, bound: 3, from: at, reached: at, blocked: true, waiting: true},
			answer{true, false, rpc.ReasonBlocked}},
		{"until result: no execution", answerInput{untilRes: true, from: at, reached: at, waiting: true}, answer{true, false, rpc.ReasonTimeout}},
	} {
		if got := answerOf(tc.in); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// gapsOf is the gap rule without a daemon.
func TestGapsOf(t *testing.T) {
	m := fetchdoc.Mark{Event: 50, Result: 3, Row: 99}
	for _, tc := range []struct {
		name      string
		rows      bool
		r         fetchdoc.Retained
		gaps, top int
	}{
		{"nothing dropped", true, fetchdoc.Retained{RowsFirst: 100, ResultsEvicted: 3}, 0, 0},
		{"rows dropped", true, fetchdoc.Retained{RowsFirst: 101}, 1, 0},
		{"rows dropped, reader takes none", false, fetchdoc.Retained{RowsFirst: 101}, 0, 0},
		{"a result dropped", true, fetchdoc.Retained{RowsFirst: 1, ResultsEvicted: 4}, 1, 0},
		{"an event dropped", false, fetchdoc.Retained{EventLost: true}, 0, 1},
		{"everything", true, fetchdoc.Retained{RowsFirst: 500, ResultsEvicted: 9, EventLost: true}, 2, 1},
	} {
		g, top := fetchdoc.Gaps(m, tc.rows, tc.r)
		if len(g) != tc.gaps || len(top) != tc.top {
			t.Errorf("%s: gaps %v top %v", tc.name, g, top)
		}
	}
}
