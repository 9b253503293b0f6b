package store

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// Row is one stable screen row.
type Row struct {
	ID    uint64
	Epoch uint64
	Text  string
}

// RowLog is the append-only row log of one session. Append buffers rows in
// memory; the DB's single flusher commits them. All methods are safe for
// concurrent use.
type RowLog struct {
	db  *DB
	uid string

	committed atomic.Uint64 // highest committed id
	first     atomic.Uint64 // oldest retained id (evicted-through + 1)

	// mu guards the fields that follow.
	mu           sync.Mutex
	next         uint64 // next id to assign
	pending      []Row  // appended, not yet taken by the flusher
	pendingBytes int64  // cost of pending, see rowCost
	spare        []Row  // recycled batch slice
	deleted      bool   // DeleteSession ran; appends are discarded
}

// rows_meta value: lastCommittedID (8) ++ evictedThrough (8).
func decodeRowMeta(v []byte) (last, evicted uint64) {
	if len(v) < 16 {
		return 0, 0
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
}

func rowCost(text string) int64 { return int64(len(text)) + rowOverhead }

// Rows returns the row log of session uid, loading its committed position
// from disk on first use. Repeated calls return the same *RowLog.
func (db *DB) Rows(uid string) (*RowLog, error) {
	if err := checkName(uid); err != nil {
		return nil, err
	}
	db.logsMu.Lock()
	defer db.logsMu.Unlock()
	if l := db.logs[uid]; l != nil {
		return l, nil
	}
	var last, evicted uint64
	flat := false
	err := db.view(func(tx *bolt.Tx) error {
		last, evicted = decodeRowMeta(tx.Bucket(bucketRowsMeta).Get([]byte(uid)))
		flat = isFlatRows(tx.Bucket(bucketRows).Bucket([]byte(uid)))
		return nil
	})
	if err == nil && flat {
		// Written by schema 1: convert this session's rows once. No
		// RowLog of uid exists yet (logsMu is held), so the flusher has
		// nothing of it to write meanwhile.
		err = db.update(func(tx *bolt.Tx) error { return migrateFlatRows(tx, uid) })
	}
	if err != nil {
		return nil, err
	}
	l := &RowLog{db: db, uid: uid, next: last + 1}
	l.committed.Store(last)
	l.first.Store(evicted + 1)
	db.logs[uid] = l
	return l, nil
}

// UID returns the session uid of the log.
func (l *RowLog) UID() string { return l.uid }

// Append assigns consecutive ids to texts (all with the given epoch), buffers
// them for the flusher and returns the first id (with no texts, the id the
// next row will get). It does not wait for the commit and never fails: rows
// appended after Close or DeleteSession are discarded.
//
// Backpressure: when the rows pending across the whole DB reach
// Options.MaxPendingBytes, Append blocks until the flusher has committed
// enough of them (or the DB is closed). A session that itself holds at
// least 1/16 of that buffer already blocks at 3/4 of it, so one flooding
// session never fills the buffer and the others' Appends go on (see
// mustWait). The bound is soft: each concurrent Append may overshoot it by
// its own rows. Append must not be called from the commit hook or from an
// AppendEvent build function.
func (l *RowLog) Append(epoch uint64, texts ...string) (firstID uint64) {
	db := l.db
	if db.pendingBytes.Load() >= db.heavyLimit() {
		db.waitForRoom(l)
	}
	l.mu.Lock()
	firstID = l.next
	n := uint64(len(texts))
	l.next += n
	if n == 0 || l.deleted || db.closed.Load() {
		l.mu.Unlock()
		return firstID
	}
	var cost int64
	wasEmpty := len(l.pending) == 0
	for i, t := range texts {
		l.pending = append(l.pending, Row{ID: firstID + uint64(i), Epoch: epoch, Text: t})
		cost += rowCost(t)
	}
	l.pendingBytes += cost
	if wasEmpty {
		db.dirtyMu.Lock()
		db.dirty = append(db.dirty, l)
		db.dirtyMu.Unlock()
	}
	// Counters move under l.mu so the flusher (which takes l.mu to swap the
	// batch out) always subtracts after we added.
	rows := db.pendingRows.Add(int64(n))
	bytes := db.pendingBytes.Add(cost)
	l.mu.Unlock()

	prevRows, prevBytes := rows-int64(n), bytes-cost
	if prevRows == 0 ||
		crossed(prevRows, rows, int64(db.opts.FlushRows)) ||
		crossed(prevBytes, bytes, int64(db.opts.FlushBytes)) {
		db.signal()
	}
	return firstID
}

func crossed(prev, now, limit int64) bool { return prev < limit && now >= limit }

// Flush synchronously commits every row appended (to any session) before the
// call. It returns the commit error, ErrDeleted or ErrClosed.
func (l *RowLog) Flush() error {
	l.mu.Lock()
	target, deleted := l.next-1, l.deleted
	l.mu.Unlock()
	if deleted {
		return ErrDeleted
	}
	// A flush cycle may stop short of a flood's newest rows (see
	// flushOnce); ask again until target is committed.
	for l.committed.Load() < target {
		if err := l.db.flush(); err != nil {
			return err
		}
		l.mu.Lock()
		deleted := l.deleted
		l.mu.Unlock()
		if deleted {
			return ErrDeleted
		}
	}
	return nil
}

// Committed returns the highest committed row id (0 if none). Rows up to it
// are durable and visible to Read.
func (l *RowLog) Committed() uint64 { return l.committed.Load() }

// First returns the oldest retained row id: 1 + the highest id evicted by
// retention. If nothing was ever committed it is 1.
func (l *RowLog) First() uint64 { return l.first.Load() }

// Read returns up to limit committed rows with id >= fromID in ascending order
// (limit <= 0: no limit). Rows below First have been evicted.
func (l *RowLog) Read(fromID uint64, limit int) ([]Row, error) {
	var out []Row
	err := l.view(func(c *rowCursor, first uint64) (err error) {
		out, err = readRows(c, first, fromID, limit)
		return err
	})
	return out, err
}

func readRows(c *rowCursor, first, fromID uint64, limit int) ([]Row, error) {
	var out []Row
	for e := c.seek(max(fromID, first)); e != nil; e = c.next() {
		if limit > 0 && len(out) >= limit {
			return out, nil
		}
		out = append(out, e.row())
	}
	return out, c.err
}

// ReadBefore returns the (up to) limit newest committed rows with id <
// beforeID, in ascending order (limit <= 0: no limit). It is used to page
// scrollback backwards.
func (l *RowLog) ReadBefore(beforeID uint64, limit int) ([]Row, error) {
	var out []Row
	err := l.view(func(c *rowCursor, first uint64) (err error) {
		out, err = readRowsBefore(c, first, beforeID, limit)
		return err
	})
	return out, err
}

func readRowsBefore(c *rowCursor, first, beforeID uint64, limit int) ([]Row, error) {
	var out []Row
	e := c.seek(beforeID)
	if c.err != nil {
		return nil, c.err
	}
	if e == nil {
		e = c.last()
	} else {
		e = c.prev()
	}
	for ; e != nil; e = c.prev() {
		if limit > 0 && len(out) >= limit {
			break
		}
		if e.id < first {
			break
		}
		if e.id >= beforeID {
			continue
		}
		out = append(out, e.row())
	}
	slices.Reverse(out)
	return out, c.err
}

// view runs fn on a cursor over the session's stored rows and the oldest
// retained id as of the same transaction. Rows below it may still be
// stored (eviction drops whole chunks) and must not be returned.
func (l *RowLog) view(fn func(c *rowCursor, first uint64) error) error {
	l.mu.Lock()
	deleted := l.deleted
	l.mu.Unlock()
	if deleted {
		return ErrDeleted
	}
	return l.db.view(func(tx *bolt.Tx) error { return l.viewIn(tx, fn) })
}

// viewIn is view in tx.
func (l *RowLog) viewIn(tx *bolt.Tx, fn func(c *rowCursor, first uint64) error) error {
	b := tx.Bucket(bucketRows).Bucket([]byte(l.uid))
	if b == nil {
		return nil
	}
	_, evicted := decodeRowMeta(tx.Bucket(bucketRowsMeta).Get([]byte(l.uid)))
	return fn(newRowCursor(b), evicted+1)
}
