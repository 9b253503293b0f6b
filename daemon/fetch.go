package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"dlgt/rpc"
	"dlgt/store"
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

// eventsEvictedThrough reads the event retention watermark. Tests replace
// it to simulate an overrun without appending 50,000 events.
var eventsEvictedThrough = func(db *store.DB) uint64 { return db.EventsEvictedThrough() }

// errTooSmall: the budget cannot carry the envelope plus one piece of
// progress.
var errTooSmall = errors.New("max_bytes too small for one piece of progress")

// currentMarkLocked is the watermark of everything recorded for s so far.
// s.mu held.
func (rt *runtime) currentMarkLocked(s *session) sessionMark {
	m := sessionMark{Row: s.rows.Committed(), Epoch: s.rec.Epoch, Event: s.lastEvent}
	m.Result = s.rec.LastExecSeq
	if s.exec != nil {
		m.Result = s.exec.seq - 1
	}
	return m
}

// noteEventLocked records that s emitted event seq, so a reader can later
// tell whether retention dropped one of this Session's events. s.mu held.
func (s *session) noteEventLocked(seq, evicted uint64) {
	s.eventSeqs = append(s.eventSeqs, seq)
	if len(s.eventSeqs) > 1024 {
		s.eventLostAfterLocked(^uint64(0), evicted)
	}
}

// eventLostAfterLocked reports whether retention dropped an event of s
// with seq > after. s.mu held.
func (s *session) eventLostAfterLocked(after, evicted uint64) bool {
	i := 0
	for i < len(s.eventSeqs) && s.eventSeqs[i] <= evicted {
		s.lostEvent = s.eventSeqs[i]
		i++
	}
	if i > 0 {
		s.eventSeqs = append(s.eventSeqs[:0], s.eventSeqs[i:]...)
	}
	return s.lostEvent > after
}

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

func (rt *runtime) sessionFetch(ctx context.Context, peer rpc.Peer, params json.RawMessage) (any, error) {
	var p rpc.SessionFetchParams
	if err := rpc.Decode(params, &p); err != nil {
		return nil, err
	}
	if p.All == (p.Session != "") {
		return nil, rpc.InvalidField("session", "give exactly one of session or all:true")
	}
	fr, err := parseFetch(&p)
	if err != nil {
		return nil, err
	}
	if p.All {
		if fr.hasAfter {
			return nil, rpc.InvalidField("after_execution", "applies to one Session, not all:true")
		}
		return rt.fetchAll(ctx, fr)
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return nil, err
	}
	return rt.fetchSession(ctx, s, fr)
}

func (rt *runtime) runtimeInfo() rpc.Runtime {
	return rpc.Runtime{Version: Version, InstanceID: rt.instanceID}
}

// fit runs build at the requested budget. When the budget cannot carry
// one piece of progress it fails with INVALID_ARGUMENT naming a max_bytes
// verified by rendering at it (and at it minus workableSlack).
func fit[T any](fr *fetchReq, build func(*fetchReq) (T, error)) (T, error) {
	d, err := build(fr)
	if !errors.Is(err, errTooSmall) {
		return d, err
	}
	var zero T
	ok := func(c int) bool {
		if c < 1 || c > fetchHardBytes {
			return false
		}
		f := *fr
		f.maxBytes, f.budget = c, c-cliWrapper
		_, err := build(&f)
		return err == nil
	}
	works := func(c int) bool { return ok(c) && (c-workableSlack <= fr.maxBytes || ok(c-workableSlack)) }
	hi := 0
	for c := fr.maxBytes; c < fetchHardBytes; {
		c = min(fetchHardBytes, c+max(256, c/2))
		if works(c) {
			hi = c
			break
		}
	}
	if hi == 0 {
		return zero, rpc.InvalidField("max_bytes", "no max_bytes up to %d can carry this response", fetchHardBytes)
	}
	for lo := fr.maxBytes; lo+1 < hi; {
		mid := lo + (hi-lo)/2
		if works(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	// The named value must itself have been rendered, with its slack.
	if !ok(hi) || !ok(hi-workableSlack) {
		hi = min(fetchHardBytes, hi+workableSlack)
	}
	return zero, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "max_bytes", WorkableMaxBytes: hi,
		Message: "max_bytes " + itoa(uint64(fr.maxBytes)) + " is too small for this response's envelope plus one chunk; " + itoa(uint64(hi)) + " works"}
}

func (rt *runtime) fetchSession(ctx context.Context, s *session, fr *fetchReq) (any, error) {
	var pos *position
	if fr.hasAfter {
		fr.cursor, pos = rt.afterExecutionPosition(s, fr.after)
		fr.hasCursor = true
	} else if fr.hasCursor {
		p, err := rt.positions.get(s.uid, fr.cursor)
		if err != nil {
			return nil, err
		}
		pos = p
	}
	// until:result binds to the execution active, or latest, now.
	s.mu.Lock()
	bound := s.rec.LastExecSeq
	s.mu.Unlock()
	if pos == nil {
		return rt.fetchBaseline(ctx, s, fr, bound)
	}
	lp := &longPoll{rt: rt, s: s, pos: pos, fr: fr, bound: bound}
	if fr.wait > 0 {
		lp.deadline = time.Now().Add(fr.wait)
	}
	st := &stepResult{}
	rt.evalStep(st, s, pos, fr)
	if res, done, err := lp.decide(st); done {
		return res, err
	}
	lp.first = st
	return lp, nil
}

// afterExecutionPosition is the position from which a fetch returns every
// retained result of s after execution after, and nothing else already
// recorded: everything else is at its current mark. Results retention
// already dropped are skipped (their numbers stay below the first result
// returned).
func (rt *runtime) afterExecutionPosition(s *session, after uint64) (uint64, *position) {
	s.mu.Lock()
	m := rt.currentMarkLocked(s)
	s.mu.Unlock()
	m.Result = min(max(after, rt.db.ResultsEvictedThrough(s.uid)), m.Result)
	m.TextOff = 0
	ps := rt.positions
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mintLocked(s.uid, &position{mark: m})
}

// fetchBaseline answers a cursorless fetch: a baseline, which until:result
// holds back until the bound execution ends (or blocks, or the wait ends).
func (rt *runtime) fetchBaseline(ctx context.Context, s *session, fr *fetchReq, bound uint64) (any, error) {
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
		return rt.baselineDoc(s, fr, reason, nil, nil)
	}
}

