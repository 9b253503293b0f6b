package positions

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// Position retention bounds of the contract. They are variables so tests
// can lower them.
var (
	PerSession = 64
	PerAll     = 256
	Total      = 4096
)

// Persistence of positions (see docs/rpc.md, "Positions across daemon
// restarts"). Numbers are reserved in blocks of positionReserveBlock,
// durably, before any of them is handed out, so no number is handed out
// twice, crash included; a restarted daemon starts after the last
// reservation. Minted positions are stored in batches, positionFlushDelay
// after the first unsaved one; an acceptance's position is stored with its
// receipt. A position minted but not yet stored when the daemon died is
// lost: its number answers CURSOR_EXPIRED, never another window.
var (
	ReserveBlock uint64 = 1024
	FlushDelay          = 100 * time.Millisecond
	RetryDelay          = time.Second
)

// Position is one minted, immutable observation point.
type Position struct {
	Mark fetchdoc.Mark
	All  *fetchdoc.AllMark // for the all scope
	// next is the position minted by the first advancing fetch from this
	// one; replays are bounded by its mark, so they return the same window.
	// Guarded by positions.mu.
	next    uint64
	nextSet bool
	// Guarded by positions.mu: the mint or reuse that last touched it
	// (retention drops the least recently touched), and its key in byMark.
	stamp uint64
	dedup dedupKey
	n     uint64 // its number, once held
}

type scopeKey struct {
	scope string // a Session uid, or allScope
	n     uint64
}

// dedupKey identifies a watermark vector in a scope: a fetch that reaches
// the vector of a held position returns that position instead of minting.
type dedupKey struct {
	scope string
	mark  fetchdoc.Mark
	all   string // the all scope: allKey of the allMark
}

type fifoEntry struct {
	k     scopeKey
	stamp uint64
}

const AllScope = "*all"

// Table mints and retains fetch positions per scope. Each scope
// numbers independently; the least recently minted (or reused) positions
// are dropped beyond the per-scope and global caps.
type Table struct {
	db  *store.DB // nil: nothing is stored
	log *slog.Logger

	// mu guards the fields that follow.
	mu       sync.Mutex
	last     map[string]uint64 // last number handed out, per scope
	reserved map[string]uint64 // durably reserved through, per scope
	held     map[scopeKey]*Position
	byMark   map[dedupKey]uint64
	order    map[string][]uint64 // per scope, least recently touched first
	fifo     []fifoEntry         // global, least recently touched first (stale entries skipped)
	stamp    uint64
	dirty    map[scopeKey]struct{} // to store (held) or delete (not held)
	armed    bool                  // a flush is scheduled
	closed   bool
	flushMu  sync.Mutex // serializes flushes, so an older batch never lands after a newer
}

// New is a table storing to db (nil: nothing is stored),
// logging to log.
func New(db *store.DB, log *slog.Logger) *Table {
	return &Table{db: db, log: log, last: map[string]uint64{}, reserved: map[string]uint64{}, held: map[scopeKey]*Position{},
		byMark: map[dedupKey]uint64{}, order: map[string][]uint64{}, dirty: map[scopeKey]struct{}{}}
}

// storedPosition is a position's stored form.
type storedPosition struct {
	Mark *fetchdoc.Mark `json:"m,omitempty"`
	All  *storedAll     `json:"a,omitempty"`
	Next uint64         `json:"n,omitempty"`
}

type storedAll struct {
	Marks       map[string]fetchdoc.Mark `json:"marks"`
	Enumerating bool                     `json:"enumerating,omitempty"`
	Enum        []string                 `json:"enum,omitempty"`
}

// encodeLocked is p's stored form. ps.mu held.
func encodeLocked(p *Position) []byte {
	sp := storedPosition{Next: p.next}
	if p.All != nil {
		sp.All = &storedAll{Marks: p.All.Marks, Enumerating: p.All.Enumerating, Enum: p.All.Enum}
	} else {
		m := p.Mark
		sp.Mark = &m
	}
	b, _ := json.Marshal(sp)
	return b
}

