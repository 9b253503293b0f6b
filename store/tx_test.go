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

func TestResultAtOrBefore(t *testing.T) {
	db := openTestDB(t)
	for _, seq := range []uint64{2, 5, 9} {
		must(t, db.PutResult("s", seq, fmt.Appendf(nil, `{"seq":%d}`, seq)))
	}
	for _, c := range []struct{ max, want uint64 }{{0, 0}, {1, 0}, {2, 2}, {4, 2}, {5, 5}, {8, 5}, {9, 9}, {100, 9}, {^uint64(0), 9}} {
		r, ok, err := db.ResultAtOrBefore("s", c.max)
		must(t, err)
		if got := map[bool]uint64{true: r.Seq}[ok]; got != c.want || (ok && string(r.Data) != fmt.Sprintf(`{"seq":%d}`, c.want)) {
			t.Errorf("ResultAtOrBefore(%d) = %d %v %s, want %d", c.max, r.Seq, ok, r.Data, c.want)
		}
	}
	if _, ok, err := db.ResultAtOrBefore("none", 10); ok || err != nil {
		t.Errorf("unknown uid: %v %v", ok, err)
	}
}