// longPoll is a session.fetch from a position that waits for a change.
// It holds no goroutine while it waits: it is parked in the runtime's
// fetchShares under its position, bounds and the change generation it
// saw, and the evaluation made after that change is handed to it
// (onStep), on the goroutine that made it. Either it answers then, or it
// parks again on the generation that evaluation was made under. Its
// deadline timer answers it with a fresh evaluation.
type longPoll struct {
	rt       *runtime
	s        *session
	pos      *position
	fr       *fetchReq
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
	lp.parkLocked(lp.first.view.changed)
	lp.first = nil
	return lp.cancel
}

// parkLocked waits for the change that closes changed.
func (lp *longPoll) parkLocked(changed <-chan struct{}) {
	lp.key = shareKey{pos: lp.pos, screen: lp.fr.screen, stableCap: lp.fr.stableCap, maxBytes: lp.fr.maxBytes, wokeFrom: changed}
	if !fetchShareWakes {
		lp.key.solo = lp
	}
	rt, s, pos, bounds := lp.rt, lp.s, lp.pos, *lp.fr
	lp.entry = rt.positions.shares.park(s.uid, lp.key, lp, func(st *stepResult) { rt.evalStep(st, s, pos, &bounds) })
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
	lp.parkLocked(st.view.changed)
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
	if lp.entry == nil || !lp.rt.positions.shares.unpark(lp.s.uid, lp.key, lp.entry, lp) {
		return
	}
	lp.entry = nil
	st := &stepResult{}
	lp.rt.evalStep(st, lp.s, lp.pos, lp.fr)
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
		lp.rt.positions.shares.unpark(lp.s.uid, lp.key, lp.entry, lp)
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
func (lp *longPoll) decide(st *stepResult) (res any, done bool, err error) {
	rt, pos, fr, bound := lp.rt, lp.pos, lp.fr, lp.bound
	if st.err != nil {
		return nil, true, st.err
	}
	d := st.d
	if st.gap {
		return st.document(rt, rpc.ReasonGap, st.cursor), true, nil
	}
	blocked, boundDone := st.view.blocked, st.view.boundDone(bound)
	gotBound := false
	for _, r := range d.bucket.Results {
		if r.ExecutionSeq == bound && (r.FinalTextComplete == nil || *r.FinalTextComplete) {
			gotBound = true
		}
	}
	advanced := d.mark != pos.mark
	if fr.untilRes {
		alreadyHad := boundDone && pos.mark.Result >= bound
		done = d.hasMore || gotBound || alreadyHad || bound == 0 || blocked
	} else {
		done = d.hasMore || advanced
	}
	if !done && !lp.deadline.IsZero() && !lp.expired {
		return nil, false, nil
	}
	reason := rpc.ReasonTimeout
	switch {
	case d.hasMore:
		reason = rpc.ReasonPageFull
	case gotBound || (fr.untilRes && boundDone && pos.mark.Result >= bound) || (!fr.untilRes && len(d.bucket.Results) > 0):
		reason = rpc.ReasonResult
	case blocked && (fr.untilRes || advanced):
		reason = rpc.ReasonBlocked
	case advanced:
		reason = rpc.ReasonChange
	}
	cursor := fr.cursor
	if advanced {
		cursor = st.advanceCursor(rt, lp.s.uid, pos)
	}
	return st.document(rt, reason, cursor), true, nil
}

// sessionView is what a fetch reads of a Session's state before
// rendering: the change generation (closed on the next change), whether
// it is blocked, and its active execution.
type sessionView struct {
	changed <-chan struct{}
	blocked bool
	execSeq uint64 // 0: none active
}

func viewOf(s *session) sessionView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := sessionView{changed: s.changed, blocked: s.rec.State == rpc.StateBlocked}
	if s.exec != nil {
		v.execSeq = s.exec.seq
	}
	return v
}

// boundDone reports whether execution bound (until:result) has ended.
func (v sessionView) boundDone(bound uint64) bool {
	return bound > 0 && (v.execSeq == 0 || v.execSeq != bound)
}

// fetchShareWakes lets long polls parked on the same change share one
// rendering (see longPoll). Benchmarks turn it off for comparison.
var fetchShareWakes = true

