package daemon

import (
	"sync"

	"dlgt/rpc"
)

// Position retention bounds of the contract. They are variables so tests
// can lower them.
var (
	positionsPerSession = 64
	positionsAll        = 256
	positionsTotal      = 4096
)

// sessionMark is the watermark vector of one Session: how far a reader
// has received each component. Offsets record a partially delivered
// final_text or stable row.
type sessionMark struct {
	Event   uint64 // last global event seq delivered for this Session
	Result  uint64 // last execution seq whose result was delivered whole
	TextOff int    // bytes of result Result+1's final_text delivered
	Row     uint64 // last stable row id delivered whole
	RowOff  int    // bytes of row Row+1 delivered
	Epoch   uint64 // screen epoch the reader has seen
}

// allMark is the watermark state of an all:true position: one mark per
// Session that still exists and carries state, and, while the cursorless
// enumeration is in progress, the Sessions still to enumerate.
type allMark struct {
	marks       map[string]sessionMark // by Session uid; never mutated after minting
	enumerating bool
	enum        []string // uids still to enumerate, in order
}

// position is one minted, immutable observation point.
type position struct {
	mark sessionMark
	all  *allMark // for the all scope
	// next is the position minted by the first advancing fetch from this
	// one; replays are bounded by its mark, so they return the same window.
	// Guarded by positions.mu.
	next    uint64
	nextSet bool
}

type scopeKey struct {
	scope string // a Session uid, or allScope
	n     uint64
}

const allScope = "*all"

// positions mints and retains fetch positions per scope. Each scope
// numbers independently; the oldest positions are dropped beyond the
// per-scope and global caps.
type positions struct {
	// mu guards the fields that follow.
	mu    sync.Mutex
	last  map[string]uint64
	held  map[scopeKey]*position
	order map[string][]uint64 // per scope, oldest first
	fifo  []scopeKey          // global, oldest first

	// shares holds the renderings long-polls woken by a change share.
	shares fetchShares
}

func newPositions() *positions {
	return &positions{last: map[string]uint64{}, held: map[scopeKey]*position{}, order: map[string][]uint64{},
		shares: fetchShares{by: map[string]map[shareKey]*shareEntry{}}}
}

func (ps *positions) mintSession(uid string, m sessionMark) uint64 {
	return ps.mint(uid, &position{mark: m})
}

func (ps *positions) mint(scope string, p *position) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mintLocked(scope, p)
}

func (ps *positions) mintLocked(scope string, p *position) uint64 {
	ps.last[scope]++
	n := ps.last[scope]
	k := scopeKey{scope, n}
	ps.held[k] = p
	ps.order[scope] = append(ps.order[scope], n)
	ps.fifo = append(ps.fifo, k)
	limit := positionsPerSession
	if scope == allScope {
		limit = positionsAll
	}
	for len(ps.order[scope]) > limit {
		delete(ps.held, scopeKey{scope, ps.order[scope][0]})
		ps.order[scope] = ps.order[scope][1:]
	}
	for len(ps.held) > positionsTotal && len(ps.fifo) > 0 {
		old := ps.fifo[0]
		ps.fifo = ps.fifo[1:]
		if _, ok := ps.held[old]; ok {
			delete(ps.held, old)
			o := ps.order[old.scope]
			for i, v := range o {
				if v == old.n {
					ps.order[old.scope] = append(o[:i:i], o[i+1:]...)
					break
				}
			}
		}
	}
	// Keep the FIFO from growing with entries already dropped per scope.
	if len(ps.fifo) > 2*positionsTotal {
		kept := ps.fifo[:0]
		for _, k := range ps.fifo {
			if _, ok := ps.held[k]; ok {
				kept = append(kept, k)
			}
		}
		ps.fifo = kept
	}
	return n
}

// get resolves (scope, n). A number never minted, or dropped, is
// CURSOR_EXPIRED.
func (ps *positions) get(scope string, n uint64) (*position, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.held[scopeKey{scope, n}]
	if !ok {
		if n > ps.last[scope] || n == 0 {
			return nil, rpc.Errorf(rpc.CodeCursorExpired, "this daemon has not minted position %d", n)
		}
		return nil, rpc.Errorf(rpc.CodeCursorExpired, "this daemon no longer holds position %d", n)
	}
	return p, nil
}

