package store

import bolt "go.etcd.io/bbolt"

// Reader reads inside one read transaction (View): everything it returns
// is one consistent state of the file, for the price of one transaction.
// Its methods behave as the *DB and *RowLog methods of the same name. A
// Reader must not be used after View's fn returns.
type Reader struct {
	tx *bolt.Tx
}

// View runs fn in one read transaction.
func (db *DB) View(fn func(r *Reader) error) error {
	return db.view(func(tx *bolt.Tx) error { return fn(&Reader{tx: tx}) })
}

// ReadEvents is DB.ReadEvents in the transaction.
func (r *Reader) ReadEvents(after uint64, limit int, sessionUID string) ([]Event, error) {
	return readEvents(r.tx, after, limit, sessionUID)
}

// ListResults is DB.ListResults in the transaction.
func (r *Reader) ListResults(uid string, afterSeq uint64, limit int) []Result {
	return listResults(r.tx, uid, afterSeq, limit)
}

// ResultAtOrBefore is DB.ResultAtOrBefore in the transaction.
func (r *Reader) ResultAtOrBefore(uid string, maxSeq uint64) (Result, bool) {
	return resultAtOrBefore(r.tx, uid, maxSeq)
}

// ResultsEvictedThrough is DB.ResultsEvictedThrough in the transaction.
func (r *Reader) ResultsEvictedThrough(uid string) uint64 {
	return resultsEvictedThrough(r.tx, uid)
}

// Rows is l.Read in the transaction (ErrDeleted once l's session was
// deleted).
func (r *Reader) Rows(l *RowLog, fromID uint64, limit int) ([]Row, error) {
	var out []Row
	err := r.rowView(l, func(c *rowCursor, first uint64) (err error) {
		out, err = readRows(c, first, fromID, limit)
		return err
	})
	return out, err
}

// RowsBefore is l.ReadBefore in the transaction.
func (r *Reader) RowsBefore(l *RowLog, beforeID uint64, limit int) ([]Row, error) {
	var out []Row
	err := r.rowView(l, func(c *rowCursor, first uint64) (err error) {
		out, err = readRowsBefore(c, first, beforeID, limit)
		return err
	})
	return out, err
}

func (r *Reader) rowView(l *RowLog, fn func(c *rowCursor, first uint64) error) error {
	l.mu.Lock()
	deleted := l.deleted
	l.mu.Unlock()
	if deleted {
		return ErrDeleted
	}
	return l.viewIn(r.tx, fn)
}