// stepResult is one evaluation of a position: the Session view it was
// rendered under, then either a gap baseline (with its minted position)
// or a delta with the successor position bounding it. Once made it is
// read-only, so every waiter sharing it renders the same document.
type stepResult struct {
	view   sessionView
	err    error
	d      *delta
	gap    bool
	cursor uint64 // gap: the baseline's position
	upto   *sessionMark
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
func (st *stepResult) document(rt *runtime, reason string, cursor uint64) *rpc.FetchDocument {
	if !st.shared {
		return st.d.document(rt, reason, cursor)
	}
	c := rpc.FormatPosition(cursor)
	st.docMu.Lock()
	defer st.docMu.Unlock()
	for _, doc := range st.docs {
		if doc.Reason == reason && doc.Cursor == c {
			return doc
		}
	}
	doc := st.d.document(rt, reason, cursor)
	doc.Seal()
	st.docs = append(st.docs, doc)
	return doc
}

// advanceCursor is the position d reached from pos: the successor when
// the delta replayed up to it, else one minted (and linked) once for
// every waiter sharing this result.
func (st *stepResult) advanceCursor(rt *runtime, uid string, pos *position) uint64 {
	st.once.Do(func() {
		if st.upto != nil && st.d.mark == *st.upto {
			st.adv = st.nextN
		} else {
			st.adv = rt.positions.advance(uid, pos, &position{mark: st.d.mark})
		}
	})
	return st.adv
}

func (rt *runtime) evalStep(st *stepResult, s *session, pos *position, fr *fetchReq) {
	st.view = viewOf(s)
	if gaps, top := rt.gapsFor(s, pos.mark, fr.screen && fr.stableCap > 0); len(gaps)+len(top) > 0 {
		st.gap = true
		st.d, st.err = fit(fr, func(fr *fetchReq) (*delta, error) { return rt.baseline(s, fr, gaps, top) })
		if st.err == nil {
			st.cursor = rt.positions.mintSession(s.uid, st.d.mark)
		}
		return
	}
	var nextPos *position
	st.nextN, nextPos = rt.positions.successor(s.uid, pos)
	if nextPos != nil {
		st.upto = &nextPos.mark
	}
	st.d, st.err = fit(fr, func(fr *fetchReq) (*delta, error) { return rt.buildDelta(s, pos.mark, st.upto, fr) })
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

// gapsFor reports retention overruns since mark: per-Session components
// (screen only for a reader that takes stable rows, since one that does
// not has lost nothing when rows are evicted)
// (screen, results) and scope-wide ones (events).
func (rt *runtime) gapsFor(s *session, m sessionMark, rows bool) (gaps, top []rpc.Gap) {
	if rows && m.Row+1 < s.rows.First() {
		gaps = append(gaps, rpc.Gap{Component: "screen", Reason: "retention_overrun"})
	}
	if m.Result < rt.db.ResultsEvictedThrough(s.uid) {
		gaps = append(gaps, rpc.Gap{Component: "results", Reason: "retention_overrun"})
	}
	if ev := eventsEvictedThrough(rt.db); m.Event < ev {
		s.mu.Lock()
		lost := s.eventLostAfterLocked(m.Event, ev)
		s.mu.Unlock()
		if lost {
			top = append(top, rpc.Gap{Component: "events", Reason: "retention_overrun"})
		}
	}
	return gaps, top
}

// delta is one Session's part of a fetch document under construction.
type delta struct {
	bucket  rpc.FetchSession
	mark    sessionMark
	hasMore bool
	gaps    []rpc.Gap
}

func (d *delta) document(rt *runtime, reason string, cursor uint64) *rpc.FetchDocument {
	return rt.newDocument(reason, d.hasMore, d.gaps, cursor, []rpc.FetchSession{d.bucket})
}

func (rt *runtime) newDocument(reason string, hasMore bool, gaps []rpc.Gap, cursor uint64, buckets []rpc.FetchSession) *rpc.FetchDocument {
	if gaps == nil {
		gaps = []rpc.Gap{}
	}
	if buckets == nil {
		buckets = []rpc.FetchSession{}
	}
	return &rpc.FetchDocument{
		SchemaVersion: rpc.SchemaVersion, Runtime: rt.runtimeInfo(), Reason: reason,
		HasMore: hasMore, Gaps: gaps, Cursor: rpc.FormatPosition(cursor), Sessions: buckets,
	}
}

func jsonLen(v any) int {
	b, _ := rpc.Marshal(v)
	return len(b)
}

// jsonStrLen is jsonLen(s) without rendering: the wire encoding escapes
// '"', '\\' and control bytes, U+2028/U+2029, and replaces invalid UTF-8
// with \ufffd (HTML characters are not escaped).
func jsonStrLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\':
				n += 2
			case b >= 0x20:
				n++
			case b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1, c == '\u2028', c == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// chunkSizer returns jsonLen(withChunk(r, t, off, c)) as a function of
// (t, c), rendering the result only once per c.
func chunkSizer(r rpc.Result, off int) func(string, bool) int {
	var fixed [2]int
	empty := ""
	return func(t string, c bool) int {
		if t == "" && r.FinalText == nil {
			return jsonLen(withChunk(r, t, off, c)) // final_text stays null
		}
		i := boolInt(c)
		if fixed[i] == 0 {
			r2 := r
			r2.FinalText = &empty
			fixed[i] = jsonLen(withChunk(r2, "", off, c)) - len(`""`)
		}
		return fixed[i] + jsonStrLen(t)
	}
}

// worstSize is the size of a document with the longest reason and cursor.
func (rt *runtime) worstSize(gaps []rpc.Gap, buckets []rpc.FetchSession) int {
	return jsonLen(rt.newDocument(rpc.ReasonPageFull, true, gaps, ^uint64(0), buckets))
}

// sessionBucket starts s's bucket: the snapshot and, when asked, the live
// screen (live rows beyond the bound dropped from the top).
func (rt *runtime) sessionBucket(s *session, from sessionMark, fr *fetchReq, withScreen bool) (rpc.FetchSession, uint64) {
	s.mu.Lock()
	snap := s.snapshotLocked(time.Now())
	epoch, reason := s.rec.Epoch, s.rec.ResetReason
	s.mu.Unlock()
	b := rpc.FetchSession{Session: snap, Events: []rpc.Event{}, Results: []rpc.Result{}, Gaps: []rpc.Gap{}}
	if withScreen && fr.screen {
		live := s.liveRows()
		sc := &rpc.Screen{Epoch: epoch, Stable: []string{}, Live: []string{}}
		if from.Epoch != 0 && epoch != from.Epoch {
			sc.Reset = true
			r := reason
			sc.ResetReason = &r
		}
		if len(live) > fetchLiveRows {
			live, sc.LiveTruncated = live[len(live)-fetchLiveRows:], true
		}
		if live != nil {
			sc.Live = live
		}
		b.Screen = sc
	}
	return b, epoch
}

// skeleton starts a delta: the Session snapshot and live screen, fitted
// to the budget (live rows are dropped from the top first). It fails with
// errTooSmall when even the envelope plus one chunk cannot fit.
func (rt *runtime) skeleton(s *session, from sessionMark, fr *fetchReq, gaps, top []rpc.Gap) (*delta, int, error) {
	b, epoch := rt.sessionBucket(s, from, fr, true)
	d := &delta{mark: from, bucket: b, gaps: top}
	if gaps != nil {
		d.bucket.Gaps = gaps
	}
	d.mark.Epoch = epoch
	size := rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket})
	for size+minChunk > fr.budget && d.bucket.Screen != nil && len(d.bucket.Screen.Live) > 0 {
		sc := d.bucket.Screen
		cut := max(1, len(sc.Live)/4)
		sc.Live = sc.Live[cut:]
		sc.LiveTruncated = true
		size = rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket})
	}
	if size+minChunk > fr.budget {
		return nil, 0, errTooSmall
	}
	return d, fr.budget - size, nil
}