// successor returns the position the first advancing fetch from p minted,
// if it is still held: a replay of p is bounded by it.
func (ps *positions) successor(scope string, p *position) (uint64, *position) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !p.nextSet {
		return 0, nil
	}
	np, ok := ps.held[scopeKey{scope, p.next}]
	if !ok {
		return 0, nil
	}
	return p.next, np
}

// advance mints next (the position a fetch from `from` reached) and links
// it as from's successor unless another fetch already did.
func (ps *positions) advance(scope string, from, next *position) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := ps.mintLocked(scope, next)
	if from != nil && !from.nextSet {
		from.next, from.nextSet = n, true
	}
	return n
}

// shareKey names one shared evaluation: of a position, under the request
// bounds that shape the document (the rest of a request only decides when
// to answer and with which reason), made after the change that closes
// wokeFrom. solo (benchmarks, fetchShareWakes off) gives a long poll an
// evaluation of its own.
type shareKey struct {
	pos       *position
	screen    bool
	stableCap int
	maxBytes  int
	wokeFrom  <-chan struct{}
	solo      *longPoll
}

// fetchShares is where long polls wait. The long polls parked under one
// key share one evaluation: a goroutine of the key waits for the change,
// evaluates, and hands the evaluation to each of them in turn. A thousand
// long polls answered by one Stop thus cost one rendering, one encoding
// (stepResult.document) and one goroutine wake-up, not a thousand.
type fetchShares struct {
	mu sync.Mutex
	by map[string]map[shareKey]*shareEntry // awaiting their change, by scope
}

// shareEntry is one key's parked long polls. Once fired (the change
// came) it is out of the map and its waiters are its goroutine's alone.
type shareEntry struct {
	waiters map[*longPoll]struct{}
	fired   bool
	abandon chan struct{} // closed when the last waiter left before the change
}

// park adds lp to k's waiters; the first waiter's eval makes the
// evaluation. lp.mu held.
func (fs *fetchShares) park(scope string, k shareKey, lp *longPoll, eval func(*stepResult)) *shareEntry {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	m := fs.by[scope]
	if e := m[k]; e != nil {
		e.waiters[lp] = struct{}{}
		return e
	}
	if m == nil {
		m = map[shareKey]*shareEntry{}
		fs.by[scope] = m
	}
	e := &shareEntry{waiters: map[*longPoll]struct{}{lp: {}}, abandon: make(chan struct{})}
	m[k] = e
	go fs.evaluate(scope, k, e, eval)
	return e
}

// evaluate waits for k's change, then evaluates and hands the result to
// every waiter. A long poll that parks under k after the change starts
// an evaluation of its own (made at once, as its change has happened).
func (fs *fetchShares) evaluate(scope string, k shareKey, e *shareEntry, eval func(*stepResult)) {
	select {
	case <-k.wokeFrom:
	case <-e.abandon:
		return
	}
	fs.mu.Lock()
	e.fired = true
	if fs.by[scope][k] == e {
		fs.forgetLocked(scope, k)
	}
	fs.mu.Unlock()
	st := &stepResult{shared: true}
	func() {
		defer func() {
			if r := recover(); r != nil {
				st.d, st.err = nil, rpc.Errorf(rpc.CodeInternal, "evaluating position failed: %v", r)
			}
		}()
		eval(st)
	}()
	for lp := range e.waiters {
		lp.onStep(st)
	}
}

// unpark takes lp out of e unless e already fired (its evaluation is
// being handed out); the last waiter to leave abandons e. lp.mu held.
func (fs *fetchShares) unpark(scope string, k shareKey, e *shareEntry, lp *longPoll) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if e.fired {
		return false
	}
	delete(e.waiters, lp)
	if len(e.waiters) == 0 {
		if fs.by[scope][k] == e {
			fs.forgetLocked(scope, k)
		}
		close(e.abandon)
	}
	return true
}

func (fs *fetchShares) forgetLocked(scope string, k shareKey) {
	m := fs.by[scope]
	delete(m, k)
	if len(m) == 0 {
		delete(fs.by, scope)
	}
}