func decodePosition(data []byte) (*Position, error) {
	var sp storedPosition
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, err
	}
	p := &Position{next: sp.Next, nextSet: sp.Next != 0}
	switch {
	case sp.All != nil:
		marks := sp.All.Marks
		if marks == nil {
			marks = map[string]fetchdoc.Mark{}
		}
		p.All = &fetchdoc.AllMark{Marks: marks, Enumerating: sp.All.Enumerating, Enum: sp.All.Enum}
	case sp.Mark != nil:
		p.Mark = *sp.Mark
	default:
		return nil, errors.New("position has neither a mark nor an all mark")
	}
	return p, nil
}

func dedupKeyOf(scope string, p *Position) dedupKey {
	if p.All != nil {
		return dedupKey{scope: scope, all: fetchdoc.AllKey(p.All)}
	}
	return dedupKey{scope: scope, mark: p.Mark}
}

// Load restores the positions a previous daemon stored: numbering resumes
// after every scope's reservation, and positions of scopes that no longer
// exist (exists false) are deleted. Retention applies as if they had been
// minted in number order.
func (ps *Table) Load(exists func(scope string) bool) error {
	st, err := ps.db.LoadPositions()
	if err != nil {
		return err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	gone := map[string]bool{}
	for scope, r := range st.Reserved {
		if scope != AllScope && !exists(scope) {
			gone[scope] = true
			continue
		}
		ps.last[scope], ps.reserved[scope] = r, r
	}
	for _, sp := range st.Positions {
		if gone[sp.Scope] || (sp.Scope != AllScope && !exists(sp.Scope)) {
			gone[sp.Scope] = true
			continue
		}
		k := scopeKey{sp.Scope, sp.N}
		p, err := decodePosition(sp.Data)
		if err != nil {
			ps.log.Warn("dropping an unreadable stored position", "scope", sp.Scope, "n", sp.N, "err", err)
			ps.dirty[k] = struct{}{}
			continue
		}
		ps.last[sp.Scope] = max(ps.last[sp.Scope], sp.N)
		ps.reserved[sp.Scope] = max(ps.reserved[sp.Scope], sp.N)
		ps.insertLocked(k, p)
	}
	for scope := range gone {
		if err := ps.db.DeletePositions(scope); err != nil {
			ps.log.Warn("deleting stored positions of a deleted Session", "scope", scope, "err", err)
		}
	}
	ps.armLocked(FlushDelay)
	return nil
}

func (ps *Table) MintSession(uid string, m fetchdoc.Mark) uint64 {
	return ps.Mint(uid, &Position{Mark: m})
}

func (ps *Table) Mint(scope string, p *Position) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n, _ := ps.mintLocked(scope, p)
	return n
}

// MintHeld is Mint, returning the held position too (p, or the held one
// with p's watermark vector).
func (ps *Table) MintHeld(scope string, p *Position) (uint64, *Position) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mintLocked(scope, p)
}

// mintLocked returns the position of p's watermark vector in scope: the
// held position with that vector, touched, or else p under the scope's
// next number. ps.mu held.
func (ps *Table) mintLocked(scope string, p *Position) (uint64, *Position) {
	key := dedupKeyOf(scope, p)
	if n, ok := ps.byMark[key]; ok {
		k := scopeKey{scope, n}
		if q := ps.held[k]; q != nil {
			ps.touchLocked(k, q)
			return n, q
		}
	}
	n := ps.last[scope] + 1
	if ps.db != nil && n > ps.reserved[scope] {
		through := n - 1 + ReserveBlock
		if err := ps.db.ReservePositions(scope, through); err != nil {
			// The number is handed out anyway: refusing the fetch would not
			// make the state directory writable. Only a crash before a
			// later reservation succeeds can make it name another window.
			ps.log.Error("reserving position numbers", "scope", scope, "err", err)
		} else {
			ps.reserved[scope] = through
		}
	}
	ps.last[scope] = n
	k := scopeKey{scope, n}
	p.dedup = key
	ps.insertLocked(k, p)
	ps.markDirtyLocked(k)
	ps.retainLocked(scope)
	return n, p
}

