package positions

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// These tests run a Table alone: no daemon, and a store only where what
// is stored is the point.

func expired(t *testing.T, err error) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeCursorExpired {
		t.Fatalf("err = %v, want CURSOR_EXPIRED", err)
	}
}

func TestMintDedupsAndGets(t *testing.T) {
	ps := New(nil, slog.Default())
	a := ps.MintSession("u", fetchdoc.Mark{Event: 3})
	b := ps.MintSession("u", fetchdoc.Mark{Event: 4})
	if a == 0 || b == a {
		t.Fatalf("numbers %d, %d: want distinct and nonzero", a, b)
	}
	if again := ps.MintSession("u", fetchdoc.Mark{Event: 3}); again != a {
		t.Errorf("the same watermark vector minted %d, want the held %d", again, a)
	}
	if other := ps.MintSession("v", fetchdoc.Mark{Event: 3}); other != 1 {
		t.Errorf("another scope numbers on its own: got %d, want 1", other)
	}
	p, err := ps.Get("u", b)
	if err != nil || p.Mark.Event != 4 {
		t.Fatalf("Get = %+v, %v", p, err)
	}
	_, err = ps.Get("u", b+1)
	expired(t, err)
	_, err = ps.Get("u", 0)
	expired(t, err)
	if ps.LastMinted("u") != b {
		t.Errorf("LastMinted = %d, want %d", ps.LastMinted("u"), b)
	}
}

func TestRetentionDropsLeastRecentlyTouched(t *testing.T) {
	old := PerSession
	PerSession = 3
	t.Cleanup(func() { PerSession = old })
	ps := New(nil, slog.Default())
	var ns []uint64
	for i := range 4 {
		ns = append(ns, ps.MintSession("u", fetchdoc.Mark{Event: uint64(i + 1)}))
	}
	_, err := ps.Get("u", ns[0])
	expired(t, err)
	// Touching ns[1] (the same vector again) keeps it over ns[2].
	ps.MintSession("u", fetchdoc.Mark{Event: 2})
	ps.MintSession("u", fetchdoc.Mark{Event: 5})
	if _, err := ps.Get("u", ns[1]); err != nil {
		t.Errorf("the touched position was dropped: %v", err)
	}
	_, err = ps.Get("u", ns[2])
	expired(t, err)
}

func TestAdvanceLinksOneSuccessor(t *testing.T) {
	ps := New(nil, slog.Default())
	n := ps.MintSession("u", fetchdoc.Mark{Event: 1})
	from, _ := ps.Get("u", n)
	if m, q := ps.Successor("u", from); m != 0 || q != nil {
		t.Fatalf("a fresh position has successor %d", m)
	}
	next := ps.Advance("u", from, &Position{Mark: fetchdoc.Mark{Event: 2}})
	if ps.NextOf(from) != next {
		t.Errorf("NextOf = %d, want %d", ps.NextOf(from), next)
	}
	// A second advancing fetch from the same position does not relink it.
	ps.Advance("u", from, &Position{Mark: fetchdoc.Mark{Event: 3}})
	if m, q := ps.Successor("u", from); m != next || q.Mark.Event != 2 {
		t.Errorf("Successor = %d %+v, want %d at event 2", m, q, next)
	}
}

func TestStoredAcrossTables(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ps := New(db, slog.Default())
	if err := ps.Load(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	n := ps.MintSession("u", fetchdoc.Mark{Event: 7, Result: 2})
	gone := ps.MintSession("gone", fetchdoc.Mark{Event: 1})
	all := ps.Mint(AllScope, &Position{All: &fetchdoc.AllMark{Marks: map[string]fetchdoc.Mark{"u": {Event: 7}}}})
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	// A later table (a restarted daemon) holds what was stored, drops the
	// scopes that no longer exist, and numbers after the reservation.
	ps2 := New(db, slog.Default())
	if err := ps2.Load(func(scope string) bool { return scope == "u" }); err != nil {
		t.Fatal(err)
	}
	p, err := ps2.Get("u", n)
	if err != nil || p.Mark != (fetchdoc.Mark{Event: 7, Result: 2}) {
		t.Fatalf("restored %+v, %v", p, err)
	}
	pa, err := ps2.Get(AllScope, all)
	if err != nil || pa.All == nil || pa.All.Marks["u"].Event != 7 {
		t.Fatalf("restored all position %+v, %v", pa, err)
	}
	_, err = ps2.Get("gone", gone)
	expired(t, err)
	if m := ps2.MintSession("u", fetchdoc.Mark{Event: 8}); m <= n {
		t.Errorf("a restarted table minted %d, not after %d", m, n)
	}
	ps2.DropUnsaved()
	if st, ok := ps2.Stored("u", n); !ok || len(st.Data) == 0 {
		t.Errorf("Stored(u, %d) = %+v, %v", n, st, ok)
	}
}
