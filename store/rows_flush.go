// The row flusher: batching appended rows into bbolt transactions, the
// backpressure on appenders, and retention by whole chunks.

package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
		size += len(b.rows)*binary.MaxVarintLen64 + int(b.bytes) // bytes counts rowOverhead per row: room for the lengths too
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

	// Rows go in blocks (see appendBlockRow) of consecutive ids within
	// one chunk. Rows of the dropped chunks are not written; rows of the
	// oldest kept chunk are, even below newEvicted: an earlier commit may
	// have stored the start of that chunk, and skipping them would leave a
	// gap between those rows and the window.
	dropped := newEvicted / rowChunk * rowChunk // the ids of dropped chunks are <= this
	var key [16]byte
	var cb *bolt.Bucket
	cur := ^uint64(0)
	rows := b.rows
	for len(rows) > 0 && rows[0].ID <= dropped {
		rows = rows[1:]
	}
	for len(rows) > 0 {
		ci := chunkOf(rows[0].ID)
		if ci != cur || cb == nil {
			binary.BigEndian.PutUint64(key[:8], ci)
			if cb, err = rb.CreateBucketIfNotExists(key[:8]); err != nil {
				return arena, err
			}
			cb.FillPercent = appendFillPercent
			cur = ci
		}
		// A reallocation leaves earlier values in the old array, which
		// stays valid: values are never rewritten.
		start := len(arena)
		arena = appendBlockRow(arena, rows[0])
		n, text := 1, 0
		for n < len(rows) && n < blockRows && rows[n].ID == rows[n-1].ID+1 && chunkOf(rows[n].ID) == ci &&
			text+len(rows[n].Text) <= blockBytes {
			text += len(rows[n].Text)
			arena = appendBlockRow(arena, rows[n])
			n++
		}
		binary.BigEndian.PutUint64(key[:8], rows[0].ID) // Put copies the key
		binary.BigEndian.PutUint64(key[8:], rows[n-1].ID)
		if err := cb.Put(key[:], arena[start:len(arena):len(arena)]); err != nil {
			return arena, err
		}
		rows = rows[n:]
	}
	start := len(arena)
	arena = binary.BigEndian.AppendUint64(arena, last)
	arena = binary.BigEndian.AppendUint64(arena, newEvicted)
	return arena, metaB.Put(uid, arena[start:len(arena):len(arena)])
}
