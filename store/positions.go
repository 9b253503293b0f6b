package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Fetch positions outlive the daemon that minted them: each scope (a
// session uid, or the all-sessions scope) keeps its minted positions and a
// high-water mark reserved ahead of the numbers handed out, so a restarted
// daemon, crash included, never hands out a number again.
//
// positions:     scope (nested bucket) -> 8-byte n -> data
// positions_hwm: scope -> 8-byte reserved high-water mark
//
// The store does not interpret data and applies no retention: the caller
// deletes what it no longer holds.

// Position is one stored fetch position.
type Position struct {
	Scope string
	N     uint64
	Data  []byte // nil in SavePositions: delete (Scope, N)
}

// PositionState is everything stored about positions.
type PositionState struct {
	Positions []Position        // by scope, then N ascending
	Reserved  map[string]uint64 // per scope: numbers up to it may have been handed out
}

// LoadPositions reads every stored position and reservation.
func (db *DB) LoadPositions() (PositionState, error) {
	st := PositionState{Reserved: map[string]uint64{}}
	err := db.view(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketPositionsHWM).ForEach(func(k, v []byte) error {
			st.Reserved[string(k)] = decodeU64(v)
			return nil
		}); err != nil {
			return err
		}
		parent := tx.Bucket(bucketPositions)
		return parent.ForEach(func(scope, v []byte) error {
			b := parent.Bucket(scope)
			if v != nil || b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if len(k) == 8 {
					st.Positions = append(st.Positions, Position{Scope: string(scope), N: decodeU64(k), Data: clone(v)})
				}
				return nil
			})
		})
	})
	return st, err
}

// ReservePositions raises scope's reserved high-water mark to through
// (never lowers it) and commits before returning.
func (db *DB) ReservePositions(scope string, through uint64) error {
	if err := checkName(scope); err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error { return reservePositions(tx, scope, through) })
}

func reservePositions(tx *bolt.Tx, scope string, through uint64) error {
	b := tx.Bucket(bucketPositionsHWM)
	if getU64(b, []byte(scope)) >= through {
		return nil
	}
	return b.Put([]byte(scope), encodeU64(through))
}

// SavePositions stores and deletes positions in one transaction (a Data
// of nil deletes).
func (db *DB) SavePositions(ps []Position) error {
	for _, p := range ps {
		if err := checkName(p.Scope); err != nil {
			return err
		}
	}
	return db.update(func(tx *bolt.Tx) error { return putPositions(tx, ps) })
}

func putPositions(tx *bolt.Tx, ps []Position) error {
	parent := tx.Bucket(bucketPositions)
	for _, p := range ps {
		if p.Data == nil {
			if b := parent.Bucket([]byte(p.Scope)); b != nil {
				if err := b.Delete(encodeU64(p.N)); err != nil {
					return err
				}
			}
			continue
		}
		b, err := parent.CreateBucketIfNotExists([]byte(p.Scope))
		if err != nil {
			return fmt.Errorf("store: positions of %s: %w", truncate(p.Scope, 64), err)
		}
		if err := b.Put(encodeU64(p.N), p.Data); err != nil {
			return err
		}
		if err := reservePositions(tx, p.Scope, p.N); err != nil {
			return err
		}
	}
	return nil
}

// DeletePositions drops every stored position and the reservation of
// scope.
func (db *DB) DeletePositions(scope string) error {
	if err := checkName(scope); err != nil {
		return err
	}
	return db.update(func(tx *bolt.Tx) error { return deletePositions(tx, scope) })
}

func deletePositions(tx *bolt.Tx, scope string) error {
	key := []byte(scope)
	if err := tx.Bucket(bucketPositionsHWM).Delete(key); err != nil {
		return err
	}
	parent := tx.Bucket(bucketPositions)
	if parent.Bucket(key) == nil {
		return nil
	}
	return parent.DeleteBucket(key)
}