// minChunk is the room one piece of progress needs: a fragment with a
// few bytes of text.
const minChunk = 96

// buildDelta gathers what happened after from, bounded by upto (a replay)
// and by the budget.
func (rt *runtime) buildDelta(s *session, from sessionMark, upto *sessionMark, fr *fetchReq) (*delta, error) {
	d, room, err := rt.skeleton(s, from, fr, nil, nil)
	if err != nil {
		return nil, err
	}
	full, cut := false, false
	add := func(n int, count int) bool {
		cost := n + boolInt(count > 0) // the comma
		if cost > room {
			full = true
			return false
		}
		room -= cost
		return true
	}

	// Events, in seq order.
	evs, err := rt.db.ReadEvents(from.Event, fetchMaxEvents+1, s.uid)
	if err != nil {
		return nil, err
	}
	for i, e := range evs {
		if upto != nil && e.Seq > upto.Event {
			cut = true
			break
		}
		if i == fetchMaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			d.mark.Event = e.Seq
			continue
		}
		if !add(jsonLen(ev), len(d.bucket.Events)) {
			break
		}
		d.bucket.Events = append(d.bucket.Events, ev)
		d.mark.Event = e.Seq
	}

	// Results, chunking a long final_text. Components advance
	// independently: one that does not fit leaves has_more set, and the
	// others still make progress in the remaining room (so a verified
	// workable max_bytes keeps working when an unchunkable event arrives
	// ahead of the chunk it was verified with).
	var rs []store.Result
	rs, err = rt.db.ListResults(s.uid, from.Result, fetchMaxResults+1)
	if err != nil {
		return nil, err
	}
	nres := 0
	rt.addResults(rs, from, upto, &d.mark, &d.bucket.Results, &nres, &room, &full, &cut)

	// Stable rows: fragment_before, whole rows, fragment_after.
	if d.bucket.Screen != nil && fr.stableCap > 0 {
		rt.addRows(s, d, from, upto, fr, &room, &full, &cut)
	}
	d.hasMore = full || cut
	if d.hasMore && d.mark == from {
		return nil, errTooSmall
	}
	if rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket}) > fr.budget {
		return nil, errTooSmall // accounting slip: never emit an oversized document
	}
	return d, nil
}

