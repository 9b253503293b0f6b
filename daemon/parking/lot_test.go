package parking

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type key struct {
	pos  int
	woke <-chan struct{}
}

// Waiters of one key share one evaluation made after the change; the
// last to leave before it abandons the key; a waiter parking after the
// change is evaluated at once.
func TestLotSharesOneEvaluation(t *testing.T) {
	var l Lot[key, int, int64]
	changed := make(chan struct{})
	k := key{1, changed}
	var evals atomic.Int64
	eval := func() int64 {
		select {
		case <-changed:
		default:
			t.Error("evaluated before the change")
		}
		return evals.Add(1)
	}
	var mu sync.Mutex
	got := map[int]int64{}
	done := make(chan struct{}, 100)
	hand := func(w int, r int64) {
		mu.Lock()
		got[w] = r
		mu.Unlock()
		done <- struct{}{}
	}

	ea := l.Park("s", k, changed, 1, eval, hand)
	if eb := l.Park("s", k, changed, 2, eval, hand); eb != ea {
		t.Fatal("two waiters of one key got two entries")
	}
	if !l.Unpark("s", k, ea, 1) || l.Len("s") != 1 {
		t.Fatal("abandoned while a waiter remained")
	}
	l.Unpark("s", k, ea, 2)
	select {
	case <-ea.Abandoned():
	case <-time.After(10 * time.Second):
		t.Fatal("not abandoned after the last waiter left")
	}
	if l.Len("s") != 0 {
		t.Fatal("an abandoned key is still parked")
	}

	var e *Entry[int]
	for w := range 50 {
		e = l.Park("s", k, changed, 100+w, eval, hand)
	}
	close(changed)
	for range 50 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter was not handed the evaluation")
		}
	}
	mu.Lock()
	for w := range 50 {
		if got[100+w] != 1 {
			t.Errorf("waiter %d handed %d, want the one evaluation", w, got[100+w])
		}
	}
	mu.Unlock()
	if evals.Load() != 1 || l.Len("s") != 0 || l.Unpark("s", k, e, 100) {
		t.Errorf("%d evaluations, %d parked, a fired entry unparked", evals.Load(), l.Len("s"))
	}

	l.Park("s", k, changed, 7, eval, hand)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter parked after its change was not answered")
	}
	mu.Lock()
	defer mu.Unlock()
	if got[7] != 2 {
		t.Errorf("the late waiter was handed %d, want an evaluation of its own", got[7])
	}
}
