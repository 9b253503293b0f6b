// session.fetch: request parsing and the entry points (a Session from a
// cursor, a cursorless baseline, after_execution). An evaluation takes a
// snapshot once (fetch_state.go: the Session under its locks, then the
// store in one read transaction, only what its change marks say moved)
// and computes the document from it with pure functions: fetch_marks.go
// (watermarks and gaps), fetch_delta.go (one Session's document),
// fetch_size.go (sizing and chunking), fetch_allpage.go (the all:true
// pages). fetch_all.go wires all:true; waiting is in fetch_longpoll.go and
// fetch_park.go.

package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Fetch bounds of the contract.
const (
	fetchDefaultBytes = 32 << 10
	fetchHardBytes    = 256 << 10
	fetchMaxEvents    = 64
	fetchMaxResults   = 4
	fetchStable       = 128
	fetchStableMax    = 512
	fetchLiveRows     = 40
	fetchMaxWait      = 86_400_000
	fetchAllPage      = 32
	fetchAllSessions  = 256
	// cliWrapper is what the CLI adds around a document:
	// {"ok":true, + document without its "{" + newline.
	cliWrapper = len(`{"ok":true,`) - 1 + 1
	// workableSlack is the headroom a named workable max_bytes keeps for
	// what may arrive between the failed call and the retry: the snapshot
	// gaining a field, or a lifecycle event (which cannot be chunked)
	// queued ahead of the chunk the value was verified with. Both the
	// value and value-slack are verified by rendering.
	workableSlack = 256
)

// fetchReq is a validated session.fetch.
type fetchReq struct {
	cursor    uint64
	hasCursor bool
	wait      time.Duration
	untilRes  bool
	screen    bool
	screenSet bool // screen explicitly requested (true or a count)
	stableCap int
	maxBytes  int
	budget    int // bytes for the document itself
	// after: start from the retained results after this execution_seq.
	after    uint64
	hasAfter bool
}

func parseFetch(p *rpc.SessionFetchParams) (*fetchReq, error) {
	fr := &fetchReq{screen: true, stableCap: fetchStable}
	var perr *rpc.Error
	fr.cursor, fr.hasCursor, perr = rpc.ParsePosition(p.Cursor)
	if perr != nil {
		return nil, perr
	}
	if p.WaitMS < 0 || p.WaitMS > fetchMaxWait {
		return nil, rpc.InvalidField("wait_ms", "must be between 0 and %d", fetchMaxWait)
	}
	fr.wait = time.Duration(p.WaitMS) * time.Millisecond
	switch p.Until {
	case "", "any":
	case "result":
		fr.untilRes = true
	default:
		return nil, rpc.InvalidField("until", "must be \"any\" or \"result\"")
	}
	if raw := bytes.TrimSpace(p.Screen); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		var b bool
		var n int
		switch {
		case json.Unmarshal(raw, &b) == nil:
			fr.screen, fr.screenSet = b, b
		case json.Unmarshal(raw, &n) == nil && n >= 0 && n <= fetchStableMax:
			fr.stableCap, fr.screenSet = n, true
		default:
			return nil, rpc.InvalidField("screen", "must be a boolean or a stable-line count up to %d", fetchStableMax)
		}
	}
	max := p.MaxBytes
	switch {
	case max == 0:
		max = fetchDefaultBytes
	case max < 0 || max > fetchHardBytes:
		return nil, rpc.InvalidField("max_bytes", "must be between 1 and %d", fetchHardBytes)
	}
	fr.maxBytes = max
	fr.budget = max - cliWrapper
	if p.AfterExecution != nil {
		if fr.hasCursor {
			return nil, rpc.InvalidField("after_execution", "give cursor or after_execution, not both")
		}
		fr.after, fr.hasAfter = *p.AfterExecution, true
	}
	return fr, nil
}

func (rt *runtime) sessionFetch(ctx context.Context, peer rpc.Peer, p rpc.SessionFetchParams) (rpc.Reply[rpc.FetchDocument], error) {
	if p.All == (p.Session != "") {
		return rpc.Reply[rpc.FetchDocument]{}, rpc.InvalidField("session", "give exactly one of session or all:true")
	}
	fr, err := parseFetch(&p)
	if err != nil {
		return rpc.Reply[rpc.FetchDocument]{}, err
	}
	if p.All {
		if fr.hasAfter {
			return rpc.Reply[rpc.FetchDocument]{}, rpc.InvalidField("after_execution", "applies to one Session, not all:true")
		}
		doc, err := rt.fetchAll(ctx, fr)
		return rpc.Ref(doc), err
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return rpc.Reply[rpc.FetchDocument]{}, err
	}
	return rt.fetchSession(ctx, s, fr)
}