// addResults appends the results in rs (ascending, seq > from.Result) to
// out, chunking a final_text that does not fit, and advances mark.
func (rt *runtime) addResults(rs []store.Result, from sessionMark, upto, mark *sessionMark, out *[]rpc.Result, nres, room *int, full, cut *bool) {
	for _, r := range rs {
		if r.Seq <= mark.Result {
			continue
		}
		if upto != nil && (r.Seq > upto.Result+1 || (r.Seq == upto.Result+1 && upto.TextOff == 0)) {
			*cut = true
			return
		}
		if *nres >= fetchMaxResults {
			*full = true
			return
		}
		var res rpc.Result
		if json.Unmarshal(r.Data, &res) != nil {
			mark.Result, mark.TextOff = r.Seq, 0
			continue
		}
		off := 0
		if r.Seq == from.Result+1 {
			off = from.TextOff
		}
		text := derefText(&res)
		end := len(text)
		if upto != nil && r.Seq == upto.Result+1 {
			end = upto.TextOff
		}
		if off > end {
			off = end
		}
		comma := boolInt(len(*out) > 0)
		piece, complete, ok := fitText(text[off:end], end == len(text), chunkSizer(res, off), *room-comma)
		if !ok {
			*full = true
			return
		}
		chunk := withChunk(res, piece, off, complete)
		*room -= jsonLen(chunk) + comma
		*out = append(*out, chunk)
		*nres++
		if complete {
			mark.Result, mark.TextOff = r.Seq, 0
			continue
		}
		mark.Result, mark.TextOff = r.Seq-1, off+len(piece)
		if end == len(text) {
			*full = true
		} else {
			*cut = true
		}
		return
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withChunk renders result r carrying text[off:] piece.
func withChunk(r rpc.Result, piece string, off int, complete bool) rpc.Result {
	if r.FinalText != nil || piece != "" {
		p := piece
		r.FinalText = &p
	}
	o, c := off, complete
	r.FinalTextOffset, r.FinalTextComplete = &o, &c
	return r
}

// fitText returns the longest prefix of text (cut at a UTF-8 boundary)
// whose rendering fits room. whole says whether text runs to the end of
// its value (so a full fit is complete).
func fitText(text string, whole bool, size func(string, bool) int, room int) (string, bool, bool) {
	if size(text, whole) <= room {
		return text, whole, true
	}
	lo, hi := 0, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		cut := mid
		for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if size(text[:cut], false) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo > 0 && lo < len(text) && !utf8.RuneStart(text[lo]) {
		lo--
	}
	if lo == 0 {
		return "", false, false
	}
	return text[:lo], false, true
}

func (rt *runtime) addRows(s *session, d *delta, from sessionMark, upto *sessionMark, fr *fetchReq, room *int, full, cut *bool) {
	sc := d.bucket.Screen
	limit := fr.stableCap
	rows, err := s.rows.Read(from.Row+1, limit+2)
	if err != nil || len(rows) == 0 {
		return
	}
	if from.Row+1 < rows[0].ID {
		// Rows were evicted under us; gapsFor reports it on the next call.
		return
	}
	// A row split by the previous response continues in fragment_before.
	start := 0
	if from.RowOff > 0 {
		r := rows[0]
		end := len(r.Text)
		if upto != nil && upto.Row+1 == r.ID {
			end = upto.RowOff
		}
		if upto != nil && upto.Row < r.ID && end <= from.RowOff {
			*cut = true
			return
		}
		off := min(from.RowOff, end)
		frag := &rpc.Fragment{RowID: r.ID, Offset: off}
		piece, complete, ok := fitText(r.Text[off:end], end == len(r.Text), func(t string, c bool) int {
			frag.Text, frag.Complete = t, c
			return jsonLen(frag) + len(`,"fragment_before":`)
		}, *room)
		if !ok {
			*full = true
			return
		}
		frag.Text, frag.Complete = piece, complete
		*room -= jsonLen(frag) + len(`,"fragment_before":`)
		sc.FragmentBefore = frag
		if !complete {
			d.mark.RowOff = off + len(piece)
			if end == len(r.Text) {
				*full = true
			} else {
				*cut = true
			}
			return
		}
		d.mark.Row, d.mark.RowOff = r.ID, 0
		start = 1
	}
	for _, r := range rows[start:] {
		if upto != nil && (r.ID > upto.Row+1 || (r.ID == upto.Row+1 && upto.RowOff == 0)) {
			*cut = true
			return
		}
		if len(sc.Stable) >= limit {
			*full = true
			return
		}
		partialEnd := len(r.Text)
		if upto != nil && r.ID == upto.Row+1 {
			partialEnd = upto.RowOff
		}
		cost := jsonStrLen(r.Text) + boolInt(len(sc.Stable) > 0)
		if partialEnd == len(r.Text) && cost <= *room {
			*room -= cost
			sc.Stable = append(sc.Stable, r.Text)
			d.mark.Row = r.ID
			continue
		}
		// Chunk this row mid-line into fragment_after.
		frag := &rpc.Fragment{RowID: r.ID}
		piece, _, ok := fitText(r.Text[:partialEnd], false, func(t string, _ bool) int {
			frag.Text = t
			return jsonLen(frag) + len(`,"fragment_after":`)
		}, *room)
		if ok {
			frag.Text = piece
			*room -= jsonLen(frag) + len(`,"fragment_after":`)
			sc.FragmentAfter = frag
			d.mark.RowOff = len(piece)
		}
		if partialEnd < len(r.Text) && ok && len(piece) == partialEnd {
			*cut = true
		} else {
			*full = true
		}
		return
	}
}

// baselineDoc renders a cursorless (or post-gap) document and mints its
// position.
func (rt *runtime) baselineDoc(s *session, fr *fetchReq, reason string, gaps, top []rpc.Gap) (any, error) {
	d, err := fit(fr, func(fr *fetchReq) (*delta, error) { return rt.baseline(s, fr, gaps, top) })
	if err != nil {
		return nil, err
	}
	cursor := rt.positions.mintSession(s.uid, d.mark)
	return d.document(rt, reason, cursor), nil
}

// baseline is a bounded baseline: current state, the latest retained
// result, a stable tail, the live screen, and a mark of everything
// recorded so far (less any part of the latest result that did not fit).
func (rt *runtime) baseline(s *session, fr *fetchReq, gaps, top []rpc.Gap) (*delta, error) {
	s.mu.Lock()
	mark := rt.currentMarkLocked(s)
	s.mu.Unlock()
	d, room, err := rt.skeleton(s, mark, fr, gaps, top)
	if err != nil {
		return nil, err
	}
	if d.bucket.Screen != nil && gaps != nil {
		for _, g := range gaps {
			if g.Component == "screen" {
				d.bucket.Screen.Reset = true
				r := "retention_overrun"
				d.bucket.Screen.ResetReason = &r
			}
		}
	}
	if err := rt.baselineResult(s, &mark, nil, &d.bucket, &room, &d.hasMore); err != nil {
		return nil, err
	}
	if d.bucket.Screen != nil && fr.stableCap > 0 {
		tail, _ := s.rows.ReadBefore(mark.Row+1, fr.stableCap)
		// Keep the newest rows that fit.
		i := len(tail)
		for i > 0 {
			cost := jsonStrLen(tail[i-1].Text) + boolInt(i < len(tail))
			if cost > room {
				break
			}
			room -= cost
			i--
		}
		for _, r := range tail[i:] {
			d.bucket.Screen.Stable = append(d.bucket.Screen.Stable, r.Text)
		}
	}
	d.mark = mark
	if rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket}) > fr.budget {
		return nil, errTooSmall
	}
	return d, nil
}

