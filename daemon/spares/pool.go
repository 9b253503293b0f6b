package spares

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

const (
	// MaxPerShape bounds one shape's spares, MaxTotal every shape's.
	MaxPerShape = 4
	MaxTotal    = 8
	// MaxFailures stops refilling a shape whose spare launches failed
	// this many times in a row (a missing binary, a sign-in screen): a
	// broken shape must not relaunch forever.
	MaxFailures = 3
	// RefillDelay is how long a claim holds back the replacement of the
	// spare it took. A harness starting takes the CPU for about a second;
	// on a small machine, started at the claim, it slowed the claimed
	// Session's first turn (Claude Code's prompt to first model request by
	// 100-150 ms, Gemini CLI's by about 50 ms, on 2 cores), which is the
	// latency a spare is there to save. A create right after a claim finds
	// no spare either way: a replacement is not ready in less than this.
	RefillDelay = 2 * time.Second
)

// Launcher makes, starts and stops one shape's spares; T is the spare's
// object. The daemon's is a Session object and its harness generation.
type Launcher[T any] interface {
	// Make makes the object of the spare sp, before anything starts. It
	// runs under the pool's lock: it must not call the pool.
	Make(sp *Spare[T]) (T, error)
	// Launch starts the spare's process and returns once the spare can
	// be claimed, or why it cannot. ctx ends when the spare left its pool
	// before it was ready (the pool then retires it).
	Launch(ctx context.Context, item T) error
	// Unfit says why a ready spare must not be handed out (its process
	// exited, its binary changed), or "". The pool then retires it.
	Unfit(item T) string
	// Retire stops the spare's process and deletes what it wrote.
	Retire(item T)
}

// Config is a Pool's wiring. Zero fields take their defaults.
type Config struct {
	// Log receives the pool's notes (expiries, failed launches).
	Log *slog.Logger
	// Go runs each launch; the daemon counts them to wait for them at
	// its stop. Default: a goroutine.
	Go func(func())
	// RefillDelay defaults to the constant RefillDelay.
	RefillDelay time.Duration
}

// Pool keeps warm spares by launch shape. Its methods are safe for
// concurrent use.
type Pool[T any] struct {
	log         *slog.Logger
	spawn       func(func())
	refillDelay time.Duration

	mu      sync.Mutex
	closing bool
	shapes  map[string]*shape[T]
	stats   Stats
}

// shape is one launch shape's spares (Pool.mu guards every field).
type shape[T any] struct {
	key, label string
	l          Launcher[T]
	want       int
	idle       time.Duration
	lastUse    time.Time
	spares     []*Spare[T]
	failures   int
	// refillAt holds replacements back until then (after a claim).
	refillAt time.Time
	lastErr  string
	expire   *time.Timer
}

// Spare is one warm process of a pool.
type Spare[T any] struct {
	// Item is the launcher's object (Launcher.Make).
	Item  T
	shape *shape[T]
	// ready: the process can take its first prompt (Pool.mu).
	ready bool
	// ctx ends the launch of a spare taken out of its pool before it was
	// ready: the launch then retires it.
	ctx    context.Context
	cancel context.CancelFunc
}

// Stats counts, for daemon status, the claims that could have run on a
// spare while the pool kept some: Claims took one; Misses found their
// shape's spares all still starting; ShapeMisses found spares of other
// shapes only.
type Stats struct {
	Claims, Misses, ShapeMisses uint64
}

// Held is what a pool, or one shape of it, holds.
type Held[T any] struct {
	// Ready are the spares a claim may take, Starting counts the others.
	Ready    []T
	Starting int
	// LastErr is the shape's last launch failure (Warm's answer only).
	LastErr string
}

