package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestOpenFileModeAndSchema(t *testing.T) {
	db := openTestDB(t)
	fi, err := os.Stat(db.Path())
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	must(t, db.bolt.View(func(tx *bolt.Tx) error {
		if v := decodeU64(tx.Bucket(bucketMeta).Get(keySchemaVersion)); v != SchemaVersion {
			t.Errorf("schema_version = %d", v)
		}
		return nil
	}))
}

func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{})
	must(t, err)
	must(t, db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, encodeU64(SchemaVersion+1))
	}))
	must(t, db.Close())
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestClosed(t *testing.T) {
	db := openTestDB(t)
	l := mustRows(t, db, "s")
	must(t, db.Close())
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
	if err := db.PutSession("s", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("PutSession after Close = %v", err)
	}
	if _, err := db.GetSession("s"); !errors.Is(err, ErrClosed) {
		t.Errorf("GetSession after Close = %v", err)
	}
	l.Append(1, "dropped") // must not block or panic
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v", err)
	}
	if _, err := db.Rows("other"); !errors.Is(err, ErrClosed) {
		t.Errorf("Rows after Close = %v", err)
	}
}

func TestSessions(t *testing.T) {
	db := openTestDB(t)
	if _, err := db.GetSession("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetSession missing = %v", err)
	}
	if err := db.PutSession("", []byte("x")); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("PutSession empty uid = %v", err)
	}
	for _, uid := range []string{"c", "a", "b"} {
		must(t, db.PutSession(uid, []byte(`{"uid":"`+uid+`"}`)))
	}
	must(t, db.PutSession("b", []byte(`{"v":2}`)))
	got, err := db.GetSession("b")
	must(t, err)
	if string(got) != `{"v":2}` {
		t.Errorf("GetSession = %s", got)
	}
	list, err := db.ListSessions()
	must(t, err)
	var keys []string
	for _, r := range list {
		keys = append(keys, r.Key)
	}
	if fmt.Sprint(keys) != "[a b c]" {
		t.Errorf("ListSessions keys = %v", keys)
	}
	if string(list[0].Data) != `{"uid":"a"}` {
		t.Errorf("ListSessions[0] = %s", list[0].Data)
	}
}

func TestDeleteSession(t *testing.T) {
	db := openTestDB(t)
	must(t, db.PutSession("s", []byte("{}")))
	must(t, db.PutSession("keep", []byte("{}")))
	must(t, db.PutResult("s", 1, []byte("r")))
	_, err := db.AppendEvent("s", func(uint64) ([]byte, error) { return []byte("e"), nil })
	must(t, err)
	l := mustRows(t, db, "s")
	l.Append(1, "a", "b")
	must(t, l.Flush())
	l.Append(1, "pending")

	must(t, db.DeleteSession("s"))
	if _, err := db.GetSession("s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession after delete = %v", err)
	}
	if _, err := db.GetSession("keep"); err != nil {
		t.Errorf("other session: %v", err)
	}
	if res, _ := db.ListResults("s", 0, 0); len(res) != 0 {
		t.Errorf("results survive: %v", res)
	}
	if ev, _ := db.ReadEvents(0, 0, "s"); len(ev) != 0 {
		t.Errorf("event index survives: %v", ev)
	}
	if _, err := l.Read(1, 0); !errors.Is(err, ErrDeleted) {
		t.Errorf("Read on deleted log = %v", err)
	}
	l.Append(1, "discarded")
	if err := l.Flush(); !errors.Is(err, ErrDeleted) {
		t.Errorf("Flush on deleted log = %v", err)
	}
	if n := db.pendingRows.Load(); n != 0 {
		t.Errorf("pending rows after delete = %d", n)
	}
	l2 := mustRows(t, db, "s")
	if l2 == l || l2.Committed() != 0 {
		t.Errorf("fresh log expected, committed=%d", l2.Committed())
	}
	if rows, _ := l2.Read(1, 0); len(rows) != 0 {
		t.Errorf("rows survive: %v", rows)
	}
}

func TestResults(t *testing.T) {
	db := openTestDB(t)
	for seq := uint64(1); seq <= 5; seq++ {
		must(t, db.PutResult("s", seq, fmt.Appendf(nil, "r%d", seq)))
	}
	must(t, db.PutResult("s", 3, []byte("r3b"))) // overwrite
	must(t, db.PutResult("other", 1, []byte("o1")))
	// 256 sorts after 255 only with big-endian keys.
	must(t, db.PutResult("s", 256, []byte("r256")))
	must(t, db.PutResult("s", 255, []byte("r255")))

	res, err := db.ListResults("s", 0, 0)
	must(t, err)
	var got []string
	for _, r := range res {
		got = append(got, fmt.Sprintf("%d=%s", r.Seq, r.Data))
	}
	if want := "[1=r1 2=r2 3=r3b 4=r4 5=r5 255=r255 256=r256]"; fmt.Sprint(got) != want {
		t.Errorf("ListResults = %v, want %v", got, want)
	}
	res, err = db.ListResults("s", 2, 2)
	must(t, err)
	if len(res) != 2 || res[0].Seq != 3 || res[1].Seq != 4 {
		t.Errorf("ListResults(after 2, limit 2) = %v", res)
	}
	if res, _ := db.ListResults("missing", 0, 10); len(res) != 0 {
		t.Errorf("missing session results = %v", res)
	}
	if w := db.ResultsEvictedThrough("s"); w != 0 {
		t.Errorf("ResultsEvictedThrough = %d", w)
	}
}

