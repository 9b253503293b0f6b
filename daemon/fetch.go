// session.fetch: the entry points (a Session from a cursor, a cursorless
// baseline, after_execution). An evaluation takes a snapshot once
// (fetch_state.go: the Session under its locks, then the store in one
// read transaction, only what its change marks say moved) and computes
// the document from it with package fetchdoc's pure functions (the
// request, watermarks and gaps, one Session's document, sizing and
// chunking, the all:true pages). fetch_all.go wires all:true; waiting is
// in fetch_longpoll.go and fetch_park.go.

package daemon

import (
	"context"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// fetcher serves session.fetch. It sees the runtime only as its host:
// the Sessions by reference, the all:true list and its change channel;
// the store, the positions table and the instance id it holds.
type fetcher struct {
	host       fetchHost
	db         *store.DB
	positions  *fetchPositions
	instanceID string
}

// fetchHost is what a fetch needs of the runtime.
type fetchHost interface {
	resolve(ref string) (*session, error)
	stateful() []*session
	allChangedNow() <-chan struct{}
}

func (ft *fetcher) sessionFetch(ctx context.Context, peer rpc.Peer, p rpc.SessionFetchParams) (rpc.Reply[rpc.FetchDocument], error) {
	if p.All == (p.Session != "") {
		return rpc.Reply[rpc.FetchDocument]{}, rpc.InvalidField("session", "give exactly one of session or all:true")
	}
	fr, err := fetchdoc.Parse(&p)
	if err != nil {
		return rpc.Reply[rpc.FetchDocument]{}, err
	}
	if p.All {
		if fr.HasAfter {
			return rpc.Reply[rpc.FetchDocument]{}, rpc.InvalidField("after_execution", "applies to one Session, not all:true")
		}
		doc, err := ft.fetchAll(ctx, fr)
		return rpc.Ref(doc), err
	}
	s, err := ft.host.resolve(p.Session)
	if err != nil {
		return rpc.Reply[rpc.FetchDocument]{}, err
	}
	return ft.fetchSession(ctx, s, fr)
}

func (ft *fetcher) runtimeInfo() rpc.Runtime {
	return rpc.Runtime{Version: statedir.Version, InstanceID: ft.instanceID}
}

func (ft *fetcher) fetchSession(ctx context.Context, s *session, fr *fetchdoc.Req) (rpc.Reply[rpc.FetchDocument], error) {
	var pos *positions.Position
	if fr.HasAfter {
		fr.Cursor, pos = ft.afterExecutionPosition(s, fr.After)
		fr.HasCursor = true
	} else if fr.HasCursor {
		p, err := ft.positions.Get(s.uid, fr.Cursor)
		if err != nil {
			return rpc.Reply[rpc.FetchDocument]{}, err
		}
		pos = p
	}
	// until:result binds to the execution active, or latest, now.
	s.mu.Lock()
	bound := s.fetchBoundLocked(pos, s.rec.LastExecSeq)
	s.mu.Unlock()
	if pos == nil {
		doc, err := ft.fetchBaseline(ctx, s, fr, bound)
		return rpc.Ref(doc), err
	}
	if fr.UntilResult && bound > 0 && pos.Mark.Result >= bound && viewOf(s).BoundDone(bound) {
		fr.Cursor, pos = ft.rewindResult(s, fr.Cursor, pos, bound)
	}
	lp := &longPoll{ft: ft, s: s, pos: pos, fr: fr, bound: bound}
	if fr.Wait > 0 {
		lp.deadline = time.Now().Add(fr.Wait)
	}
	st := &stepResult{}
	ft.evalStep(st, s, pos, fr)
	if res, done, err := lp.decide(st); done {
		return rpc.Ref(res), err
	}
	lp.first = st
	return rpc.Later[rpc.FetchDocument](lp), nil
}

// afterExecutionPosition is the position from which a fetch returns every
// retained result of s after execution after, and nothing else already
// recorded: everything else is at its current mark. Results retention
// already dropped are skipped (their numbers stay below the first result
// returned).
func (ft *fetcher) afterExecutionPosition(s *session, after uint64) (uint64, *positions.Position) {
	s.mu.Lock()
	m := s.markLocked()
	s.mu.Unlock()
	m.Result = min(max(after, ft.db.ResultsEvictedThrough(s.uid)), m.Result)
	m.TextOff = 0
	return ft.positions.MintHeld(s.uid, &positions.Position{Mark: m})
}

// rewindResult is the position an until:"result" fetch from pos (number
// n) reads from when pos is past the bound execution's result already
// (the caller fetched it before: an idle Session, an old cursor): pos
// with the results component just before bound, so that the answer
// carries that result again instead of reason "result" with no result.
// Everything else reads from pos. A result retention dropped stays
// dropped (pos is kept).
func (ft *fetcher) rewindResult(s *session, n uint64, pos *positions.Position, bound uint64) (uint64, *positions.Position) {
	m := pos.Mark
	m.Result = max(bound-1, ft.db.ResultsEvictedThrough(s.uid))
	m.TextOff = 0
	if m.Result >= pos.Mark.Result {
		return n, pos
	}
	return ft.positions.MintHeld(s.uid, &positions.Position{Mark: m})
}

// fetchBaseline answers a cursorless fetch: a baseline, which until:result
// holds back until the bound execution ends (or blocks, or the wait ends).
func (ft *fetcher) fetchBaseline(ctx context.Context, s *session, fr *fetchdoc.Req, bound uint64) (*rpc.FetchDocument, error) {
	var deadline <-chan time.Time
	if fr.Wait > 0 {
		t := time.NewTimer(fr.Wait)
		defer t.Stop()
		deadline = t.C
	}
	expired := false
	for {
		v := viewOf(s)
		blocked, boundDone := v.Blocked, v.BoundDone(bound)
		if fr.UntilResult && bound > 0 && !boundDone && !blocked && deadline != nil {
			if _, err := waitChange(ctx, v.Changed, &deadline, &expired); err != nil {
				return nil, err
			}
			continue
		}
		reason := rpc.ReasonSnapshot
		if fr.UntilResult {
			switch {
			case boundDone:
				reason = rpc.ReasonResult
			case blocked:
				reason = rpc.ReasonBlocked
			case expired:
				reason = rpc.ReasonTimeout
			}
		}
		return ft.baselineDoc(s, fr, reason)
	}
}

// baselineDoc renders a cursorless document and mints its position.
func (ft *fetcher) baselineDoc(s *session, fr *fetchdoc.Req, reason string) (*rpc.FetchDocument, error) {
	st, err := ft.takeBaseline(s, fr)
	if err != nil {
		return nil, err
	}
	env := ft.runtimeInfo()
	d, err := fetchdoc.Fit(fr, func(fr *fetchdoc.Req) (*fetchdoc.Delta, error) { return fetchdoc.BaselineOf(env, st, fr, nil, nil) })
	if err != nil {
		return nil, err
	}
	cursor := ft.positions.MintSession(s.uid, d.Mark)
	return d.Document(env, reason, cursor), nil
}