// baselineResult adds the latest result retained at or before mark (a
// replay passes the mark it must reproduce as upto). A final_text that
// does not fit is chunked and mark is set back to continue it.
func (rt *runtime) baselineResult(s *session, mark, upto *sessionMark, b *rpc.FetchSession, room *int, hasMore *bool) error {
	var (
		res *rpc.Result
		end = -1
	)
	if upto != nil && upto.TextOff > 0 {
		rs, err := rt.db.ListResults(s.uid, upto.Result, 1)
		if err != nil {
			return err
		}
		if len(rs) == 1 && rs[0].Seq == upto.Result+1 {
			var r rpc.Result
			if json.Unmarshal(rs[0].Data, &r) == nil {
				res, end = &r, upto.TextOff
			}
		}
	} else {
		lim := mark.Result
		if upto != nil {
			lim = upto.Result
		}
		var err error
		if res, err = rt.resultAtOrBefore(s, lim); err != nil {
			return err
		}
	}
	if res == nil {
		return nil
	}
	text := derefText(res)
	if end < 0 || end > len(text) {
		end = len(text)
	}
	comma := boolInt(len(b.Results) > 0)
	piece, complete, ok := fitText(text[:end], end == len(text), chunkSizer(*res, 0), *room-comma)
	if !ok {
		mark.Result, mark.TextOff = res.ExecutionSeq-1, 0
		*hasMore = true
		return nil
	}
	chunk := withChunk(*res, piece, 0, complete)
	*room -= jsonLen(chunk) + comma
	b.Results = append(b.Results, chunk)
	if complete {
		if mark.Result < res.ExecutionSeq {
			mark.Result, mark.TextOff = res.ExecutionSeq, 0
		}
	} else {
		mark.Result, mark.TextOff = res.ExecutionSeq-1, len(piece)
		*hasMore = true
	}
	return nil
}

