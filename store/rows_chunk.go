// The stored layout of stable rows: chunk buckets of rowChunk ids, the
// cursor that walks them in id order, the migration from the flat layout,
// and the row value encoding.

package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// rowChunk is how many consecutive ids share one nested bucket: rows/<uid>
// holds one bucket per chunk, keyed by (id-1)/rowChunk, holding id → row.
// Retention drops whole chunks, so ingest writes each row once and never
// deletes rows one by one: a session stores between RowRetention and
// RowRetention+rowChunk-1 rows, of which readers see the newest
// RowRetention (First). Changing it needs a migration of stored rows.
const rowChunk = 1000

func chunkOf(id uint64) uint64 { return (id - 1) / rowChunk }

// rowCursor walks the rows of one session across its chunk buckets in id
// order. A chunk holds values of one row (schema 2, key = id) and blocks of
// consecutive rows (key = first id ++ last id, see appendBlockRow); the
// cursor yields rows either way. bbolt cursors are not valid across writes;
// use it in one transaction without writing to the bucket. After a walk
// ends (nil), err tells a corrupt value from the end of the rows.
type rowCursor struct {
	outer *bolt.Cursor
	rb    *bolt.Bucket
	inner *bolt.Cursor
	ents  []rowEnt // the rows of the current value
	i     int      // the current one
	err   error
}

// rowEnt is one stored row; text points into the transaction's pages.
type rowEnt struct {
	id, epoch uint64
	text      []byte
}

func (e *rowEnt) row() Row { return Row{ID: e.id, Epoch: e.epoch, Text: string(e.text)} }

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

// load decodes the value k, v into c.ents and positions at its first row,
// or its last when back; nil for an empty or corrupt value.
func (c *rowCursor) load(k, v []byte, back bool) *rowEnt {
	ents, ok := decodeRows(c.ents[:0], k, v)
	c.ents = ents
	if !ok {
		c.err = fmt.Errorf("store: corrupt row %x", k)
		c.ents, c.inner = c.ents[:0], nil
		return nil
	}
	if len(ents) == 0 {
		return nil
	}
	c.i = 0
	if back {
		c.i = len(ents) - 1
	}
	return &c.ents[c.i]
}

// seek positions at the first row with id >= id.
func (c *rowCursor) seek(id uint64) *rowEnt {
	ck, _ := c.outer.Seek(encodeU64(chunkOf(max(id, 1))))
	if !c.enter(ck) {
		return nil
	}
	// The value holding id is the last one whose key starts at or below it.
	k, v := c.inner.Seek(encodeU64(id))
	switch {
	case k == nil:
		k, v = c.inner.Last()
	case len(k) >= 8 && decodeU64(k) > id:
		if pk, pv := c.inner.Prev(); pk != nil {
			k, v = pk, pv
		} else {
			k, v = c.inner.First()
		}
	}
	if k == nil {
		return c.next()
	}
	e := c.load(k, v, false)
	if e == nil {
		if c.err != nil {
			return nil
		}
		return c.next()
	}
	for c.ents[c.i].id < id {
		if c.i+1 == len(c.ents) {
			return c.next()
		}
		c.i++
	}
	return &c.ents[c.i]
}

// next moves to the following row.
func (c *rowCursor) next() *rowEnt {
	if c.i+1 < len(c.ents) {
		c.i++
		return &c.ents[c.i]
	}
	for c.inner != nil {
		k, v := c.inner.Next()
		for k == nil {
			ck, _ := c.outer.Next()
			if !c.enter(ck) {
				c.ents = c.ents[:0]
				return nil
			}
			k, v = c.inner.First()
		}
		if e := c.load(k, v, false); e != nil || c.err != nil {
			return e
		}
	}
	return nil
}

// last positions at the newest row.
func (c *rowCursor) last() *rowEnt {
	for ck, _ := c.outer.Last(); ck != nil; ck, _ = c.outer.Prev() {
		if cb := c.rb.Bucket(ck); cb != nil {
			c.inner = cb.Cursor()
			if k, v := c.inner.Last(); k != nil {
				if e := c.load(k, v, true); e != nil || c.err != nil {
					return e
				}
				return c.prev()
			}
		}
	}
	c.inner = nil
	return nil
}

// prev moves to the preceding row.
func (c *rowCursor) prev() *rowEnt {
	if c.i > 0 && c.i < len(c.ents) {
		c.i--
		return &c.ents[c.i]
	}
	for c.inner != nil {
		k, v := c.inner.Prev()
		for k == nil {
			ck, _ := c.outer.Prev()
			if ck == nil {
				c.inner, c.ents = nil, c.ents[:0]
				return nil
			}
			if cb := c.rb.Bucket(ck); cb != nil {
				c.inner = cb.Cursor()
				k, v = c.inner.Last()
			}
		}
		if e := c.load(k, v, true); e != nil || c.err != nil {
			return e
		}
	}
	return nil
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

// A row's value, schema 2: key = id, value = uvarint(epoch) ++ text.
// Still read; new rows are written in blocks.
//
// A block, schema 3: key = first id ++ last id (both big-endian, so a
// block sorts where its first row would), value = for each row of
// first..last, uvarint(epoch) ++ uvarint(len(text)) ++ text. One bbolt
// key per block rather than per row: the B-tree work of a commit (Put,
// spill) was most of the flusher's CPU.
func appendBlockRow(dst []byte, r Row) []byte {
	dst = binary.AppendUvarint(dst, r.Epoch)
	dst = binary.AppendUvarint(dst, uint64(len(r.Text)))
	return append(dst, r.Text...)
}

// Block bounds: rows in one block of a commit, at most blockRows and,
// beyond its first row, blockBytes of text (so that a few blocks share a
// page).
const (
	blockRows  = 64
	blockBytes = 1024
)

// decodeRows appends the rows of the value k, v to dst; ok is false if it
// is corrupt.
func decodeRows(dst []rowEnt, k, v []byte) ([]rowEnt, bool) {
	switch len(k) {
	case 8:
		epoch, n := binary.Uvarint(v)
		if n <= 0 {
			return dst, false
		}
		return append(dst, rowEnt{id: decodeU64(k), epoch: epoch, text: v[n:]}), true
	case 16:
		id, last := decodeU64(k), decodeU64(k[8:])
		if id == 0 || last < id {
			return dst, false
		}
		for ; ; id++ {
			epoch, n := binary.Uvarint(v)
			if n <= 0 {
				return dst, false
			}
			v = v[n:]
			size, n := binary.Uvarint(v)
			if n <= 0 || size > uint64(len(v)-n) {
				return dst, false
			}
			dst = append(dst, rowEnt{id: id, epoch: epoch, text: v[n : n+int(size)]})
			v = v[n+int(size):]
			if id == last {
				return dst, len(v) == 0
			}
		}
	}
	return dst, false
}
