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