// resultAtOrBefore is the newest retained result of s with seq <= lim.
func (rt *runtime) resultAtOrBefore(s *session, lim uint64) (*rpc.Result, error) {
	stored, ok, err := rt.db.ResultAtOrBefore(s.uid, lim)
	if err != nil || !ok {
		return nil, err
	}
	var r rpc.Result
	if err := json.Unmarshal(stored.Data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func derefText(r *rpc.Result) string {
	if r.FinalText == nil {
		return ""
	}
	return *r.FinalText
}

// ---- all:true -------------------------------------------------------------

// stateful lists the Sessions that carry state (have a public ID), in
// creation order.
func (rt *runtime) stateful() []*session {
	rt.mu.Lock()
	list := make([]*session, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		list = append(list, s)
	}
	rt.mu.Unlock()
	type keyed struct {
		s       *session
		created int64
	}
	ks := make([]keyed, 0, len(list))
	for _, s := range list {
		s.mu.Lock()
		id, created := s.rec.ID, s.rec.CreatedAtMS
		s.mu.Unlock()
		if id != "" {
			ks = append(ks, keyed{s, created})
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].created != ks[j].created {
			return ks[i].created < ks[j].created
		}
		return ks[i].s.uid < ks[j].s.uid
	})
	out := make([]*session, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	return out
}

// allDoc is an all:true document under construction.
type allDoc struct {
	buckets []rpc.FetchSession
	gaps    []rpc.Gap
	next    *allMark
	hasMore bool
	gap     bool
}

func (rt *runtime) allDocument(a *allDoc, reason string, cursor uint64) *rpc.FetchDocument {
	return rt.newDocument(reason, a.hasMore, a.gaps, cursor, a.buckets)
}

// fetchAll is session.fetch with all:true. It pages at 32 Sessions and
// rejects screen aggregation and until:"result".
func (rt *runtime) fetchAll(ctx context.Context, fr *fetchReq) (any, error) {
	if fr.untilRes {
		return nil, rpc.InvalidField("until", "all:true does not support until:\"result\"")
	}
	if fr.screenSet {
		return nil, rpc.InvalidField("screen", "all:true does not aggregate screens; fetch one Session for its screen")
	}
	fr.screen = false
	var pos *position
	if fr.hasCursor {
		p, err := rt.positions.get(allScope, fr.cursor)
		if err != nil {
			return nil, err
		}
		pos = p
	}
	var deadline <-chan time.Time
	if fr.wait > 0 {
		t := time.NewTimer(fr.wait)
		defer t.Stop()
		deadline = t.C
	}
	expired := false
	for {
		rt.mu.Lock()
		changed := rt.allChanged
		rt.mu.Unlock()
		list := rt.stateful()
		if len(list) > fetchAllSessions {
			return nil, rpc.InvalidField("all", "this daemon holds %d Sessions with state, more than the %d one all:true position addresses; fetch one Session at a time", len(list), fetchAllSessions)
		}
		nextN, nextPos := uint64(0), (*position)(nil)
		if pos != nil {
			nextN, nextPos = rt.positions.successor(allScope, pos)
		}
		var upto *allMark
		if nextPos != nil {
			upto = nextPos.all
		}
		if pos == nil || pos.all.enumerating {
			a, err := fit(fr, func(fr *fetchReq) (*allDoc, error) { return rt.enumPage(list, pos, upto, fr) })
			if err != nil {
				return nil, err
			}
			var cursor uint64
			if upto != nil && sameAllMark(a.next, upto) {
				cursor = nextN
			} else {
				cursor = rt.positions.advance(allScope, pos, &position{all: a.next})
			}
			return rt.allDocument(a, rpc.ReasonSnapshot, cursor), nil
		}
		a, err := fit(fr, func(fr *fetchReq) (*allDoc, error) { return rt.allDelta(list, pos.all, upto, fr) })
		if err != nil {
			return nil, err
		}
		advanced := !sameAllMark(a.next, pos.all)
		if !(a.hasMore || advanced) && deadline != nil {
			if _, err := waitChange(ctx, changed, &deadline, &expired); err != nil {
				return nil, err
			}
			continue
		}
		reason := rpc.ReasonTimeout
		switch {
		case a.gap:
			reason = rpc.ReasonGap
		case a.hasMore:
			reason = rpc.ReasonPageFull
		case len(a.buckets) > 0 && anyResults(a.buckets):
			reason = rpc.ReasonResult
		case advanced:
			reason = rpc.ReasonChange
		}
		cursor := fr.cursor
		if advanced {
			if upto != nil && sameAllMark(a.next, upto) {
				cursor = nextN
			} else {
				cursor = rt.positions.advance(allScope, pos, &position{all: a.next})
			}
		}
		return rt.allDocument(a, reason, cursor), nil
	}
}

func anyResults(bs []rpc.FetchSession) bool {
	for _, b := range bs {
		if len(b.Results) > 0 {
			return true
		}
	}
	return false
}

func sameAllMark(a, b *allMark) bool {
	if a.enumerating != b.enumerating || !slices.Equal(a.enum, b.enum) || len(a.marks) != len(b.marks) {
		return false
	}
	for k, v := range a.marks {
		if w, ok := b.marks[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// enumPage is one page of the cursorless all:true enumeration: a baseline
// bucket for each of the next (up to 32) Sessions.
func (rt *runtime) enumPage(list []*session, pos *position, upto *allMark, fr *fetchReq) (*allDoc, error) {
	byUID := map[string]*session{}
	for _, s := range list {
		byUID[s.uid] = s
	}
	next := &allMark{marks: map[string]sessionMark{}, enumerating: true}
	var todo []string
	if pos == nil {
		for _, s := range list {
			todo = append(todo, s.uid)
		}
	} else {
		for uid, m := range pos.all.marks {
			if byUID[uid] != nil {
				next.marks[uid] = m
			}
		}
		for _, uid := range pos.all.enum {
			if byUID[uid] != nil {
				todo = append(todo, uid)
			}
		}
	}
	a := &allDoc{next: next}
	room := fr.budget - rt.worstSize(nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	taken := 0
	nres := 0
	for _, uid := range todo {
		s := byUID[uid]
		if taken == fetchAllPage {
			break
		}
		if upto != nil {
			if _, ok := upto.marks[uid]; !ok {
				break // the replayed page ended here
			}
		}
		b, _ := rt.sessionBucket(s, sessionMark{}, fr, false)
		cost := jsonLen(b) + boolInt(taken > 0)
		if cost > room {
			break
		}
		s.mu.Lock()
		mark := rt.currentMarkLocked(s)
		s.mu.Unlock()
		var um *sessionMark
		if upto != nil {
			m := upto.marks[uid]
			um = &m
			mark = m
		}
		r := room - cost
		more := false
		if nres < fetchMaxResults || taken == 0 {
			if err := rt.baselineResult(s, &mark, um, &b, &r, &more); err != nil {
				return nil, err
			}
		} else if res, _ := rt.resultAtOrBefore(s, mark.Result); res != nil {
			break // this Session's result belongs on the next page
		}
		if more && taken > 0 && len(b.Results) == 0 {
			break // its result does not fit here; it leads the next page
		}
		nres += len(b.Results)
		room = r
		a.buckets = append(a.buckets, b)
		next.marks[uid] = mark
		taken++
		if more {
			a.hasMore = true
		}
	}
	if taken == 0 && len(todo) > 0 {
		return nil, errTooSmall
	}
	next.enum = append([]string{}, todo[taken:]...)
	if len(next.enum) > 0 {
		a.hasMore = true
	} else {
		next.enum, next.enumerating = nil, false
		// The enumeration is over, but a result an earlier page delivered
		// only in part (or deferred) is data beyond the cursor too.
		owed, err := rt.resultsOwed(next.marks)
		if err != nil {
			return nil, err
		}
		a.hasMore = a.hasMore || owed
	}
	if rt.worstSize(a.gaps, a.buckets) > fr.budget {
		return nil, errTooSmall
	}
	return a, nil
}

// resultsOwed reports whether any Session of marks has a retained result
// beyond its mark: a final_text delivered only in part, or a result left for
// a later page.
func (rt *runtime) resultsOwed(marks map[string]sessionMark) (bool, error) {
	for uid, m := range marks {
		if m.TextOff > 0 {
			return true, nil
		}
		rs, err := rt.db.ListResults(uid, m.Result, 1)
		if err != nil {
			return false, err
		}
		if len(rs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// allPending is one Session's unread state in an all:true delta.
type allPending struct {
	s       *session
	from    sessionMark
	upto    *sessionMark
	events  []store.Event
	results []store.Result
	gaps    []rpc.Gap
	top     []rpc.Gap
	first   uint64 // seq of its first pending event, or max
}

// allDelta returns the Sessions that changed since prev: events as one
// strictly ascending prefix across Sessions, then results.
func (rt *runtime) allDelta(list []*session, prev, upto *allMark, fr *fetchReq) (*allDoc, error) {
	next := &allMark{marks: map[string]sessionMark{}}
	var pend []*allPending
	for _, s := range list {
		from := prev.marks[s.uid]
		next.marks[s.uid] = from
		p := &allPending{s: s, from: from, first: ^uint64(0)}
		if upto != nil {
			if m, ok := upto.marks[s.uid]; ok {
				p.upto = &m
			} else {
				p.upto = &from
			}
		}
		// all:true carries no screen, so row eviction is no gap for it.
		p.gaps, p.top = rt.gapsFor(s, from, false)
		if len(p.gaps)+len(p.top) > 0 {
			p.first = 0
			pend = append(pend, p)
			continue
		}
		evs, err := rt.db.ReadEvents(from.Event, fetchMaxEvents+1, s.uid)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if p.upto != nil && e.Seq > p.upto.Event {
				break
			}
			p.events = append(p.events, e)
		}
		rs, err := rt.db.ListResults(s.uid, from.Result, fetchMaxResults+1)
		if err != nil {
			return nil, err
		}
		p.results = rs
		if len(p.events) > 0 {
			p.first = p.events[0].Seq
		}
		if len(p.events) > 0 || len(p.results) > 0 {
			pend = append(pend, p)
		}
	}
	// Sessions with the earliest pending events lead the page.
	sort.SliceStable(pend, func(i, j int) bool { return pend[i].first < pend[j].first })
	a := &allDoc{next: next}
	everyone := pend
	if len(pend) > fetchAllPage {
		pend, a.hasMore = pend[:fetchAllPage], true
	}
	room := fr.budget - rt.worstSize(nil, nil)
	if room < minChunk {
		return nil, errTooSmall
	}
	type slot struct {
		p *allPending
		b rpc.FetchSession
		m sessionMark
	}
	var slots []*slot
	included := map[*session]*slot{}
	for _, p := range pend {
		b, _ := rt.sessionBucket(p.s, p.from, fr, false)
		sl := &slot{p: p, b: b, m: p.from}
		if len(p.gaps)+len(p.top) > 0 {
			// A gap: a bounded baseline for this Session, fresh marks.
			p.s.mu.Lock()
			sl.m = rt.currentMarkLocked(p.s)
			p.s.mu.Unlock()
			if p.gaps != nil {
				sl.b.Gaps = p.gaps
			}
		}
		cost := jsonLen(sl.b) + boolInt(len(slots) > 0)
		if cost+minChunk/2 > room {
			a.hasMore = true
			break
		}
		room -= cost
		if len(p.gaps)+len(p.top) > 0 {
			a.gap = true
			for _, g := range p.top {
				if !slices.Contains(a.gaps, g) {
					c := jsonLen(g) + boolInt(len(a.gaps) > 0)
					room -= c
					a.gaps = append(a.gaps, g)
				}
			}
			more := false
			if err := rt.baselineResult(p.s, &sl.m, nil, &sl.b, &room, &more); err != nil {
				return nil, err
			}
			a.hasMore = a.hasMore || more
		}
		slots = append(slots, sl)
		included[p.s] = sl
	}
	// Events: one ascending prefix of everything pending, stopping at the
	// first event of a Session not on this page.
	var all []store.Event
	owner := map[uint64]*allPending{}
	for _, p := range everyone {
		for _, e := range p.events {
			all = append(all, e)
			owner[e.Seq] = p
		}
	}
	// Pending events of Sessions not on the page bound the prefix too.
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq })
	limit := ^uint64(0)
	for _, p := range everyone {
		if len(p.events) == fetchMaxEvents+1 || (p.upto == nil && len(p.events) > fetchMaxEvents) {
			limit = min(limit, p.events[len(p.events)-1].Seq)
		}
	}
	nev := 0
	full := false
	for _, e := range all {
		if e.Seq >= limit {
			full = true
			break
		}
		sl := included[owner[e.Seq].s]
		if sl == nil || nev == fetchMaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			sl.m.Event = e.Seq
			continue
		}
		c := jsonLen(ev) + boolInt(len(sl.b.Events) > 0)
		if c > room {
			full = true
			break
		}
		room -= c
		sl.b.Events = append(sl.b.Events, ev)
		sl.m.Event = e.Seq
		nev++
	}
	// Results, page order.
	nres := 0
	for _, sl := range slots {
		if len(sl.p.gaps)+len(sl.p.top) > 0 {
			continue
		}
		cut, rfull := false, false
		rt.addResults(sl.p.results, sl.p.from, sl.p.upto, &sl.m, &sl.b.Results, &nres, &room, &rfull, &cut)
		if rfull {
			full = true
			if nres >= fetchMaxResults {
				break
			}
		}
	}
	// Buckets that did not advance are dropped; the rest commit.
	for _, sl := range slots {
		if sl.m == sl.p.from && len(sl.p.gaps)+len(sl.p.top) == 0 {
			if len(sl.p.events) > 0 || len(sl.p.results) > 0 {
				a.hasMore = true
			}
			continue
		}
		a.buckets = append(a.buckets, sl.b)
		next.marks[sl.p.s.uid] = sl.m
		// Anything of this Session left unread?
		if len(sl.p.events) > 0 && sl.m.Event < sl.p.events[len(sl.p.events)-1].Seq {
			a.hasMore = true
		}
		if len(sl.p.results) > 0 && (sl.m.Result < sl.p.results[len(sl.p.results)-1].Seq) && (sl.p.upto == nil || sl.m != *sl.p.upto) {
			a.hasMore = true
		}
	}
	for _, p := range everyone {
		if included[p.s] == nil {
			a.hasMore = true
		}
	}
	if full {
		a.hasMore = true
	}
	if a.hasMore && sameAllMark(next, prev) {
		return nil, errTooSmall
	}
	if rt.worstSize(a.gaps, a.buckets) > fr.budget {
		return nil, errTooSmall
	}
	return a, nil
}
