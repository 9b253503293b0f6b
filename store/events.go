package store

import (
	"encoding/binary"
	"errors"

	bolt "go.etcd.io/bbolt"
)

// Event is one lifecycle event.
type Event struct {
	Seq        uint64
	SessionUID string
	Data       []byte
}

// AppendEvent assigns the next global event seq (monotonic across restarts)
// and stores build(seq) under it, all in one write transaction; if build
// returns an error nothing is stored and the seq is not consumed. build runs
// inside the bbolt write transaction and must not call back into the store.
// Beyond EventRetention events the oldest are dropped (from the event log and
// the per-session index) and EventsEvictedThrough advances.
//
// events:            seq -> uvarint(len(uid)) ++ uid ++ data
// events_by_session: uid -> (seq -> "")   (not written for uid "")
func (db *DB) AppendEvent(sessionUID string, build func(seq uint64) ([]byte, error)) (uint64, error) {
	if len(sessionUID) > bolt.MaxKeySize {
		return 0, checkName(sessionUID)
	}
	var seq, evicted uint64
	err := db.update(func(tx *bolt.Tx) (err error) {
		seq, evicted, err = putEvent(tx, sessionUID, build)
		return err
	})
	if err != nil {
		return 0, err
	}
	storeMax(&db.lastEventSeq, seq)
	storeMax(&db.eventsEvicted, evicted)
	return seq, nil
}

// putEvent is AppendEvent inside tx; it returns the event's seq and the
// events evicted through, to be published once tx commits.
func putEvent(tx *bolt.Tx, sessionUID string, build func(seq uint64) ([]byte, error)) (seq, evicted uint64, err error) {
	meta, events, index := tx.Bucket(bucketMeta), tx.Bucket(bucketEvents), tx.Bucket(bucketEventsBySess)
	seq = getU64(meta, keyEventSeq) + 1
	data, err := build(seq)
	if err != nil {
		return 0, 0, err
	}
	val := binary.AppendUvarint(nil, uint64(len(sessionUID)))
	val = append(append(val, sessionUID...), data...)
	events.FillPercent = appendFillPercent
	if err := events.Put(encodeU64(seq), val); err != nil {
		return 0, 0, err
	}
	if sessionUID != "" {
		ib, err := index.CreateBucketIfNotExists([]byte(sessionUID))
		if err != nil {
			return 0, 0, err
		}
		ib.FillPercent = appendFillPercent
		if err := ib.Put(encodeU64(seq), []byte{}); err != nil {
			return 0, 0, err
		}
	}
	if err := meta.Put(keyEventSeq, encodeU64(seq)); err != nil {
		return 0, 0, err
	}
	// events holds exactly the seqs (evicted, seq].
	evicted = getU64(meta, keyEventsEvicted)
	if seq-evicted <= eventRetention {
		return seq, evicted, nil
	}
	for ; seq-evicted > eventRetention; evicted++ {
		k := encodeU64(evicted + 1)
		if uid, _, ok := decodeEvent(events.Get(k)); ok && uid != "" {
			if ib := index.Bucket([]byte(uid)); ib != nil {
				if err := ib.Delete(k); err != nil {
					return 0, 0, err
				}
				if k, _ := ib.Cursor().First(); k == nil {
					if err := index.DeleteBucket([]byte(uid)); err != nil {
						return 0, 0, err
					}
				}
			}
		}
		if err := events.Delete(k); err != nil {
			return 0, 0, err
		}
	}
	return seq, evicted, meta.Put(keyEventsEvicted, encodeU64(evicted))
}

// ReadEvents returns up to limit events with seq > after in ascending order
// (limit <= 0: no limit). sessionUID "" returns events of all sessions;
// otherwise only that session's events, found through the per-session index.
func (db *DB) ReadEvents(after uint64, limit int, sessionUID string) ([]Event, error) {
	var out []Event
	if after == ^uint64(0) {
		return nil, nil
	}
	err := db.view(func(tx *bolt.Tx) (err error) {
		out, err = readEvents(tx, after, limit, sessionUID)
		return err
	})
	return out, err
}

// readEvents is ReadEvents in tx.
func readEvents(tx *bolt.Tx, after uint64, limit int, sessionUID string) ([]Event, error) {
	var out []Event
	if after == ^uint64(0) {
		return nil, nil
	}
	start := encodeU64(after + 1)
	full := func() bool { return limit > 0 && len(out) >= limit }
	err := func() error {
		events := tx.Bucket(bucketEvents)
		if sessionUID == "" {
			c := events.Cursor()
			for k, v := c.Seek(start); k != nil && !full(); k, v = c.Next() {
				uid, data, ok := decodeEvent(v)
				if !ok {
					return errCorruptEvent
				}
				out = append(out, Event{Seq: decodeU64(k), SessionUID: uid, Data: clone(data)})
			}
			return nil
		}
		ib := tx.Bucket(bucketEventsBySess).Bucket([]byte(sessionUID))
		if ib == nil {
			return nil
		}
		c := ib.Cursor()
		for k, _ := c.Seek(start); k != nil && !full(); k, _ = c.Next() {
			uid, data, ok := decodeEvent(events.Get(k))
			if !ok {
				return errCorruptEvent
			}
			out = append(out, Event{Seq: decodeU64(k), SessionUID: uid, Data: clone(data)})
		}
		return nil
	}()
	return out, err
}

// eventRetention is EventRetention; tests lower it to keep -race runs quick.
var eventRetention uint64 = EventRetention

var errCorruptEvent = errors.New("store: corrupt event record")

// LastEventSeq returns the seq of the newest event ever appended (0 if none).
func (db *DB) LastEventSeq() uint64 { return db.lastEventSeq.Load() }

// EventsEvictedThrough returns the highest event seq dropped by retention (0
// if none). A reader positioned below it has missed events.
func (db *DB) EventsEvictedThrough() uint64 { return db.eventsEvicted.Load() }

func decodeEvent(v []byte) (uid string, data []byte, ok bool) {
	if v == nil {
		return "", nil, false
	}
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return "", nil, false
	}
	return string(v[w : w+int(n)]), v[w+int(n):], true
}