// insertLocked holds p as k, the most recently touched. ps.mu held.
func (ps *Table) insertLocked(k scopeKey, p *Position) {
	if p.dedup == (dedupKey{}) {
		p.dedup = dedupKeyOf(k.scope, p)
	}
	ps.stamp++
	p.stamp, p.n = ps.stamp, k.n
	ps.held[k] = p
	if old, ok := ps.byMark[p.dedup]; !ok || old < k.n {
		ps.byMark[p.dedup] = k.n
	}
	ps.order[k.scope] = append(ps.order[k.scope], k.n)
	ps.fifo = append(ps.fifo, fifoEntry{k, p.stamp})
}

// touchLocked makes held position k the most recently touched. ps.mu held.
func (ps *Table) touchLocked(k scopeKey, p *Position) {
	ps.stamp++
	p.stamp = ps.stamp
	o := ps.order[k.scope]
	if i := slices.Index(o, k.n); i >= 0 {
		ps.order[k.scope] = append(append(o[:i:i], o[i+1:]...), k.n)
	}
	ps.fifo = append(ps.fifo, fifoEntry{k, p.stamp})
	ps.compactLocked()
}

// retainLocked drops the least recently touched positions beyond the
// scope's bound and the global one. ps.mu held.
func (ps *Table) retainLocked(scope string) {
	limit := PerSession
	if scope == AllScope {
		limit = PerAll
	}
	for len(ps.order[scope]) > limit {
		ps.dropLocked(scopeKey{scope, ps.order[scope][0]})
		ps.order[scope] = ps.order[scope][1:]
	}
	for len(ps.held) > Total && len(ps.fifo) > 0 {
		e := ps.fifo[0]
		ps.fifo = ps.fifo[1:]
		if p, ok := ps.held[e.k]; ok && p.stamp == e.stamp {
			ps.dropLocked(e.k)
			o := ps.order[e.k.scope]
			if i := slices.Index(o, e.k.n); i >= 0 {
				ps.order[e.k.scope] = append(o[:i:i], o[i+1:]...)
			}
		}
	}
	ps.compactLocked()
}

// compactLocked keeps the FIFO from growing with entries already dropped
// or touched again since. ps.mu held.
func (ps *Table) compactLocked() {
	if len(ps.fifo) <= 2*Total {
		return
	}
	kept := ps.fifo[:0]
	for _, e := range ps.fifo {
		if p, ok := ps.held[e.k]; ok && p.stamp == e.stamp {
			kept = append(kept, e)
		}
	}
	ps.fifo = kept
}

// dropLocked forgets held position k (the caller fixes order). ps.mu held.
func (ps *Table) dropLocked(k scopeKey) {
	p := ps.held[k]
	if p == nil {
		return
	}
	delete(ps.held, k)
	if ps.byMark[p.dedup] == k.n {
		delete(ps.byMark, p.dedup)
	}
	ps.markDirtyLocked(k)
}

// markDirtyLocked schedules k's store (or deletion). ps.mu held.
func (ps *Table) markDirtyLocked(k scopeKey) {
	if ps.db == nil || ps.closed {
		return
	}
	ps.dirty[k] = struct{}{}
	if len(ps.dirty) > 4*Total {
		// The store keeps failing: forget pending deletions (a stale
		// record still names its own window, and the next load applies
		// retention again).
		for d := range ps.dirty {
			if ps.held[d] == nil {
				delete(ps.dirty, d)
			}
		}
	}
	ps.armLocked(FlushDelay)
}

// armLocked schedules a flush unless one is scheduled. ps.mu held.
func (ps *Table) armLocked(after time.Duration) {
	if ps.armed || ps.closed || len(ps.dirty) == 0 {
		return
	}
	ps.armed = true
	time.AfterFunc(after, func() {
		ps.mu.Lock()
		ps.armed = false
		ps.mu.Unlock()
		ps.Flush()
	})
}

