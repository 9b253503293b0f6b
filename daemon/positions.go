package daemon

import (
	"sync"

	"dlgt/rpc"
)

// Position retention bounds of the contract.
const (
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

// position is one minted, immutable observation point.
type position struct {
	mark sessionMark
	// next is the position minted by the first advancing fetch from this
	// one; replays are bounded by its mark, so they return the same window.
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
}

func newPositions() *positions {
	return &positions{last: map[string]uint64{}, held: map[scopeKey]*position{}, order: map[string][]uint64{}}
}

func (ps *positions) mintSession(uid string, m sessionMark) uint64 {
	return ps.mint(uid, &position{mark: m})
}

func (ps *positions) mint(scope string, p *position) uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
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
		if n > ps.last[scope] {
			return nil, rpc.Errorf(rpc.CodeCursorExpired, "this daemon has not minted position %d", n)
		}
		return nil, rpc.Errorf(rpc.CodeCursorExpired, "this daemon no longer holds position %d", n)
	}
	return p, nil
}

// link records that the first advancing fetch from (scope, from) minted to.
func (ps *positions) link(scope string, from *position, to uint64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !from.nextSet {
		from.next, from.nextSet = to, true
	}
}

// held reports whether (scope, n) is still retained, returning it.
func (ps *positions) lookup(scope string, n uint64) (*position, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.held[scopeKey{scope, n}]
	return p, ok
}