func (rt *runtime) runtimeInfo() rpc.Runtime {
	return rpc.Runtime{Version: statedir.Version, InstanceID: rt.instanceID}
}

func (rt *runtime) fetchSession(ctx context.Context, s *session, fr *fetchReq) (rpc.Reply[rpc.FetchDocument], error) {
	var pos *position
	if fr.hasAfter {
		fr.cursor, pos = rt.afterExecutionPosition(s, fr.after)
		fr.hasCursor = true
	} else if fr.hasCursor {
		p, err := rt.positions.get(s.uid, fr.cursor)
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
		doc, err := rt.fetchBaseline(ctx, s, fr, bound)
		return rpc.Ref(doc), err
	}
	if fr.untilRes && bound > 0 && pos.mark.Result >= bound && viewOf(s).boundDone(bound) {
		fr.cursor, pos = rt.rewindResult(s, fr.cursor, pos, bound)
	}
	lp := &longPoll{rt: rt, s: s, pos: pos, fr: fr, bound: bound}
	if fr.wait > 0 {
		lp.deadline = time.Now().Add(fr.wait)
	}
	st := &stepResult{}
	rt.evalStep(st, s, pos, fr)
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
func (rt *runtime) afterExecutionPosition(s *session, after uint64) (uint64, *position) {
	s.mu.Lock()
	m := s.markLocked()
	s.mu.Unlock()
	m.Result = min(max(after, rt.db.ResultsEvictedThrough(s.uid)), m.Result)
	m.TextOff = 0
	ps := rt.positions
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mintLocked(s.uid, &position{mark: m})
}

// rewindResult is the position an until:"result" fetch from pos (number
// n) reads from when pos is past the bound execution's result already
// (the caller fetched it before: an idle Session, an old cursor): pos
// with the results component just before bound, so that the answer
// carries that result again instead of reason "result" with no result.
// Everything else reads from pos. A result retention dropped stays
// dropped (pos is kept).
func (rt *runtime) rewindResult(s *session, n uint64, pos *position, bound uint64) (uint64, *position) {
	m := pos.mark
	m.Result = max(bound-1, rt.db.ResultsEvictedThrough(s.uid))
	m.TextOff = 0
	if m.Result >= pos.mark.Result {
		return n, pos
	}
	ps := rt.positions
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mintLocked(s.uid, &position{mark: m})
}

// fetchBaseline answers a cursorless fetch: a baseline, which until:result
// holds back until the bound execution ends (or blocks, or the wait ends).
func (rt *runtime) fetchBaseline(ctx context.Context, s *session, fr *fetchReq, bound uint64) (*rpc.FetchDocument, error) {
	var deadline <-chan time.Time
	if fr.wait > 0 {
		t := time.NewTimer(fr.wait)
		defer t.Stop()
		deadline = t.C
	}
	expired := false
	for {
		v := viewOf(s)
		blocked, boundDone := v.blocked, v.boundDone(bound)
		if fr.untilRes && bound > 0 && !boundDone && !blocked && deadline != nil {
			if _, err := waitChange(ctx, v.changed, &deadline, &expired); err != nil {
				return nil, err
			}
			continue
		}
		reason := rpc.ReasonSnapshot
		if fr.untilRes {
			switch {
			case boundDone:
				reason = rpc.ReasonResult
			case blocked:
				reason = rpc.ReasonBlocked
			case expired:
				reason = rpc.ReasonTimeout
			}
		}
		return rt.baselineDoc(s, fr, reason)
	}
}

// baselineDoc renders a cursorless document and mints its position.
func (rt *runtime) baselineDoc(s *session, fr *fetchReq, reason string) (*rpc.FetchDocument, error) {
	st, err := rt.takeBaseline(s, fr)
	if err != nil {
		return nil, err
	}
	env := rt.runtimeInfo()
	d, err := fit(fr, func(fr *fetchReq) (*delta, error) { return baselineOf(env, st, fr, nil, nil) })
	if err != nil {
		return nil, err
	}
	cursor := rt.positions.mintSession(s.uid, d.mark)
	return d.document(env, reason, cursor), nil
}
