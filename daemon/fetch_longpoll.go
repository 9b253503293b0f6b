// Long polls: a session.fetch from a position that waits for a change, the
// evaluation of a position (stepResult) shared by the waiters it wakes,
// and how an evaluation becomes an answer (decide).

package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
)

// longPoll is a session.fetch from a position that waits for a change.
// It holds no goroutine while it waits: it is parked in the runtime's
// fetchShares under its position, bounds and the change generation it
// saw, and the evaluation made after that change is handed to it
// (onStep), on the goroutine that made it. Either it answers then, or it
// parks again on the generation that evaluation was made under. Its
// deadline timer answers it with a fresh evaluation.
type longPoll struct {
	ft       *fetcher
	s        *session
	pos      *positions.Position
	fr       *fetchdoc.Req
	bound    uint64    // until:result's execution
	deadline time.Time // zero: answer at once

	first *stepResult // the evaluation that decided to wait (Start parks on it)

	// mu serializes the long poll's transitions (parked, evaluated,
	// expired, canceled, answered). Lock order: mu, then fetchShares.mu
	// or the Session's.
	mu       sync.Mutex
	respond  func(any, error)
	timer    *time.Timer
	entry    *shareEntry // where it is parked, if it is
	key      shareKey
	expired  bool
	finished bool
}

// Start parks the long poll (rpc.Deferred).
func (lp *longPoll) Start(respond func(any, error)) (stop func()) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.respond = respond
	lp.timer = time.AfterFunc(time.Until(lp.deadline), lp.expire)
	lp.parkLocked(lp.first.view.Changed)
	lp.first = nil
	return lp.cancel
}

// parkLocked waits for the change that closes changed.
func (lp *longPoll) parkLocked(changed <-chan struct{}) {
	lp.key = shareKey{pos: lp.pos, screen: lp.fr.Screen, stableCap: lp.fr.StableCap, maxBytes: lp.fr.MaxBytes, tools: lp.fr.ToolCalls, wokeFrom: changed}
	if !fetchShareWakes {
		lp.key.solo = lp
	}
	ft, s, pos, bounds := lp.ft, lp.s, lp.pos, *lp.fr
	lp.entry = ft.positions.shares.park(s.uid, lp.key, lp, func(st *stepResult) { ft.evalStep(st, s, pos, &bounds) })
	if h := fetchParkHook.Load(); h != nil {
		(*h)()
	}
}

// onStep acts on the evaluation made after the change it was parked on.
func (lp *longPoll) onStep(st *stepResult) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.finished {
		return
	}
	lp.entry = nil
	if res, done, err := lp.decide(st); done {
		lp.finishLocked(res, err)
		return
	}
	lp.parkLocked(st.view.Changed)
}

// expire ends the wait: a parked long poll is answered from a fresh
// evaluation; one an evaluation is being handed to sees expired there.
func (lp *longPoll) expire() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.finished {
		return
	}
	lp.expired = true
	if lp.entry == nil || !lp.ft.positions.shares.unpark(lp.s.uid, lp.key, lp.entry, lp) {
		return
	}
	lp.entry = nil
	st := &stepResult{}
	lp.ft.evalStep(st, lp.s, lp.pos, lp.fr)
	res, _, err := lp.decide(st)
	lp.finishLocked(res, err)
}

// cancel answers at once with the request's end (the connection is gone).
func (lp *longPoll) cancel() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.finished {
		return
	}
	if lp.entry != nil {
		lp.ft.positions.shares.unpark(lp.s.uid, lp.key, lp.entry, lp)
		lp.entry = nil
	}
	lp.finishLocked(nil, context.Canceled)
}

func (lp *longPoll) finishLocked(res any, err error) {
	lp.finished = true
	lp.timer.Stop()
	lp.respond(res, err)
}

// decide turns an evaluation into the answer, or reports that the long
// poll waits on (done false) for a later change.
func (lp *longPoll) decide(st *stepResult) (res *rpc.FetchDocument, done bool, err error) {
	ft, pos, fr := lp.ft, lp.pos, lp.fr
	if st.err != nil {
		return nil, true, st.err
	}
	if st.gap {
		return st.document(ft, rpc.ReasonGap, st.cursor), true, nil
	}
	o := answerOf(answerInput{
		untilRes: fr.UntilResult, bound: lp.bound, from: pos.Mark, reached: st.d.Mark,
		hasMore: st.d.HasMore, results: st.d.Bucket.Results,
		blocked: st.view.Blocked, boundDone: st.view.BoundDone(lp.bound),
		waiting: !lp.deadline.IsZero() && !lp.expired,
	})
	if !o.answer {
		return nil, false, nil
	}
	cursor := fr.Cursor
	if o.advanced {
		cursor = st.advanceCursor(ft, lp.s.uid, pos)
	}
	return st.document(ft, o.reason, cursor), true, nil
}

// answerInput is what decides a fetch's answer from one evaluation of a
// position (a delta, not a gap): the request, the position's mark and the
// one the delta reached, and the Session's view.
type answerInput struct {
	untilRes  bool
	bound     uint64 // until:result's execution (0: none)
	from      fetchdoc.Mark
	reached   fetchdoc.Mark
	hasMore   bool
	results   []rpc.Result // the delta's results
	blocked   bool
	boundDone bool // the bound execution has ended
	waiting   bool // the request may still wait (a deadline, not passed)
}

// answer is answerOf's verdict: whether to answer now, with which reason,
// and whether the cursor advances.
type answer struct {
	answer   bool
	advanced bool
	reason   string
}

