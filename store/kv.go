package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Record is one session entry returned by ListSessions.
type Record struct {
	Key  string
	Data []byte
}

// Result is one stored execution result.
type Result struct {
	Seq  uint64
	Data []byte
}

// PutSession stores (or replaces) the session record for uid.
func (db *DB) PutSession(uid string, data []byte) error {
	if err := checkName(uid); err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error { return putSession(tx, uid, data) })
}

func putSession(tx *bolt.Tx, uid string, data []byte) error {
	return tx.Bucket(bucketSessions).Put([]byte(uid), data)
}

// GetSession returns the session record for uid, or ErrNotFound.
func (db *DB) GetSession(uid string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get([]byte(uid))
		if v == nil {
			return ErrNotFound
		}
		out = clone(v)
		return nil
	})
	return out, err
}

// ListSessions returns all session records ordered by uid (byte order).
func (db *DB) ListSessions() ([]Record, error) {
	var out []Record
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			out = append(out, Record{Key: string(k), Data: clone(v)})
			return nil
		})
	})
	return out, err
}

// Orphans returns the uids that have rows stored but no session record:
// what a writer that never stored its record left (a daemon killed while
// a launch or a warm spare ran), for DeleteSession.
func (db *DB) Orphans() ([]string, error) {
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		sessions := tx.Bucket(bucketSessions)
		seen := map[string]bool{}
		note := func(k []byte) {
			if sessions.Get(k) == nil && !seen[string(k)] {
				seen[string(k)] = true
				out = append(out, string(k))
			}
		}
		if err := tx.Bucket(bucketRowsMeta).ForEach(func(k, _ []byte) error { note(k); return nil }); err != nil {
			return err
		}
		return tx.Bucket(bucketRows).ForEach(func(k, _ []byte) error { note(k); return nil })
	})
	return out, err
}

// DeleteSession removes everything stored under uid: the session record, its
// results and result watermark, its rows and row watermarks, and its event
// index. Events themselves stay in the global log until they age out, so
// ReadEvents(…, "") still returns them. Pending rows of the session are
// discarded and its RowLog becomes unusable (ErrDeleted); a later Rows(uid)
// starts a fresh log at id 1, so callers must not reuse uids.
func (db *DB) DeleteSession(uid string) error {
	if err := checkName(uid); err != nil {
		return err
	}
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.logsMu.Lock()
	l := db.logs[uid]
	delete(db.logs, uid)
	db.logsMu.Unlock()
	if l != nil {
		l.mu.Lock()
		l.deleted = true
		n, nb := int64(len(l.pending)), l.pendingBytes
		l.pending, l.spare, l.pendingBytes = nil, nil, 0
		l.mu.Unlock()
		db.releasePending(n, nb)
	}
	key := []byte(uid)
	return db.update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSessions, bucketResultsEvict, bucketRowsMeta} {
			if err := tx.Bucket(name).Delete(key); err != nil {
				return err
			}
		}
		for _, name := range [][]byte{bucketResults, bucketRows, bucketEventsBySess} {
			parent := tx.Bucket(name)
			if parent.Bucket(key) == nil {
				continue
			}
			if err := parent.DeleteBucket(key); err != nil {
				return err
			}
		}
		return deletePositions(tx, uid)
	})
}

// PutResult stores the result of execution execSeq of session uid,
// overwriting any previous value, then applies retention: the newest
// ResultRetention results or ResultRetentionBytes of bodies, whichever keeps
// fewer (the newest result is always kept, however large). The highest
// evicted seq is recorded durably, see ResultsEvictedThrough.
func (db *DB) PutResult(uid string, execSeq uint64, data []byte) error {
	if err := checkName(uid); err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error { return putResult(tx, uid, execSeq, data) })
}

func putResult(tx *bolt.Tx, uid string, execSeq uint64, data []byte) error {
	b, err := tx.Bucket(bucketResults).CreateBucketIfNotExists([]byte(uid))
	if err != nil {
		return err
	}
	if err := b.Put(encodeU64(execSeq), data); err != nil {
		return err
	}
	var evict []uint64
	n, total := 0, 0
	c := b.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		n++
		total += len(v)
		if n > 1 && (n > ResultRetention || total > ResultRetentionBytes) {
			evict = append(evict, decodeU64(k))
		}
	}
	if len(evict) == 0 {
		return nil
	}
	for _, seq := range evict {
		if err := b.Delete(encodeU64(seq)); err != nil {
			return err
		}
	}
	wm := tx.Bucket(bucketResultsEvict)
	if evict[0] > getU64(wm, []byte(uid)) { // evict[0] is the newest evicted
		return wm.Put([]byte(uid), encodeU64(evict[0]))
	}
	return nil
}

