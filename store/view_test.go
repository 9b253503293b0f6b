package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// A Reader answers as the DB and RowLog methods of the same name, all in
// the one read transaction View counts.
func TestViewReadsAsTheMethods(t *testing.T) {
	db := openTestDB(t)
	for i := 1; i <= 5; i++ {
		if err := db.PutResult("s1", uint64(i), []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendEvent("s1", func(seq uint64) ([]byte, error) { return []byte(fmt.Sprintf(`{"e":%d}`, seq)), nil }); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Rows("s1")
	if err != nil {
		t.Fatal(err)
	}
	rows.Append(1, "a", "b", "c", "d")
	if err := rows.Flush(); err != nil {
		t.Fatal(err)
	}
	wantEv, _ := db.ReadEvents(2, 2, "s1")
	wantRes, _ := db.ListResults("s1", 1, 3)
	wantAt, wantOK, _ := db.ResultAtOrBefore("s1", 4)
	wantRows, _ := rows.Read(2, 2)
	wantBefore, _ := rows.ReadBefore(4, 2)
	before := db.ReadTxns()
	err = db.View(func(r *Reader) error {
		ev, err := r.ReadEvents(2, 2, "s1")
		if err != nil || !reflect.DeepEqual(ev, wantEv) {
			t.Errorf("ReadEvents = %v, %v; want %v", ev, err, wantEv)
		}
		if got := r.ListResults("s1", 1, 3); !reflect.DeepEqual(got, wantRes) {
			t.Errorf("ListResults = %v; want %v", got, wantRes)
		}
		if got, ok := r.ResultAtOrBefore("s1", 4); ok != wantOK || !reflect.DeepEqual(got, wantAt) {
			t.Errorf("ResultAtOrBefore = %v %v; want %v %v", got, ok, wantAt, wantOK)
		}
		if got := r.ResultsEvictedThrough("s1"); got != 0 {
			t.Errorf("ResultsEvictedThrough = %d; want 0", got)
		}
		if got, err := r.Rows(rows, 2, 2); err != nil || !reflect.DeepEqual(got, wantRows) {
			t.Errorf("Rows = %v, %v; want %v", got, err, wantRows)
		}
		if got, err := r.RowsBefore(rows, 4, 2); err != nil || !reflect.DeepEqual(got, wantBefore) {
			t.Errorf("RowsBefore = %v, %v; want %v", got, err, wantBefore)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := db.ReadTxns() - before; n != 1 {
		t.Fatalf("View took %d read transactions, want 1", n)
	}
	if err := db.DeleteSession("s1"); err != nil {
		t.Fatal(err)
	}
	db.View(func(r *Reader) error {
		if _, err := r.Rows(rows, 1, 0); !errors.Is(err, ErrDeleted) {
			t.Errorf("Rows of a deleted session: %v, want ErrDeleted", err)
		}
		return nil
	})
}
