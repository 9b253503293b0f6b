package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	for k, v := c.seek(max(fromID, first)); k != nil; k, v = c.next() {
		if limit > 0 && len(out) >= limit {
			break
		}
		r, err := decodeRow(k, v)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
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
	k, _ := c.seek(beforeID)
	var v []byte
	if k == nil {
		k, v = c.last()
	} else {
		k, v = c.prev()
	}
	for ; k != nil; k, v = c.prev() {
		if limit > 0 && len(out) >= limit {
			break
		}
		r, err := decodeRow(k, v)
		if err != nil {
			slices.Reverse(out)
			return out, err
		}
		if r.ID < first {
			break
		}
		if r.ID >= beforeID {
			continue
		}
		out = append(out, r)
	}
	slices.Reverse(out)
	return out, nil
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

// --- chunked layout ---

// rowChunk is how many consecutive ids share one nested bucket: rows/<uid>
// holds one bucket per chunk, keyed by (id-1)/rowChunk, holding id → row.
// Retention drops whole chunks, so ingest writes each row once and never
// deletes rows one by one: a session stores between RowRetention and
// RowRetention+rowChunk-1 rows, of which readers see the newest
// RowRetention (First). Changing it needs a migration of stored rows.
const rowChunk = 1000

func chunkOf(id uint64) uint64 { return (id - 1) / rowChunk }

// rowCursor walks the rows of one session across its chunk buckets in id
// order. bbolt cursors are not valid across writes; use it in one
// transaction without writing to the bucket.
type rowCursor struct {
	outer *bolt.Cursor
	rb    *bolt.Bucket
	inner *bolt.Cursor
}

func newRowCursor(rb *bolt.Bucket) *rowCursor {
	return &rowCursor{outer: rb.Cursor(), rb: rb}
}

// enter opens the chunk bucket at outer key k (nil: no chunk).
func (c *rowCursor) enter(k []byte) bool {
	for ; k != nil; k, _ = c.outer.Next() {
		if cb := c.rb.Bucket(k); cb != nil {
			c.inner = cb.Cursor()
			return true
		}
	}
	c.inner = nil
	return false
}

// seek positions at the first row with id >= id.
func (c *rowCursor) seek(id uint64) (k, v []byte) {
	ck, _ := c.outer.Seek(encodeU64(chunkOf(max(id, 1))))
	if !c.enter(ck) {
		return nil, nil
	}
	if k, v = c.inner.Seek(encodeU64(id)); k != nil {
		return k, v
	}
	return c.next()
}

// next moves to the following row.
func (c *rowCursor) next() (k, v []byte) {
	if c.inner == nil {
		return nil, nil
	}
	if k, v = c.inner.Next(); k != nil {
		return k, v
	}
	for {
		ck, _ := c.outer.Next()
		if !c.enter(ck) {
			return nil, nil
		}
		if k, v = c.inner.First(); k != nil {
			return k, v
		}
	}
}

// last positions at the newest row.
func (c *rowCursor) last() (k, v []byte) {
	for ck, _ := c.outer.Last(); ck != nil; ck, _ = c.outer.Prev() {
		if cb := c.rb.Bucket(ck); cb != nil {
			c.inner = cb.Cursor()
			if k, v = c.inner.Last(); k != nil {
				return k, v
			}
		}
	}
	c.inner = nil
	return nil, nil
}

// prev moves to the preceding row.
func (c *rowCursor) prev() (k, v []byte) {
	if c.inner == nil {
		return nil, nil
	}
	if k, v = c.inner.Prev(); k != nil {
		return k, v
	}
	for ck, _ := c.outer.Prev(); ck != nil; ck, _ = c.outer.Prev() {
		if cb := c.rb.Bucket(ck); cb != nil {
			c.inner = cb.Cursor()
			if k, v = c.inner.Last(); k != nil {
				return k, v
			}
		}
	}
	c.inner = nil
	return nil, nil
}

// isFlatRows reports whether rb holds rows directly (schema 1) rather than
// chunk buckets.
func isFlatRows(rb *bolt.Bucket) bool {
	if rb == nil {
		return false
	}
	k, v := rb.Cursor().First()
	return k != nil && v != nil
}

// migrateFlatRows moves the rows of session uid from the schema 1 layout
// (id → row directly in rows/<uid>) into chunk buckets.
func migrateFlatRows(tx *bolt.Tx, uid string) error {
	parent := tx.Bucket(bucketRows)
	old := parent.Bucket([]byte(uid))
	if !isFlatRows(old) {
		return nil
	}
	type kv struct{ k, v []byte }
	var rows []kv
	err := old.ForEach(func(k, v []byte) error {
		if v != nil && len(k) == 8 && decodeU64(k) > 0 {
			rows = append(rows, kv{clone(k), clone(v)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := parent.DeleteBucket([]byte(uid)); err != nil {
		return err
	}
	rb, err := parent.CreateBucket([]byte(uid))
	if err != nil {
		return err
	}
	var cb *bolt.Bucket
	cur := ^uint64(0)
	for _, r := range rows {
		if ci := chunkOf(decodeU64(r.k)); ci != cur || cb == nil {
			if cb, err = rb.CreateBucketIfNotExists(encodeU64(ci)); err != nil {
				return err
			}
			cb.FillPercent = appendFillPercent
			cur = ci
		}
		if err := cb.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

// Row value: uvarint(epoch) ++ text.
func appendRow(dst []byte, r Row) []byte {
	dst = binary.AppendUvarint(dst, r.Epoch)
	return append(dst, r.Text...)
}

func decodeRow(k, v []byte) (Row, error) {
	epoch, n := binary.Uvarint(v)
	if n <= 0 || len(k) != 8 {
		return Row{}, fmt.Errorf("store: corrupt row %x", k)
	}
	return Row{ID: decodeU64(k), Epoch: epoch, Text: string(v[n:])}, nil
}

// --- flusher ---

// signal wakes the flusher without blocking; a signal is never lost because
// the channel has room for one.
func (db *DB) signal() {
	select {
	case db.wake <- struct{}{}:
	default:
	}
}

// heavyLimit is the pending level at which a session holding a large share
// of the buffer (see mustWait) waits: 3/4 of MaxPendingBytes.
func (db *DB) heavyLimit() int64 {
	m := int64(db.opts.MaxPendingBytes)
	return m - m/4
}

// mustWait reports whether an Append to l has to wait for the flusher:
// the pending buffer is full, or it is 3/4 full and l's own uncommitted
// rows are at least 1/16 of it. The last quarter is thereby kept for
// sessions with little output while another floods.
func (db *DB) mustWait(l *RowLog) bool {
	p, m := db.pendingBytes.Load(), int64(db.opts.MaxPendingBytes)
	if p >= m {
		return true
	}
	if p < db.heavyLimit() {
		return false
	}
	l.mu.Lock()
	own := l.pendingBytes
	l.mu.Unlock()
	return own >= m/16
}

// waitForRoom blocks while Appends to l must wait (backpressure).
func (db *DB) waitForRoom(l *RowLog) {
	if !db.mustWait(l) {
		return
	}
	db.signal()
	db.bpMu.Lock()
	for db.mustWait(l) && !db.closed.Load() {
		db.bpCond.Wait()
	}
	db.bpMu.Unlock()
}

// releasePending subtracts committed (or discarded) rows from the pending
// counters and wakes blocked Appends.
func (db *DB) releasePending(rows, bytes int64) {
	if rows == 0 && bytes == 0 {
		return
	}
	db.pendingRows.Add(-rows)
	db.pendingBytes.Add(-bytes)
	db.bpMu.Lock()
	db.bpCond.Broadcast()
	db.bpMu.Unlock()
}

// flush asks the flusher for a commit cycle and waits for its result.
func (db *DB) flush() error {
	reply := make(chan error, 1)
	select {
	case db.flushReq <- reply:
	case <-db.flusherDone:
		return ErrClosed
	}
	select {
	case err := <-reply:
		return err
	case <-db.flusherDone:
		select {
		case err := <-reply:
			return err
		default:
			return ErrClosed
		}
	}
}

func (db *DB) overFlushThreshold() bool {
	b := db.pendingBytes.Load()
	return db.pendingRows.Load() >= int64(db.opts.FlushRows) ||
		b >= int64(db.opts.FlushBytes) || b >= db.heavyLimit() // someone may wait (mustWait)
}

// runFlusher is the single goroutine that commits rows. It commits when the
// pending rows exceed FlushRows/FlushBytes, FlushInterval after the first
// pending row, on Flush requests, and finally on Close. Rows appended while a
// commit runs are picked up by the next one (group commit). After a failed
// commit the rows stay pending and it retries with backoff.
func (db *DB) runFlusher() {
	defer close(db.flusherDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	arm := func(d time.Duration) {
		timer.Reset(d)
		armed = true
	}
	var backoff time.Duration
	var reqs []chan error
	for {
		select {
		case <-db.closing:
			err := db.flushOnce()
			for {
				select {
				case r := <-db.flushReq:
					reqs = append(reqs, r)
					continue
				default:
				}
				break
			}
			for _, r := range reqs {
				r <- err
			}
			db.closeErr = err
			return
		case r := <-db.flushReq:
			reqs = append(reqs, r)
		case <-timer.C:
			armed = false
		case <-db.wake:
			if backoff > 0 || !db.overFlushThreshold() {
				if !armed && db.pendingRows.Load() > 0 {
					arm(db.opts.FlushInterval)
				}
				continue
			}
		}
	drain:
		for {
			select {
			case r := <-db.flushReq:
				reqs = append(reqs, r)
			default:
				break drain
			}
		}
		err := db.flushOnce()
		for _, r := range reqs {
			r <- err
		}
		clear(reqs)
		reqs = reqs[:0]
		timer.Stop()
		armed = false
		if err != nil {
			backoff = min(max(2*backoff, db.opts.FlushInterval), maxFlushRetryPeriod)
			arm(backoff)
			continue
		}
		backoff = 0
		if db.overFlushThreshold() {
			db.signal()
		} else if db.pendingRows.Load() > 0 {
			arm(db.opts.FlushInterval)
		}
	}
}

type rowBatch struct {
	l     *RowLog
	rows  []Row // recycled after the commit: read last instead
	bytes int64
	last  uint64 // id of the last row
}

// commitCap bounds the bytes of one session's rows in one commit
// transaction (rowCost, as pending is counted). Every other writer of the
// DB (session records, events, results) waits for the row commit holding
// bbolt's writer lock, so a flooding session's backlog is committed in
// transactions of bounded size rather than in one.
func (db *DB) commitCap() int64 { return max(int64(db.opts.FlushBytes), 1<<20) }

// flushOnce commits the pending rows of every session, then publishes the
// new committed ids and calls the hook. Rows of a session beyond
// commitCap go into further transactions right after, each followed by
// its hooks, until what was pending when it started is committed (or,
// when the DB is closing, until nothing is pending).
func (db *DB) flushOnce() error {
	limit := 2*int(int64(db.opts.MaxPendingBytes)/db.commitCap()) + 2
	for i := 0; ; i++ {
		db.flushMu.Lock()
		batches, more, err := db.commitPending()
		db.flushMu.Unlock()
		if err != nil {
			return err
		}
		if hook := db.hook.Load(); hook != nil {
			for _, b := range batches {
				(*hook)(b.l.uid, b.last)
			}
		}
		if !more || (i >= limit && !db.closed.Load()) {
			return nil
		}
	}
}

// commitPending commits, in one transaction, the pending rows of every
// session, at most commitCap bytes of each. more reports rows left pending
// by that cap.
func (db *DB) commitPending() (batches []rowBatch, more bool, err error) {
	db.dirtyMu.Lock()
	dirty := db.dirty
	db.dirty, db.spare = db.spare[:0], nil
	db.dirtyMu.Unlock()

	capBytes := db.commitCap()
	for _, l := range dirty {
		l.mu.Lock()
		if len(l.pending) > 0 && !l.deleted {
			rows, bytes := l.pending, l.pendingBytes
			if bytes > capBytes {
				// Take the oldest rows up to the cap (at least one); the
				// rest stays pending in its own slice, so the batch's
				// array can still be recycled.
				var took int64
				k := 0
				for k < len(rows) && (k == 0 || took+rowCost(rows[k].Text) <= capBytes) {
					took += rowCost(rows[k].Text)
					k++
				}
				rest := make([]Row, len(rows)-k, max(len(rows)-k, 256))
				copy(rest, rows[k:])
				clear(rows[k:])
				rows, bytes = rows[:k], took
				l.pending, l.pendingBytes = rest, l.pendingBytes-took
				db.dirtyMu.Lock()
				db.dirty = append(db.dirty, l)
				db.dirtyMu.Unlock()
				more = true
			} else {
				l.pending, l.spare, l.pendingBytes = l.spare, nil, 0
			}
			batches = append(batches, rowBatch{l: l, rows: rows, bytes: bytes, last: rows[len(rows)-1].ID})
		}
		l.mu.Unlock()
	}
	clear(dirty)
	db.dirtyMu.Lock()
	db.spare = dirty[:0]
	db.dirtyMu.Unlock()
	if len(batches) == 0 {
		return nil, false, nil
	}

	// One arena for every value of the transaction, sized up front and
	// reused by the next commit (see DB.rowArena).
	size := 0
	for _, b := range batches {
		size += len(b.rows)*binary.MaxVarintLen64 + int(b.bytes)
	}
	arena := db.rowArena[:0]
	if cap(arena) < size {
		arena = make([]byte, 0, size)
	}
	// Not db.update: Close sets db.closed before the final flush.
	err = mapErr(db.bolt.Update(func(tx *bolt.Tx) error {
		for i := range batches {
			var err error
			if arena, err = writeBatch(tx, &batches[i], arena); err != nil {
				return fmt.Errorf("store: commit rows of %s: %w", batches[i].l.uid, err)
			}
		}
		return nil
	}))
	// The transaction is over: nothing refers to the arena any more.
	db.rowArena = nil
	if cap(arena) <= maxRowArena {
		db.rowArena = arena[:0]
	}
	if err != nil {
		if errors.Is(err, ErrClosed) {
			// Only reachable if bolt was closed underneath us; nothing to retry.
			return nil, false, err
		}
		db.lastFlushErr.Store(&err)
		db.requeue(batches)
		return nil, false, err
	}
	db.lastFlushErr.Store(nil)

	var rows, bytes int64
	for _, b := range batches {
		l, last := b.l, b.last
		l.committed.Store(last)
		if last > RowRetention {
			storeMax(&l.first, last-RowRetention+1)
		}
		rows += int64(len(b.rows))
		bytes += b.bytes
		l.mu.Lock()
		if l.spare == nil && cap(b.rows) <= 4*db.opts.FlushRows {
			clear(b.rows) // drop text references
			l.spare = b.rows[:0]
		}
		l.mu.Unlock()
	}
	db.releasePending(rows, bytes)
	return batches, more, nil
}

// requeue puts the rows of a failed commit back in front of what was appended
// meanwhile, so they are retried in id order.
func (db *DB) requeue(batches []rowBatch) {
	for _, b := range batches {
		l := b.l
		l.mu.Lock()
		if l.deleted {
			l.mu.Unlock()
			db.releasePending(int64(len(b.rows)), b.bytes)
			continue
		}
		if len(l.pending) == 0 {
			db.dirtyMu.Lock()
			db.dirty = append(db.dirty, l)
			db.dirtyMu.Unlock()
		}
		l.pending = append(b.rows, l.pending...)
		l.pendingBytes += b.bytes
		l.mu.Unlock()
	}
}

// maxRowArena bounds the value arena kept between commits.
const maxRowArena = 8 << 20

// writeBatch stores one session's batch and applies row retention: rows
// already outside the window are never written, and chunks whose every id
// is outside it are dropped whole (see rowChunk). bbolt keeps references to
// values until the transaction ends, so they are carved from arena (which
// is returned, appended to, and must not be reused before the transaction
// ends).
func writeBatch(tx *bolt.Tx, b *rowBatch, arena []byte) ([]byte, error) {
	uid := []byte(b.l.uid)
	rb, err := tx.Bucket(bucketRows).CreateBucketIfNotExists(uid)
	if err != nil {
		return arena, err
	}
	rb.FillPercent = appendFillPercent
	metaB := tx.Bucket(bucketRowsMeta)
	_, evicted := decodeRowMeta(metaB.Get(uid))
	last := b.rows[len(b.rows)-1].ID

	newEvicted := evicted
	if last > RowRetention && last-RowRetention > evicted {
		newEvicted = last - RowRetention
	}
	// Drop the chunks that lie wholly at or below newEvicted, oldest first.
	for {
		k, _ := rb.Cursor().First()
		if k == nil || (decodeU64(k)+1)*rowChunk > newEvicted {
			break
		}
		if err := rb.DeleteBucket(k); err != nil {
			return arena, err
		}
	}

	var key [8]byte
	var cb *bolt.Bucket
	cur := ^uint64(0)
	for _, r := range b.rows {
		if r.ID <= newEvicted {
			continue
		}
		if ci := chunkOf(r.ID); ci != cur || cb == nil {
			binary.BigEndian.PutUint64(key[:], ci)
			if cb, err = rb.CreateBucketIfNotExists(key[:]); err != nil {
				return arena, err
			}
			cb.FillPercent = appendFillPercent
			cur = ci
		}
		binary.BigEndian.PutUint64(key[:], r.ID) // Put copies the key
		start := len(arena)
		// A reallocation leaves earlier values in the old array, which
		// stays valid: values are never rewritten.
		arena = appendRow(arena, r)
		if err := cb.Put(key[:], arena[start:len(arena):len(arena)]); err != nil {
			return arena, err
		}
	}
	start := len(arena)
	arena = binary.BigEndian.AppendUint64(arena, last)
	arena = binary.BigEndian.AppendUint64(arena, newEvicted)
	return arena, metaB.Put(uid, arena[start:len(arena):len(arena)])
}
