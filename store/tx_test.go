package store

import (
	"errors"
	"fmt"
	"testing"
)

// One Update stores a record, a result and an event together, publishes
// the event seq only after the commit, and runs AfterCommit callbacks
// only then.
func TestUpdateCommitsTogether(t *testing.T) {
	db := openTestDB(t)
	appendEvent(t, db, "a")
	var ran []string
	err := db.Update(func(tx *Tx) error {
		must(t, tx.PutResult("s", 1, []byte(`{"r":1}`)))
		must(t, tx.PutSession("s", []byte(`{"state":"idle"}`)))
		seq, err := tx.AppendEvent("s", func(seq uint64) ([]byte, error) { return fmt.Appendf(nil, `{"seq":%d}`, seq), nil })
		must(t, err)
		if seq != 2 {
			t.Errorf("seq %d, want 2", seq)
		}
		if db.LastEventSeq() != 1 {
			t.Errorf("LastEventSeq %d before the commit", db.LastEventSeq())
		}
		tx.AfterCommit(func() { ran = append(ran, fmt.Sprintf("after %d", db.LastEventSeq())) })
		ran = append(ran, "fn")
		return nil
	})
	must(t, err)
	if fmt.Sprint(ran) != "[fn after 2]" {
		t.Errorf("order %v", ran)
	}
	rec, err := db.GetSession("s")
	must(t, err)
	res, err := db.ListResults("s", 0, 0)
	must(t, err)
	evs, err := db.ReadEvents(0, 0, "s")
	must(t, err)
	if string(rec) != `{"state":"idle"}` || len(res) != 1 || len(evs) != 1 || string(evs[0].Data) != `{"seq":2}` {
		t.Errorf("stored record %s, %d results, events %v", rec, len(res), evs)
	}
}

// A failing Update stores nothing, consumes no event seq and runs no
// AfterCommit callback; the same writes through *DB each commit at once.
func TestUpdateAllOrNothing(t *testing.T) {
	db := openTestDB(t)
	boom := errors.New("boom")
	called := false
	err := db.Update(func(tx *Tx) error {
		must(t, tx.PutSession("s", []byte(`{}`)))
		if _, err := tx.AppendEvent("s", func(uint64) ([]byte, error) { return []byte(`{}`), nil }); err != nil {
			return err
		}
		tx.AfterCommit(func() { called = true })
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if _, err := db.GetSession("s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("record stored by a failed Update: %v", err)
	}
	if called || db.LastEventSeq() != 0 {
		t.Errorf("after ran %v, LastEventSeq %d", called, db.LastEventSeq())
	}
	if seq := appendEvent(t, db, "s"); seq != 1 {
		t.Errorf("next seq %d, want 1", seq)
	}
	var w Writer = db
	n := 0
	w.AfterCommit(func() { n++ })
	if n != 1 {
		t.Error("DB.AfterCommit did not run at once")
	}
	if err := db.Update(func(tx *Tx) error { return tx.PutSession("", nil) }); err == nil {
		t.Error("an empty uid was accepted")
	}
}
