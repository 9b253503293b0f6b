package receipts

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// These tests run a Table on a store of its own: no daemon.

func openTable(t *testing.T) *Table {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(db)
}

func TestDigestIgnoresWhatRetriesChange(t *testing.T) {
	a, err := Digest("session.send", json.RawMessage(`{"session":"s","prompt":"p","request_id":"r1","rows":10}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest("session.send", json.RawMessage(`{"rows":40,"prompt":"p","session":"s","request_id":"r2"}`))
	if a != b {
		t.Errorf("key order or a non-identity parameter changed the digest")
	}
	c, _ := Digest("session.send", json.RawMessage(`{"session":"s","prompt":"q"}`))
	d, _ := Digest("session.create", json.RawMessage(`{"session":"s","prompt":"p"}`))
	if c == a || d == a {
		t.Errorf("another prompt or method has the same digest")
	}
	if _, err := Digest("m", json.RawMessage(`[1]`)); err == nil {
		t.Errorf("a non-object payload was digested")
	}
}

func TestValidateRequestID(t *testing.T) {
	for _, id := range []string{"", strings.Repeat("x", MaxRequestID+1)} {
		var re *rpc.Error
		if err := ValidateRequestID(id); !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument {
			t.Errorf("ValidateRequestID(%d bytes) = %v, want INVALID_ARGUMENT", len(id), err)
		}
	}
	if err := ValidateRequestID("ok-1"); err != nil {
		t.Errorf("a fine id refused: %v", err)
	}
}

func TestReserveReplaysASettledReceipt(t *testing.T) {
	r := openTable(t)
	st, res, err := r.Reserve("id", "d1")
	if err != nil || st != nil || res == nil {
		t.Fatalf("first Reserve = %v, %v, %v", st, res, err)
	}
	want := &Stored{SessionUID: "u", Receipt: rpc.Receipt{ExecutionSeq: 3}}
	if err := r.Finish("id", res, want); err != nil {
		t.Fatal(err)
	}
	got, res2, err := r.Reserve("id", "d1")
	if err != nil || res2 != nil || got == nil || got.Receipt.ExecutionSeq != 3 || got.SessionUID != "u" {
		t.Fatalf("replay = %+v, %v, %v", got, res2, err)
	}
	if _, _, err := r.Reserve("id", "d2"); !errors.Is(err, ErrDifferentPayload) {
		t.Errorf("another payload under the id: %v, want ErrDifferentPayload", err)
	}
}

func TestFailedAcceptanceFreesTheID(t *testing.T) {
	r := openTable(t)
	_, res, _ := r.Reserve("id", "d1")
	done := make(chan *Stored)
	go func() {
		// A concurrent duplicate waits for the winner, then (the winner
		// having failed) reserves the id itself.
		st, res2, err := r.Reserve("id", "d1")
		if err != nil || st != nil || res2 == nil {
			t.Errorf("the waiting duplicate got %v, %v, %v", st, res2, err)
			done <- nil
			return
		}
		r.Finish("id", res2, &Stored{Receipt: rpc.Receipt{ExecutionSeq: 9}})
		done <- st
	}()
	if err := r.Finish("id", res, nil); err != nil {
		t.Fatal(err)
	}
	<-done
	got, _, err := r.Reserve("id", "d1")
	if err != nil || got == nil || got.Receipt.ExecutionSeq != 9 {
		t.Errorf("after the retry: %+v, %v", got, err)
	}
}

func TestProvisionalReceiptOfNothingRecordedIsFree(t *testing.T) {
	r := openTable(t)
	recorded := false
	r.Recorded = func(*Stored) bool { return recorded }
	_, res, _ := r.Reserve("id", "d1")
	r.Provisional(WithAcceptance(context.Background(), "id", res), Stored{SessionUID: "u"})
	// The daemon "dies" here: the reservation is never finished. A later
	// table over the same store sees the provisional receipt.
	r2 := New(r.db)
	r2.Recorded = r.Recorded
	if st, res2, err := r2.Reserve("id", "d1"); err != nil || st != nil || res2 == nil {
		t.Fatalf("an unrecorded provisional receipt: %v, %v, %v; want the id free", st, res2, err)
	}
	recorded = true
	r3 := New(r.db)
	r3.Recorded = r.Recorded
	if st, _, err := r3.Reserve("id", "d1"); err != nil || st == nil || st.State != StateProvisional {
		t.Fatalf("a recorded provisional receipt: %+v, %v; want it replayed", st, err)
	}
}
