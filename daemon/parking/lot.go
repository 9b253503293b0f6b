package parking

import "sync"

// Lot is where waiters W park for the evaluation R of a key K, by scope
// (the daemon's: a Session's uid). The waiters parked under one key share
// one evaluation: a goroutine of the key waits for the change, evaluates,
// and hands the evaluation to each of them in turn. A thousand long polls
// answered by one change thus cost one evaluation and one goroutine
// wake-up, not a thousand. The zero value is ready.
type Lot[K comparable, W comparable, R any] struct {
	mu sync.Mutex
	by map[string]map[K]*Entry[W] // awaiting their change, by scope
}

// Entry is one key's parked waiters. Once fired (the change came) it is
// out of the lot and its waiters are its goroutine's alone.
type Entry[W comparable] struct {
	waiters map[W]struct{}
	fired   bool
	abandon chan struct{} // closed when the last waiter left before the change
}

// Abandoned is closed once the last waiter left before the change.
func (e *Entry[W]) Abandoned() <-chan struct{} { return e.abandon }

// Park adds w to k's waiters. The first waiter's eval makes the
// evaluation once woke is closed, and hand gives it to every waiter then
// parked (outside the lot's lock). A waiter that parks under k after the
// change starts an evaluation of its own (made at once, as its change
// has happened).
func (l *Lot[K, W, R]) Park(scope string, k K, woke <-chan struct{}, w W, eval func() R, hand func(W, R)) *Entry[W] {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.by[scope]
	if e := m[k]; e != nil {
		e.waiters[w] = struct{}{}
		return e
	}
	if l.by == nil {
		l.by = map[string]map[K]*Entry[W]{}
	}
	if m == nil {
		m = map[K]*Entry[W]{}
		l.by[scope] = m
	}
	e := &Entry[W]{waiters: map[W]struct{}{w: {}}, abandon: make(chan struct{})}
	m[k] = e
	go l.evaluate(scope, k, e, woke, eval, hand)
	return e
}

// evaluate waits for k's change, then evaluates and hands the result to
// every waiter.
func (l *Lot[K, W, R]) evaluate(scope string, k K, e *Entry[W], woke <-chan struct{}, eval func() R, hand func(W, R)) {
	select {
	case <-woke:
	case <-e.abandon:
		return
	}
	l.mu.Lock()
	select {
	case <-e.abandon:
		// Abandoned as its change came (both ready to the select): no
		// waiter is left to hand an evaluation to, so none is made.
		l.mu.Unlock()
		return
	default:
	}
	e.fired = true
	if l.by[scope][k] == e {
		l.forgetLocked(scope, k)
	}
	l.mu.Unlock()
	r := eval()
	for w := range e.waiters {
		hand(w, r)
	}
}

// Unpark takes w out of e unless e already fired (its evaluation is
// being handed out); the last waiter to leave abandons e.
func (l *Lot[K, W, R]) Unpark(scope string, k K, e *Entry[W], w W) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.fired {
		return false
	}
	delete(e.waiters, w)
	if len(e.waiters) == 0 {
		if l.by[scope][k] == e {
			l.forgetLocked(scope, k)
		}
		close(e.abandon)
	}
	return true
}

// Len is how many keys of scope have waiters awaiting their change.
func (l *Lot[K, W, R]) Len(scope string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by[scope])
}

func (l *Lot[K, W, R]) forgetLocked(scope string, k K) {
	m := l.by[scope]
	delete(m, k)
	if len(m) == 0 {
		delete(l.by, scope)
	}
}