// answerOf decides a fetch from a position: a pure function of its input.
// A fetch answers when it has something for the caller (until:"result":
// the bound result, a full page, a block; otherwise any advance), or when
// it may not wait; the reason says why, most specific first.
func answerOf(in answerInput) answer {
	gotBound := false
	for _, r := range in.results {
		if r.ExecutionSeq == in.bound && (r.FinalTextComplete == nil || *r.FinalTextComplete) {
			gotBound = true
		}
	}
	advanced := in.reached != in.from
	alreadyHad := in.untilRes && in.boundDone && in.from.Result >= in.bound
	var done bool
	if in.untilRes {
		done = in.hasMore || gotBound || alreadyHad || in.bound == 0 || in.blocked
	} else {
		done = in.hasMore || advanced
	}
	out := answer{answer: done || !in.waiting, advanced: advanced, reason: rpc.ReasonTimeout}
	switch {
	case in.hasMore:
		out.reason = rpc.ReasonPageFull
	case gotBound || alreadyHad || (!in.untilRes && len(in.results) > 0):
		out.reason = rpc.ReasonResult
	case in.blocked && (in.untilRes || advanced):
		out.reason = rpc.ReasonBlocked
	case advanced:
		out.reason = rpc.ReasonChange
	}
	return out
}

// viewOf is what a fetch reads of a Session's state before rendering.
func viewOf(s *session) fetchdoc.View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return viewLocked(s)
}

// viewLocked is viewOf. s.mu held.
func viewLocked(s *session) fetchdoc.View {
	v := fetchdoc.View{Changed: s.changed, Blocked: s.rec.State == rpc.StateBlocked, Last: s.rec.LastExecSeq}
	if s.exec != nil {
		v.ExecSeq = s.exec.seq
	}
	return v
}

// fetchShareWakes lets long polls parked on the same change share one
// rendering (see longPoll). Benchmarks turn it off for comparison.
var fetchShareWakes = true

// stepResult is one evaluation of a position: the Session view it was
// rendered under, then either a gap baseline (with its minted position)
// or a delta with the successor position bounding it. Once made it is
// read-only, so every waiter sharing it renders the same document.
type stepResult struct {
	view   fetchdoc.View
	err    error
	d      *fetchdoc.Delta
	gap    bool
	cursor uint64 // gap: the baseline's position
	upto   *fetchdoc.Mark
	nextN  uint64

	once sync.Once
	adv  uint64 // the position an advancing delta reached

	shared bool // long polls share it (fetchShares)

	docMu sync.Mutex
	docs  []*rpc.FetchDocument // sealed, by reason and cursor
}

// document renders the response for reason and cursor. A shared
// evaluation renders and seals each distinct document once (waiters
// differ at most in reason and cursor), so a thousand woken long polls
// encode one document, not a thousand.
func (st *stepResult) document(ft *fetcher, reason string, cursor uint64) *rpc.FetchDocument {
	if !st.shared {
		return st.d.Document(ft.runtimeInfo(), reason, cursor)
	}
	c := rpc.FormatPosition(cursor)
	st.docMu.Lock()
	defer st.docMu.Unlock()
	for _, doc := range st.docs {
		if doc.Reason == reason && doc.Cursor == c {
			return doc
		}
	}
	doc := st.d.Document(ft.runtimeInfo(), reason, cursor)
	doc.Seal()
	st.docs = append(st.docs, doc)
	return doc
}

// advanceCursor is the position d reached from pos: the successor when
// the delta replayed up to it, else one minted (and linked) once for
// every waiter sharing this result.
func (st *stepResult) advanceCursor(ft *fetcher, uid string, pos *positions.Position) uint64 {
	st.once.Do(func() {
		if st.upto != nil && st.d.Mark == *st.upto {
			st.adv = st.nextN
		} else {
			st.adv = ft.positions.Advance(uid, pos, &positions.Position{Mark: st.d.Mark})
		}
	})
	return st.adv
}

// evalStep evaluates pos: it takes s's state once (takeStep), then the
// document rules compute a gap baseline or the delta from it.
func (ft *fetcher) evalStep(st *stepResult, s *session, pos *positions.Position, fr *fetchdoc.Req) {
	ss, err := ft.takeStep(s, pos.Mark, fr)
	st.view = ss.View
	if err != nil {
		st.err = err
		return
	}
	env := ft.runtimeInfo()
	if gaps, top := fetchdoc.Gaps(pos.Mark, fr.Screen && fr.StableCap > 0, ss.Retained()); len(gaps)+len(top) > 0 {
		st.gap = true
		st.d, st.err = fetchdoc.Fit(fr, func(fr *fetchdoc.Req) (*fetchdoc.Delta, error) { return fetchdoc.BaselineOf(env, ss, fr, gaps, top) })
		if st.err == nil {
			st.cursor = ft.positions.MintSession(s.uid, st.d.Mark)
		}
		return
	}
	var nextPos *positions.Position
	st.nextN, nextPos = ft.positions.Successor(s.uid, pos)
	if nextPos != nil {
		st.upto = &nextPos.Mark
	}
	st.d, st.err = fetchdoc.Fit(fr, func(fr *fetchdoc.Req) (*fetchdoc.Delta, error) {
		return fetchdoc.DeltaOf(env, ss, pos.Mark, st.upto, fr)
	})
}

// fetchParkHook, when set (benchmarks), is called each time a long-poll
// is about to park.
var fetchParkHook atomic.Pointer[func()]

// waitChange blocks until changed closes (woken), the deadline passes
// (which clears it and sets expired) or ctx ends.
func waitChange(ctx context.Context, changed <-chan struct{}, deadline *<-chan time.Time, expired *bool) (woken bool, err error) {
	if h := fetchParkHook.Load(); h != nil {
		(*h)()
	}
	select {
	case <-changed:
		return true, nil
	case <-*deadline:
		*deadline, *expired = nil, true
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
}
