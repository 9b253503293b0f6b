package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// childEnv selects a child-process role when the test binary re-execs itself
// (see crash_test.go).
const childEnv = "DLGT_STORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openTestDB opens a fresh DB in t.TempDir(). At cleanup it closes the DB (if
// the test did not), reopens the file and runs Check.
func openTestDB(t testing.TB) *DB {
	t.Helper()
	return openTestDBOpts(t, Options{})
}

func openTestDBOpts(t testing.TB, opts Options) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { checkFile(t, db) })
	return db
}

// checkFile closes db (ignoring ErrClosed), reopens its file and runs Check.
func checkFile(t testing.TB, db *DB) {
	t.Helper()
	if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("Close: %v", err)
	}
	db2, err := Open(db.Path(), Options{})
	if err != nil {
		t.Errorf("reopen for check: %v", err)
		return
	}
	defer db2.Close()
	if err := db2.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// reopen closes db and opens the same file again; the new DB is closed at
// cleanup.
func reopen(t testing.TB, db *DB) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db2, err := Open(db.Path(), db.opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { db2.Close() })
	return db2
}

func mustRows(t testing.TB, db *DB, uid string) *RowLog {
	t.Helper()
	l, err := db.Rows(uid)
	if err != nil {
		t.Fatalf("Rows(%q): %v", uid, err)
	}
	return l
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fastWrites disables fsync on the test DB so retention tests that need tens
// of thousands of write transactions stay quick. Durability is not what they
// test.
func fastWrites(db *DB) { db.bolt.NoSync = true }
