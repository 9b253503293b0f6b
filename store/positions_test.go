package store

import (
	"fmt"
	"testing"
)

// Positions and reservations survive a reopen; a reservation never goes
// down; a receipt carries its positions in its own transaction;
// DeleteSession and DeletePositions drop a scope's positions.
func TestPositionsStored(t *testing.T) {
	db := openTestDB(t)
	must(t, db.ReservePositions("s1", 1024))
	must(t, db.ReservePositions("s1", 10)) // never lowers
	must(t, db.SavePositions([]Position{{"s1", 1, []byte(`a`)}, {"s1", 2, []byte(`b`)}, {"*all", 7, []byte(`c`)}, {"s2", 3, []byte(`d`)}}))
	must(t, db.SavePositions([]Position{{Scope: "s1", N: 1}, {"s1", 2000, []byte(`e`)}})) // delete 1; store above the reservation
	must(t, db.PutReceipt("r1", []byte(`{}`), Position{"s2", 4, []byte(`f`)}))
	if err := db.PutReceipt("", []byte(`{}`), Position{"s2", 5, []byte(`g`)}); err == nil {
		t.Fatal("a bad receipt id was stored")
	}
	db = reopen(t, db)
	st, err := db.LoadPositions()
	must(t, err)
	got := fmt.Sprint(st.Positions)
	want := fmt.Sprint([]Position{{"*all", 7, []byte(`c`)}, {"s1", 2, []byte(`b`)}, {"s1", 2000, []byte(`e`)}, {"s2", 3, []byte(`d`)}, {"s2", 4, []byte(`f`)}})
	if got != want {
		t.Fatalf("positions %s, want %s", got, want)
	}
	if st.Reserved["s1"] != 2000 || st.Reserved["s2"] != 4 || st.Reserved["*all"] != 7 {
		t.Fatalf("reserved %v", st.Reserved)
	}
	must(t, db.PutSession("s2", []byte(`{}`)))
	must(t, db.DeleteSession("s2"))
	must(t, db.DeletePositions("s1"))
	st, err = db.LoadPositions()
	must(t, err)
	if fmt.Sprint(st.Positions) != fmt.Sprint([]Position{{"*all", 7, []byte(`c`)}}) || len(st.Reserved) != 1 {
		t.Fatalf("after deleting s1 and s2: %v %v", st.Positions, st.Reserved)
	}
}