// ListResults returns up to limit results of uid with seq > afterSeq in
// ascending seq order (limit <= 0: no limit).
func (db *DB) ListResults(uid string, afterSeq uint64, limit int) ([]Result, error) {
	var out []Result
	err := db.view(func(tx *bolt.Tx) error {
		out = listResults(tx, uid, afterSeq, limit)
		return nil
	})
	return out, err
}

// listResults is ListResults in tx.
func listResults(tx *bolt.Tx, uid string, afterSeq uint64, limit int) []Result {
	var out []Result
	b := tx.Bucket(bucketResults).Bucket([]byte(uid))
	if b == nil || afterSeq == ^uint64(0) {
		return nil
	}
	c := b.Cursor()
	for k, v := c.Seek(encodeU64(afterSeq + 1)); k != nil; k, v = c.Next() {
		if limit > 0 && len(out) >= limit {
			break
		}
		out = append(out, Result{Seq: decodeU64(k), Data: clone(v)})
	}
	return out
}

// ResultAtOrBefore returns the retained result of uid with the highest
// seq <= maxSeq (ok false: none).
func (db *DB) ResultAtOrBefore(uid string, maxSeq uint64) (r Result, ok bool, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		r, ok = resultAtOrBefore(tx, uid, maxSeq)
		return nil
	})
	return r, ok, err
}

// resultAtOrBefore is ResultAtOrBefore in tx.
func resultAtOrBefore(tx *bolt.Tx, uid string, maxSeq uint64) (Result, bool) {
	b := tx.Bucket(bucketResults).Bucket([]byte(uid))
	if b == nil || maxSeq == 0 {
		return Result{}, false
	}
	c := b.Cursor()
	k, v := c.Seek(encodeU64(maxSeq))
	if k == nil || decodeU64(k) > maxSeq {
		k, v = c.Prev()
	}
	if k == nil {
		return Result{}, false
	}
	return Result{Seq: decodeU64(k), Data: clone(v)}, true
}

// ResultsEvictedThrough returns the highest result seq of uid ever evicted by
// retention, or 0 if none was (or on a read error). A reader whose position is
// below it has missed results.
func (db *DB) ResultsEvictedThrough(uid string) uint64 {
	var v uint64
	_ = db.view(func(tx *bolt.Tx) error {
		v = resultsEvictedThrough(tx, uid)
		return nil
	})
	return v
}

// resultsEvictedThrough is ResultsEvictedThrough in tx.
func resultsEvictedThrough(tx *bolt.Tx, uid string) uint64 {
	return getU64(tx.Bucket(bucketResultsEvict), []byte(uid))
}

// PutReceipt stores the idempotency receipt for requestID. A new id is
// appended to the insertion order and, beyond ReceiptRetention receipts, the
// oldest is dropped; re-putting an existing id replaces its data in place
// without changing its age.
//
// The positions pos (the receipt's cursor) are stored in the same
// transaction (see SavePositions), so a receipt never names a position a
// restarted daemon cannot resolve.
//
// receipts:      requestID -> 8-byte insertion seq ++ data
// receipt_order: seq       -> requestID
func (db *DB) PutReceipt(requestID string, data []byte, pos ...Position) error {
	if err := checkName(requestID); err != nil {
		return err
	}
	for _, p := range pos {
		if err := checkName(p.Scope); err != nil {
			return err
		}
	}
	id := []byte(requestID)
	return db.update(func(tx *bolt.Tx) error {
		if err := putPositions(tx, pos); err != nil {
			return err
		}
		rb, ob, meta := tx.Bucket(bucketReceipts), tx.Bucket(bucketReceiptOrder), tx.Bucket(bucketMeta)
		if old := rb.Get(id); old != nil {
			return rb.Put(id, append(clone(old[:8]), data...))
		}
		seq := getU64(meta, keyReceiptSeq) + 1
		if err := meta.Put(keyReceiptSeq, encodeU64(seq)); err != nil {
			return err
		}
		if err := rb.Put(id, append(encodeU64(seq), data...)); err != nil {
			return err
		}
		ob.FillPercent = appendFillPercent
		if err := ob.Put(encodeU64(seq), id); err != nil {
			return err
		}
		// receipt_order holds a contiguous seq range (only the oldest is ever
		// removed), so its size is seq - first + 1.
		for {
			k, v := ob.Cursor().First()
			if k == nil || seq-decodeU64(k)+1 <= ReceiptRetention {
				return nil
			}
			if err := rb.Delete(clone(v)); err != nil {
				return err
			}
			if err := ob.Delete(clone(k)); err != nil {
				return fmt.Errorf("store: trim receipts: %w", err)
			}
		}
	})
}

// GetReceipt returns the receipt stored for requestID, or ErrNotFound.
func (db *DB) GetReceipt(requestID string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketReceipts).Get([]byte(requestID))
		if len(v) < 8 {
			return ErrNotFound
		}
		out = clone(v[8:])
		return nil
	})
	return out, err
}
