package store

import bolt "go.etcd.io/bbolt"

// Writer is what a Session's state change writes: its record, a result,
// events. *DB commits each call in a transaction of its own; a *Tx (see
// Update) commits all its calls in one. Every commit ends in an fsync, so
// a change that writes three things (a turn's result, the idle record and
// its event) is about three times cheaper as one Tx.
type Writer interface {
	PutSession(uid string, data []byte) error
	PutResult(uid string, execSeq uint64, data []byte) error
	AppendEvent(sessionUID string, build func(seq uint64) ([]byte, error)) (uint64, error)
	// AfterCommit runs fn once everything written so far through this
	// Writer is durable: at once on *DB, after the commit on a *Tx (never,
	// if it fails).
	AfterCommit(fn func())
}

// AfterCommit runs fn: every *DB write has committed when it returns.
func (db *DB) AfterCommit(fn func()) { fn() }

// Tx is a write transaction taken by Update. Its methods behave as the
// *DB methods of the same name, but nothing is stored (or visible to
// readers) until Update's fn returns nil and the commit succeeds.
type Tx struct {
	tx            *bolt.Tx
	lastEventSeq  uint64
	eventsEvicted uint64
	after         []func()
}

// Update runs fn in one write transaction and commits it: all of fn's
// writes are stored, or (fn or the commit failing) none is.
func (db *DB) Update(fn func(tx *Tx) error) error {
	t := &Tx{}
	err := db.update(func(tx *bolt.Tx) error {
		*t = Tx{tx: tx}
		return fn(t)
	})
	if err != nil {
		return err
	}
	storeMax(&db.lastEventSeq, t.lastEventSeq)
	storeMax(&db.eventsEvicted, t.eventsEvicted)
	for _, fn := range t.after {
		fn()
	}
	return nil
}

// PutSession is DB.PutSession inside the transaction.
func (t *Tx) PutSession(uid string, data []byte) error {
	if err := checkName(uid); err != nil {
		return err
	}
	return putSession(t.tx, uid, data)
}

// PutResult is DB.PutResult inside the transaction.
func (t *Tx) PutResult(uid string, execSeq uint64, data []byte) error {
	if err := checkName(uid); err != nil {
		return err
	}
	return putResult(t.tx, uid, execSeq, data)
}

// AppendEvent is DB.AppendEvent inside the transaction: the seq it
// returns is the event's once the transaction commits.
func (t *Tx) AppendEvent(sessionUID string, build func(seq uint64) ([]byte, error)) (uint64, error) {
	if len(sessionUID) > bolt.MaxKeySize {
		return 0, checkName(sessionUID)
	}
	seq, evicted, err := putEvent(t.tx, sessionUID, build)
	if err != nil {
		return 0, err
	}
	t.lastEventSeq, t.eventsEvicted = max(t.lastEventSeq, seq), max(t.eventsEvicted, evicted)
	return seq, nil
}

// AfterCommit defers fn until the transaction has committed.
func (t *Tx) AfterCommit(fn func()) { t.after = append(t.after, fn) }