// New makes an empty pool.
func New[T any](c Config) *Pool[T] {
	p := &Pool[T]{log: c.Log, spawn: c.Go, refillDelay: c.RefillDelay, shapes: map[string]*shape[T]{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.spawn == nil {
		p.spawn = func(f func()) { go f() }
	}
	if p.refillDelay <= 0 {
		p.refillDelay = RefillDelay
	}
	return p
}

// Warm keeps want spares of the shape key (label names it in the log),
// stopped once unclaimed for idle. l is the shape's launcher; a shape
// already kept keeps the launcher it has. want 0 stops the shape's
// spares. It answers what the shape holds.
func (p *Pool[T]) Warm(key, label string, want int, idle time.Duration, l Launcher[T]) (Held[T], error) {
	if want < 0 || want > MaxPerShape {
		return Held[T]{}, rpc.InvalidField("spares", "must be 0 to %d", MaxPerShape)
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return Held[T]{}, rpc.Errorf(rpc.CodeRPCUnavailable, "the daemon is shutting down")
	}
	sh := p.shapes[key]
	others := 0
	for k, q := range p.shapes {
		if k != key {
			others += q.want
		}
	}
	if others+want > MaxTotal {
		p.mu.Unlock()
		return Held[T]{}, rpc.InvalidField("spares", "the daemon keeps at most %d spares in all and %d are kept for other launch shapes", MaxTotal, others)
	}
	var retire []*Spare[T]
	if sh == nil && want > 0 {
		sh = &shape[T]{key: key, label: label, l: l}
		p.shapes[key] = sh
	}
	var held Held[T]
	if sh != nil {
		sh.want, sh.idle, sh.lastUse = want, idle, time.Now()
		sh.failures, sh.lastErr = 0, ""
		for len(sh.spares) > sh.want {
			retire = append(retire, sh.spares[len(sh.spares)-1])
			sh.spares = sh.spares[:len(sh.spares)-1]
		}
		if sh.want == 0 {
			p.dropLocked(sh)
		} else {
			p.armExpiryLocked(sh)
			p.fillLocked(sh)
		}
		held = sh.heldLocked()
		held.LastErr = sh.lastErr
	}
	p.mu.Unlock()
	p.release(retire)
	return held, nil
}

// heldLocked is what sh holds. Pool.mu held.
func (sh *shape[T]) heldLocked() Held[T] {
	var h Held[T]
	for _, sp := range sh.spares {
		if sp.ready {
			h.Ready = append(h.Ready, sp.Item)
		} else {
			h.Starting++
		}
	}
	return h
}

// Status is the pool's counts and every shape's spares.
func (p *Pool[T]) Status() (Stats, Held[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all Held[T]
	for _, sh := range p.shapes {
		h := sh.heldLocked()
		all.Ready = append(all.Ready, h.Ready...)
		all.Starting += h.Starting
	}
	return p.stats, all
}

// Claim takes a ready spare of the shape key, or reports false (the
// create starts cold). A spare the launcher finds unfit is retired
// instead. The shape starts a replacement RefillDelay later. The claimed
// spare is the caller's: the pool forgets it.
func (p *Pool[T]) Claim(key string) (T, bool) {
	for {
		p.mu.Lock()
		sh := p.shapes[key]
		if sh == nil || p.closing {
			if sh == nil && len(p.shapes) > 0 {
				p.stats.ShapeMisses++
			}
			p.mu.Unlock()
			var zero T
			return zero, false
		}
		sh.lastUse = time.Now()
		i := slices.IndexFunc(sh.spares, func(sp *Spare[T]) bool { return sp.ready })
		if i < 0 {
			p.stats.Misses++
			p.mu.Unlock()
			var zero T
			return zero, false
		}
		sp := sh.spares[i]
		sh.spares = slices.Delete(sh.spares, i, i+1)
		p.refillLaterLocked(sh)
		p.mu.Unlock()
		if why := sh.l.Unfit(sp.Item); why != "" {
			p.log.Info("a warm spare was not handed out", "shape", key, "why", why)
			sh.l.Retire(sp.Item)
			continue
		}
		p.mu.Lock()
		p.stats.Claims++
		p.mu.Unlock()
		return sp.Item, true
	}
}

// Exited handles the exit of a spare's process that nobody asked for
// (why says how it ended): a ready spare still held leaves the pool,
// cleanup deletes what it wrote, and another takes its place. A spare not
// ready yet is its launch's to give up, and one out of its pool is being
// retired or claimed: both are left alone (cleanup is not called).
func (p *Pool[T]) Exited(sp *Spare[T], why string, cleanup func()) {
	p.mu.Lock()
	sh := sp.shape
	held := sp.ready && slices.Contains(sh.spares, sp)
	if held {
		sh.spares = slices.DeleteFunc(sh.spares, func(x *Spare[T]) bool { return x == sp })
		sh.failures++
		sh.lastErr = why
	}
	p.mu.Unlock()
	if !held {
		return
	}
	p.log.Warn("a warm spare's harness exited", "shape", sh.key, "exit", why)
	cleanup()
	p.mu.Lock()
	if p.shapes[sh.key] == sh {
		p.fillLocked(sh)
	}
	p.mu.Unlock()
}

// Stop retires every spare and keeps no more (the daemon's stop).
func (p *Pool[T]) Stop() {
	p.mu.Lock()
	p.closing = true
	var all []*Spare[T]
	for _, sh := range p.shapes {
		all = append(all, sh.spares...)
		sh.spares = nil
		p.dropLocked(sh)
	}
	p.mu.Unlock()
	p.release(all)
}

// dropLocked forgets sh; its spares must already be out of it or be
// released by the caller. Pool.mu held.
func (p *Pool[T]) dropLocked(sh *shape[T]) {
	if sh.expire != nil {
		sh.expire.Stop()
	}
	if p.shapes[sh.key] == sh {
		delete(p.shapes, sh.key)
	}
}

// armExpiryLocked (re)starts sh's idle timer. Pool.mu held.
func (p *Pool[T]) armExpiryLocked(sh *shape[T]) {
	if sh.expire != nil {
		sh.expire.Stop()
	}
	sh.expire = time.AfterFunc(sh.idle, func() { p.expire(sh) })
}

// expire stops the spares of a shape unused for its idle time.
func (p *Pool[T]) expire(sh *shape[T]) {
	p.mu.Lock()
	if p.shapes[sh.key] != sh {
		p.mu.Unlock()
		return
	}
	if left := sh.idle - time.Since(sh.lastUse); left > 0 {
		sh.expire = time.AfterFunc(left, func() { p.expire(sh) })
		p.mu.Unlock()
		return
	}
	spares := sh.spares
	sh.spares = nil
	p.dropLocked(sh)
	p.mu.Unlock()
	p.log.Info("warm spares expired", "shape", sh.key, "harness", sh.label, "spares", len(spares))
	p.release(spares)
}

// release stops spares taken out of their shape: a ready one is retired
// here, one still starting has its launch canceled and the launch
// retires it. Each decided under Pool.mu when it was taken out:
// readiness is set under Pool.mu and only while the spare is held.
func (p *Pool[T]) release(spares []*Spare[T]) {
	done := make(chan struct{}, len(spares))
	n := 0
	for _, sp := range spares {
		p.mu.Lock()
		ready := sp.ready
		p.mu.Unlock()
		if !ready {
			sp.cancel()
			continue
		}
		n++
		go func() {
			sp.shape.l.Retire(sp.Item)
			done <- struct{}{}
		}()
	}
	for range n {
		<-done
	}
}

// totalLocked counts every spare held. Pool.mu held.
func (p *Pool[T]) totalLocked() int {
	n := 0
	for _, q := range p.shapes {
		n += len(q.spares)
	}
	return n
}

// fillLocked starts spares until sh has what it wants, unless a claim
// holds replacements back (refillAt). Pool.mu held.
func (p *Pool[T]) fillLocked(sh *shape[T]) {
	if time.Now().Before(sh.refillAt) {
		return
	}
	for len(sh.spares) < sh.want && sh.failures < MaxFailures &&
		p.totalLocked() < MaxTotal && !p.closing {
		sp := &Spare[T]{shape: sh}
		item, err := sh.l.Make(sp)
		if err != nil {
			sh.failures++
			sh.lastErr = err.Error()
			p.log.Warn("a warm spare could not be made", "shape", sh.key, "err", err)
			return
		}
		sp.Item = item
		sp.ctx, sp.cancel = context.WithCancel(context.Background())
		sh.spares = append(sh.spares, sp)
		p.spawn(func() { p.launch(sp) })
	}
}

// launch starts sp and marks it ready, or gives it up.
func (p *Pool[T]) launch(sp *Spare[T]) {
	sh := sp.shape
	defer sp.cancel()
	err := sh.l.Launch(sp.ctx, sp.Item)
	p.mu.Lock()
	held := slices.Contains(sh.spares, sp)
	if err != nil {
		sh.failures++
		sh.lastErr = err.Error()
		if held {
			sh.spares = slices.DeleteFunc(sh.spares, func(x *Spare[T]) bool { return x == sp })
		}
	} else if held {
		sp.ready = true
		sh.failures = 0
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Warn("a warm spare did not start", "shape", sh.key, "harness", sh.label, "err", err)
	}
	if err != nil || !held {
		// Failed, or retired (expired, stopped) while it started.
		sh.l.Retire(sp.Item)
	}
}

// refillLaterLocked starts sh's replacements refillDelay from now.
// Pool.mu held.
func (p *Pool[T]) refillLaterLocked(sh *shape[T]) {
	sh.refillAt = time.Now().Add(p.refillDelay)
	time.AfterFunc(p.refillDelay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.shapes[sh.key] == sh {
			p.fillLocked(sh)
		}
	})
}
