// The long-poll parking lot: long polls parked on the same position,
// bounds and change share one evaluation, made by one goroutine when the
// change comes.

package daemon

import (
	"log/slog"
	"sync"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
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

// allShareKey names the evaluation that all:true long polls woken by one
// change share: from one position, under one max_bytes (all:true takes no
// screen, so nothing else of a request shapes its document).
type allShareKey struct {
	pos      *positions.Position
	maxBytes int
	wokeFrom <-chan struct{}
}

// allShareMax bounds the evaluations held for one change.
const allShareMax = 256

// allShares holds the evaluations all:true long polls woken by the latest
// change share: a thousand such long polls on one position cost one
// evaluation and one encoding per distinct document, as the single-Session
// ones do (fetchShares). Entries of an older change are dropped when a
// newer one is first evaluated. The zero value is ready.
type allShares struct {
	mu  sync.Mutex
	gen <-chan struct{}
	by  map[allShareKey]*allShare
}

// allShare is one shared all:true evaluation and its sealed documents.
type allShare struct {
	once  sync.Once
	a     *fetchdoc.AllDoc
	err   error
	docMu sync.Mutex
	docs  []*rpc.FetchDocument
}

func (as *allShares) get(k allShareKey) *allShare {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.gen != k.wokeFrom {
		as.gen, as.by = k.wokeFrom, map[allShareKey]*allShare{}
	}
	sh := as.by[k]
	if sh == nil {
		sh = &allShare{}
		if len(as.by) < allShareMax {
			as.by[k] = sh
		}
	}
	return sh
}

// eval makes the evaluation once; every caller gets it.
func (sh *allShare) eval(f func() (*fetchdoc.AllDoc, error)) (*fetchdoc.AllDoc, error) {
	sh.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				sh.a, sh.err = nil, rpc.Errorf(rpc.CodeInternal, "evaluating position failed: %v", r)
			}
		}()
		sh.a, sh.err = f()
	})
	return sh.a, sh.err
}

// document is a.document, rendered and sealed once per reason and cursor.
func (sh *allShare) document(env rpc.Runtime, reason string, cursor uint64) *rpc.FetchDocument {
	c := rpc.FormatPosition(cursor)
	sh.docMu.Lock()
	defer sh.docMu.Unlock()
	for _, doc := range sh.docs {
		if doc.Reason == reason && doc.Cursor == c {
			return doc
		}
	}
	doc := sh.a.Document(env, reason, cursor)
	doc.Seal()
	sh.docs = append(sh.docs, doc)
	return doc
}

// fetchPositions is the positions table with the renderings long polls
// share: shares those of long polls woken by a change, allShares those of
// all:true long polls.
type fetchPositions struct {
	*positions.Table
	shares    fetchShares
	allShares allShares
}

func newPositions(db *store.DB, log *slog.Logger) *fetchPositions {
	return &fetchPositions{Table: positions.New(db, log), shares: fetchShares{by: map[string]map[shareKey]*shareEntry{}}}
}
