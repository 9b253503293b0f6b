package spares

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// item is a fake spare: its launch waits for start (nil: ready at once).
type item struct {
	n     int
	start chan error
	unfit string
}

// fake is a Launcher that records what the pool asked of it.
type fake struct {
	mu       sync.Mutex
	made     int
	makeErr  error
	launch   error // every launch's result when no start channel
	gate     bool  // launches wait on their item's start channel
	unfit    string
	items    []*item
	retired  map[int]bool
	canceled map[int]bool
	handles  map[int]*Spare[*item]
}

func newFake() *fake {
	return &fake{retired: map[int]bool{}, canceled: map[int]bool{}, handles: map[int]*Spare[*item]{}}
}

func (f *fake) Make(sp *Spare[*item]) (*item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.makeErr != nil {
		return nil, f.makeErr
	}
	f.made++
	it := &item{n: f.made, start: make(chan error, 1), unfit: f.unfit}
	f.items = append(f.items, it)
	f.handles[it.n] = sp
	return it, nil
}

func (f *fake) Launch(ctx context.Context, it *item) error {
	f.mu.Lock()
	gate, err := f.gate, f.launch
	f.mu.Unlock()
	if !gate {
		return err
	}
	select {
	case err := <-it.start:
		return err
	case <-ctx.Done():
		f.mu.Lock()
		f.canceled[it.n] = true
		f.mu.Unlock()
		return ctx.Err()
	}
}

func (f *fake) Unfit(it *item) string { return it.unfit }

func (f *fake) Retire(it *item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retired[it.n] = true
}

func (f *fake) count(m map[int]bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(m)
}

func (f *fake) madeN() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.made
}

// eventually polls cond until it holds, failing after a generous wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newPool(t *testing.T) *Pool[*item] {
	p := New[*item](Config{RefillDelay: time.Millisecond})
	t.Cleanup(p.Stop)
	return p
}

func ready(p *Pool[*item]) int {
	_, h := p.Status()
	return len(h.Ready)
}