func TestResultRetentionCount(t *testing.T) {
	db := openTestDB(t)
	fastWrites(db)
	const n = ResultRetention + 30
	for seq := uint64(1); seq <= n; seq++ {
		must(t, db.PutResult("s", seq, []byte("x")))
	}
	res, err := db.ListResults("s", 0, 0)
	must(t, err)
	if len(res) != ResultRetention || res[0].Seq != n-ResultRetention+1 || res[len(res)-1].Seq != n {
		t.Fatalf("kept %d results [%d..%d]", len(res), res[0].Seq, res[len(res)-1].Seq)
	}
	if w := db.ResultsEvictedThrough("s"); w != n-ResultRetention {
		t.Errorf("ResultsEvictedThrough = %d, want %d", w, n-ResultRetention)
	}
	db = reopen(t, db)
	if w := db.ResultsEvictedThrough("s"); w != n-ResultRetention {
		t.Errorf("after reopen ResultsEvictedThrough = %d", w)
	}
	if w := db.ResultsEvictedThrough("other"); w != 0 {
		t.Errorf("other session watermark = %d", w)
	}
}

func TestResultRetentionBytes(t *testing.T) {
	db := openTestDB(t)
	fastWrites(db)
	body := bytes.Repeat([]byte("b"), 3<<20) // 3 MiB: only 5 fit in 16 MiB
	for seq := uint64(1); seq <= 8; seq++ {
		must(t, db.PutResult("s", seq, body))
	}
	res, err := db.ListResults("s", 0, 0)
	must(t, err)
	if len(res) != 5 || res[0].Seq != 4 {
		t.Fatalf("kept %d results starting at %d, want 5 from 4", len(res), res[0].Seq)
	}
	if w := db.ResultsEvictedThrough("s"); w != 3 {
		t.Errorf("ResultsEvictedThrough = %d, want 3", w)
	}
	// A single oversized result is kept on its own.
	must(t, db.PutResult("s", 9, bytes.Repeat([]byte("B"), 17<<20)))
	res, err = db.ListResults("s", 0, 0)
	must(t, err)
	if len(res) != 1 || res[0].Seq != 9 || len(res[0].Data) != 17<<20 {
		t.Fatalf("after oversized put: %d results", len(res))
	}
	if w := db.ResultsEvictedThrough("s"); w != 8 {
		t.Errorf("ResultsEvictedThrough = %d, want 8", w)
	}
}

func TestReceipts(t *testing.T) {
	db := openTestDB(t)
	fastWrites(db)
	if _, err := db.GetReceipt("r0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetReceipt missing = %v", err)
	}
	must(t, db.PutReceipt("r1", []byte("one")))
	must(t, db.PutReceipt("r2", []byte("two")))
	// Updating r1 in place must not make it younger: it is still dropped first.
	must(t, db.PutReceipt("r1", []byte("one-b")))
	got, err := db.GetReceipt("r1")
	must(t, err)
	if string(got) != "one-b" {
		t.Fatalf("GetReceipt = %q", got)
	}
	for i := 3; i <= ReceiptRetention; i++ {
		must(t, db.PutReceipt(fmt.Sprintf("r%d", i), []byte("x")))
	}
	// Exactly ReceiptRetention stored: all present.
	for _, id := range []string{"r1", "r2", fmt.Sprintf("r%d", ReceiptRetention)} {
		if _, err := db.GetReceipt(id); err != nil {
			t.Errorf("GetReceipt(%s) = %v", id, err)
		}
	}
	must(t, db.PutReceipt("new1", []byte("n")))
	if _, err := db.GetReceipt("r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("oldest receipt r1 not dropped: %v", err)
	}
	if _, err := db.GetReceipt("r2"); err != nil {
		t.Errorf("r2 dropped too early: %v", err)
	}
	db = reopen(t, db)
	must(t, db.PutReceipt("new2", []byte("n")))
	if _, err := db.GetReceipt("r2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("r2 not dropped after reopen: %v", err)
	}
	for _, id := range []string{"r3", "new1", "new2"} {
		if _, err := db.GetReceipt(id); err != nil {
			t.Errorf("GetReceipt(%s) = %v", id, err)
		}
	}
	var n int
	must(t, db.bolt.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketReceipts).Stats().KeyN
		if m := tx.Bucket(bucketReceiptOrder).Stats().KeyN; m != n {
			t.Errorf("receipt_order has %d keys, receipts %d", m, n)
		}
		return nil
	}))
	if n != ReceiptRetention {
		t.Errorf("stored receipts = %d, want %d", n, ReceiptRetention)
	}
}

// DiskCause names a full, read-only or failing disk, wrapped or only
// in the text, and nothing else.
func TestDiskCause(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("write: %w", syscall.ENOSPC), "is full (no space left on device)"},
		{errors.New("open db: " + syscall.EROFS.Error()), "is read-only"},
		{ErrNotFound, ""},
	} {
		if got := DiskCause(c.err); got != c.want {
			t.Errorf("DiskCause(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
