// The long-poll parking lot: long polls parked on the same position,
// bounds and change share one evaluation, made by one goroutine when the
// change comes.

package daemon

import (
	"log/slog"

	"github.com/dlgt-dev/dlgt/daemon/parking"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// shareKey names one shared evaluation: of a position, under the request
// bounds that shape the document (the rest of a request only decides when
// to answer and with which reason), made after the change that closes
// wokeFrom. solo (benchmarks, fetchShareWakes off) gives a long poll an
// evaluation of its own.
type shareKey struct {
	pos       *positions.Position
	screen    bool
	stableCap int
	maxBytes  int
	tools     bool
	wokeFrom  <-chan struct{}
	solo      *longPoll
}

// fetchShares is where long polls wait (package parking): the long polls
// parked under one key share one evaluation, so a thousand long polls
// answered by one Stop cost one rendering, one encoding
// (stepResult.document) and one goroutine wake-up, not a thousand.
type fetchShares struct {
	lot parking.Lot[shareKey, *longPoll, *stepResult]
}

// shareEntry is one key's parked long polls.
type shareEntry = parking.Entry[*longPoll]

// park adds lp to k's waiters; the first waiter's eval makes the
// evaluation, a panicking one handed out as INTERNAL. lp.mu held.
func (fs *fetchShares) park(scope string, k shareKey, lp *longPoll, eval func(*stepResult)) *shareEntry {
	return fs.lot.Park(scope, k, k.wokeFrom, lp, func() (st *stepResult) {
		st = &stepResult{shared: true}
		defer func() {
			if r := recover(); r != nil {
				st.d, st.err = nil, rpc.Errorf(rpc.CodeInternal, "evaluating position failed: %v", r)
			}
		}()
		eval(st)
		return st
	}, (*longPoll).onStep)
}

// unpark takes lp out of e unless e already fired. lp.mu held.
func (fs *fetchShares) unpark(scope string, k shareKey, e *shareEntry, lp *longPoll) bool {
	return fs.lot.Unpark(scope, k, e, lp)
}

// fetchPositions is the positions table with the renderings long polls
// share: shares those of long polls woken by a change, allShares those of
// all:true long polls.
type fetchPositions struct {
	*positions.Table
	shares    fetchShares
	allShares parking.AllShares
}

func newPositions(db *store.DB, log *slog.Logger) *fetchPositions {
	return &fetchPositions{Table: positions.New(db, log)}
}