func TestClaimTakesAReadySpareAndRefills(t *testing.T) {
	p, f := newPool(t), newFake()
	if _, err := p.Warm("a", "fake", 2, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two spares ready", func() bool { return ready(p) == 2 })
	it, ok := p.Claim("a")
	if !ok || it == nil {
		t.Fatalf("claim of a warm shape found nothing")
	}
	if f.count(f.retired) != 0 {
		t.Fatalf("a claimed spare was retired")
	}
	// The claimed spare is the caller's; a replacement takes its place.
	eventually(t, "the replacement", func() bool { return f.madeN() == 3 && ready(p) == 2 })
	_, held := p.Status()
	for _, r := range held.Ready {
		if r == it {
			t.Fatalf("the claimed spare is still held")
		}
	}
	if _, ok := p.Claim("b"); ok {
		t.Fatalf("a claim of another shape got a spare")
	}
	st, _ := p.Status()
	if st != (Stats{Claims: 1, ShapeMisses: 1}) {
		t.Fatalf("stats = %+v, want one claim and one shape miss", st)
	}
}

func TestClaimMissesWhileStarting(t *testing.T) {
	p, f := newPool(t), newFake()
	f.gate = true
	h, err := p.Warm("a", "fake", 1, time.Hour, f)
	if err != nil {
		t.Fatal(err)
	}
	if h.Starting != 1 || len(h.Ready) != 0 {
		t.Fatalf("held = %+v, want one starting", h)
	}
	if _, ok := p.Claim("a"); ok {
		t.Fatalf("a claim took a spare still starting")
	}
	if st, _ := p.Status(); st.Misses != 1 {
		t.Fatalf("stats = %+v, want one miss", st)
	}
}

func TestWarmBounds(t *testing.T) {
	p, f := newPool(t), newFake()
	var e *rpc.Error
	if _, err := p.Warm("a", "fake", MaxPerShape+1, time.Hour, f); !errors.As(err, &e) || e.Field != "spares" {
		t.Fatalf("more than MaxPerShape: %v, want an error on spares", err)
	}
	for i := range MaxTotal / MaxPerShape {
		if _, err := p.Warm(fmt.Sprint(i), "fake", MaxPerShape, time.Hour, f); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every spare ready", func() bool { return ready(p) == MaxTotal })
	if _, err := p.Warm("more", "fake", 1, time.Hour, f); !errors.As(err, &e) || e.Field != "spares" {
		t.Fatalf("beyond MaxTotal: %v, want an error on spares", err)
	}
	if f.madeN() != MaxTotal {
		t.Fatalf("%d spares made, want %d", f.madeN(), MaxTotal)
	}
	// Warming a shape to fewer retires the extra.
	if _, err := p.Warm("0", "fake", 1, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	if n := f.count(f.retired); n != MaxPerShape-1 {
		t.Fatalf("%d retired, want %d", n, MaxPerShape-1)
	}
}

func TestFailingShapeStopsRefilling(t *testing.T) {
	p, f := newPool(t), newFake()
	f.launch = errors.New("no binary")
	if _, err := p.Warm("a", "fake", MaxPerShape, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed launches retired", func() bool { return f.count(f.retired) == MaxPerShape })
	f.mu.Lock()
	f.launch = nil
	f.mu.Unlock()
	p.mu.Lock()
	sh := p.shapes["a"]
	last := sh.lastErr
	p.fillLocked(sh) // what an exit or a claim's refill would do
	p.mu.Unlock()
	if last != "no binary" {
		t.Fatalf("last error %q, want the launch's", last)
	}
	if n := f.madeN(); n != MaxPerShape {
		t.Fatalf("a shape that failed %d times in a row made %d spares, want no more", MaxPerShape, n-MaxPerShape)
	}
	// Warming it again tries again.
	if _, err := p.Warm("a", "fake", 1, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a ready spare after a new warm", func() bool { return ready(p) == 1 })
}

func TestMakeFailureCounts(t *testing.T) {
	p, f := newPool(t), newFake()
	f.makeErr = errors.New("disk full")
	h, err := p.Warm("a", "fake", 2, time.Hour, f)
	if err != nil {
		t.Fatal(err)
	}
	if h.LastErr != "disk full" || h.Starting != 0 {
		t.Fatalf("held = %+v, want the make error and nothing starting", h)
	}
}

func TestIdleShapeExpires(t *testing.T) {
	p, f := newPool(t), newFake()
	if _, err := p.Warm("a", "fake", 2, 20*time.Millisecond, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both spares retired", func() bool { return f.count(f.retired) == 2 })
	if _, ok := p.Claim("a"); ok {
		t.Fatalf("an expired shape handed out a spare")
	}
	if st, h := p.Status(); len(h.Ready) != 0 || h.Starting != 0 || st.ShapeMisses != 0 {
		t.Fatalf("after expiry: %+v %+v, want nothing held (and no shape to miss)", st, h)
	}
}

func TestStopRetiresReadyAndCancelsStarting(t *testing.T) {
	p := New[*item](Config{})
	f := newFake()
	if _, err := p.Warm("a", "fake", 1, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a ready spare", func() bool { return ready(p) == 1 })
	f.mu.Lock()
	f.gate = true
	f.mu.Unlock()
	if _, err := p.Warm("b", "fake", 1, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	eventually(t, "the starting launch canceled", func() bool { return f.count(f.canceled) == 1 })
	eventually(t, "both retired", func() bool { return f.count(f.retired) == 2 })
	if _, err := p.Warm("a", "fake", 1, time.Hour, f); err == nil {
		t.Fatalf("a stopped pool took a warm")
	}
	if _, ok := p.Claim("a"); ok {
		t.Fatalf("a stopped pool handed out a spare")
	}
}

func TestUnfitSpareIsRetiredNotHandedOut(t *testing.T) {
	p, f := newPool(t), newFake()
	f.unfit = "binary changed"
	if _, err := p.Warm("a", "fake", 1, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a ready spare", func() bool { return ready(p) == 1 })
	if _, ok := p.Claim("a"); ok {
		t.Fatalf("an unfit spare was handed out")
	}
	if f.count(f.retired) != 1 {
		t.Fatalf("the unfit spare was not retired")
	}
	if st, _ := p.Status(); st.Claims != 0 {
		t.Fatalf("stats = %+v, want no claim", st)
	}
}

func TestExitedSpareIsReplaced(t *testing.T) {
	p, f := newPool(t), newFake()
	if _, err := p.Warm("a", "fake", 1, time.Hour, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a ready spare", func() bool { return ready(p) == 1 })
	f.mu.Lock()
	h := f.handles[1]
	f.mu.Unlock()
	cleaned := 0
	p.Exited(h, "killed", func() { cleaned++ })
	if cleaned != 1 {
		t.Fatalf("cleanup ran %d times, want once", cleaned)
	}
	eventually(t, "a replacement", func() bool { return f.madeN() == 2 && ready(p) == 1 })
	// An exit of a spare no longer held (claimed) is not the pool's.
	f.mu.Lock()
	h2 := f.handles[2]
	f.mu.Unlock()
	if _, ok := p.Claim("a"); !ok {
		t.Fatalf("no claim")
	}
	p.Exited(h2, "exited", func() { cleaned++ })
	if cleaned != 1 {
		t.Fatalf("cleanup ran for a claimed spare")
	}
}