// Flush stores every unsaved position and deletes every dropped one, in
// one transaction. A failed batch is retried later (never after the
// store closed).
func (ps *Table) Flush() error {
	if ps.db == nil {
		return nil
	}
	ps.flushMu.Lock()
	defer ps.flushMu.Unlock()
	ps.mu.Lock()
	batch := make([]store.Position, 0, len(ps.dirty))
	for k := range ps.dirty {
		sp := store.Position{Scope: k.scope, N: k.n}
		if p := ps.held[k]; p != nil {
			sp.Data = encodeLocked(p)
		}
		batch = append(batch, sp)
	}
	clear(ps.dirty)
	ps.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := ps.db.SavePositions(batch)
	if err == nil || errors.Is(err, store.ErrClosed) {
		return err
	}
	ps.log.Error("storing fetch positions", "positions", len(batch), "err", err)
	ps.mu.Lock()
	for _, sp := range batch {
		ps.dirty[scopeKey{sp.Scope, sp.N}] = struct{}{}
	}
	ps.armLocked(RetryDelay)
	ps.mu.Unlock()
	return err
}

// Close stores what is unsaved; later mints are not stored.
func (ps *Table) Close() error {
	err := ps.Flush()
	ps.mu.Lock()
	ps.closed = true
	ps.mu.Unlock()
	return err
}

// Stored is the stored form of held position n of scope, for a write that
// must carry it (a receipt naming it as its cursor).
func (ps *Table) Stored(scope string, n uint64) (store.Position, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.held[scopeKey{scope, n}]
	if p == nil || ps.db == nil {
		return store.Position{}, false
	}
	return store.Position{Scope: scope, N: n, Data: encodeLocked(p)}, true
}

// Get resolves (scope, n). A number never minted, or dropped, is
// CURSOR_EXPIRED.
func (ps *Table) Get(scope string, n uint64) (*Position, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.held[scopeKey{scope, n}]
	if !ok {
		if n > ps.last[scope] || n == 0 {
			return nil, rpc.Errorf(rpc.CodeCursorExpired, "this daemon has not minted position %d (a cursor comes from this daemon's receipts and fetches of the same Session); %s", n, freshCursor(scope))
		}
		return nil, rpc.Errorf(rpc.CodeCursorExpired, "this daemon no longer holds position %d (dropped by retention, or minted just before the previous daemon crashed); %s", n, freshCursor(scope))
	}
	return p, nil
}

// freshCursor says how to go on after CURSOR_EXPIRED in scope.
func freshCursor(scope string) string {
	cmd := "dlgt session fetch SESSION"
	if scope == AllScope {
		cmd = "dlgt session fetch --all"
	}
	return "take a fresh cursor: fetch without one (" + cmd + "), which returns the current state, the latest result and a new cursor"
}

// Successor returns the position the first advancing fetch from p minted,
// if it is still held: a replay of p is bounded by it.
func (ps *Table) Successor(scope string, p *Position) (uint64, *Position) {
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

// Advance mints next (the position a fetch from `from` reached, or the
// held one with its watermark vector) and links it as from's successor
// unless another fetch already did.
func (ps *Table) Advance(scope string, from, next *Position) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n, _ := ps.mintLocked(scope, next)
	if from != nil && !from.nextSet && from != ps.held[scopeKey{scope, n}] {
		from.next, from.nextSet = n, true
		if ps.held[scopeKey{scope, from.n}] == from {
			ps.markDirtyLocked(scopeKey{scope, from.n})
		}
	}
	return n
}

// LastMinted is the last number handed out in scope.
func (ps *Table) LastMinted(scope string) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.last[scope]
}

// NextOf is the number of p's successor (0: none yet).
func (ps *Table) NextOf(p *Position) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return p.next
}

// DropUnsaved forgets every position not yet stored and stores nothing
// more, as if the daemon had died before the batch: for crash tests.
func (ps *Table) DropUnsaved() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.closed = true
	clear(ps.dirty)
}
