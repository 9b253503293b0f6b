package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Child roles, selected by childEnv; the DB path is in pathEnv.
const pathEnv = "DLGT_STORE_TEST_PATH"

var crashSessions = []string{"crash-a", "crash-b"}

func runChild(role string) error {
	path := os.Getenv(pathEnv)
	switch role {
	case "crash":
		return childCrash(path)
	case "lock":
		return childLock(path)
	case "diskfull":
		return childDiskFull(path)
	}
	return fmt.Errorf("unknown role %q", role)
}

// childCrash appends rows forever to two sessions and prints "<uid> <id>"
// whenever it learns (from the commit hook or after Flush) that id is
// committed. The parent SIGKILLs it at a random point.
func childCrash(path string) error {
	db, err := Open(path, Options{FlushInterval: 2 * time.Millisecond})
	if err != nil {
		return err
	}
	var outMu sync.Mutex
	report := func(uid string, id uint64) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(os.Stdout, "%s %d\n", uid, id) // unbuffered: one write(2) per line
	}
	db.SetCommitHook(report)
	logs := make([]*RowLog, len(crashSessions))
	for i, uid := range crashSessions {
		if logs[i], err = db.Rows(uid); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		l := logs[i%len(logs)]
		l.mu.Lock()
		id := l.next
		l.mu.Unlock()
		if got := l.Append(id/100, rowText(id)); got != id {
			return fmt.Errorf("Append returned %d, want %d", got, id)
		}
		if i%97 == 0 {
			if err := l.Flush(); err != nil {
				return err
			}
			report(l.uid, l.Committed())
		}
		if i%1000 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

func startChild(t *testing.T, role, path string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, pathEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, bufio.NewScanner(stdout)
}

// TestCrashDurability: every row id a killed writer reported as committed
// must be readable, with the right text, after reopening; ids continue
// across crashes; the file passes Check.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	for cycle := range 4 {
		cmd, _, out := startChild(t, "crash", path)
		reported := map[string]uint64{}
		lines := 0
		killAt := 50 + cycle*150
		for out.Scan() {
			uid, idStr, _ := strings.Cut(out.Text(), " ")
			id, err := strconv.ParseUint(idStr, 10, 64)
			if err != nil {
				t.Fatalf("bad child line %q", out.Text())
			}
			reported[uid] = max(reported[uid], id)
			if lines++; lines == killAt {
				must(t, cmd.Process.Signal(syscall.SIGKILL))
				// Keep reading: lines already in the pipe were printed
				// before the kill and must hold too.
			}
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("cycle %d: child did not die by SIGKILL: %v (after %d lines)", cycle, err, lines)
		}

		db, err := Open(path, Options{})
		must(t, err)
		if err := db.Check(); err != nil {
			t.Fatalf("cycle %d: Check after crash: %v", cycle, err)
		}
		for _, uid := range crashSessions {
			l := mustRows(t, db, uid)
			if l.Committed() < reported[uid] {
				t.Fatalf("cycle %d %s: reported %d committed, reopened log has %d", cycle, uid, reported[uid], l.Committed())
			}
			rows, err := l.Read(0, 0)
			must(t, err)
			if len(rows) == 0 || rows[0].ID != l.First() || rows[len(rows)-1].ID != l.Committed() {
				t.Fatalf("cycle %d %s: rows do not span First..Committed (%d..%d)", cycle, uid, l.First(), l.Committed())
			}
			for i, r := range rows {
				if r.ID != l.First()+uint64(i) || r.Text != rowText(r.ID) || r.Epoch != r.ID/100 {
					t.Fatalf("cycle %d %s: bad row %+v", cycle, uid, r)
				}
			}
			t.Logf("cycle %d %s: reported %d, committed %d, first %d", cycle, uid, reported[uid], l.Committed(), l.First())
		}
		must(t, db.Close())
	}
}

// childLock holds the DB open until its stdin is closed.
func childLock(path string) error {
	db, err := Open(path, Options{})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return db.Close()
}

func TestErrLockedByOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cmd, stdin, out := startChild(t, "lock", path)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("child did not start: %q", out.Text())
	}
	start := time.Now()
	_, err := Open(path, Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while locked = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "another dlgt daemon is using the state directory") {
		t.Errorf("error message = %q", err)
	}
	t.Logf("ErrLocked after %v", time.Since(start))
	stdin.Close()
	must(t, cmd.Wait())
	db, err := Open(path, Options{})
	must(t, err)
	must(t, db.Close())
}

// childDiskFull runs with RLIMIT_FSIZE so writes past a few MiB fail with
// EFBIG, standing in for ENOSPC. It appends until a commit fails, checks that
// the failure surfaces as errors (not panics), and reports the last
// committed id.
func childDiskFull(path string) error {
	signal.Ignore(syscall.SIGXFSZ)
	const limit = 2 << 20
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return err
	}
	db, err := Open(path, Options{})
	if err != nil {
		return err
	}
	l, err := db.Rows("full")
	if err != nil {
		return err
	}
	var flushErr error
	for i := 0; i < 100_000 && flushErr == nil; i++ {
		l.mu.Lock()
		id := l.next
		l.mu.Unlock()
		l.Append(id/100, rowText(id)+strings.Repeat(".", 1000))
		if i%50 == 0 {
			flushErr = l.Flush()
		}
	}
	if flushErr == nil {
		return errors.New("disk never filled")
	}
	if db.LastFlushError() == nil {
		return errors.New("LastFlushError is nil after a failed flush")
	}
	if err := db.PutSession("big", make([]byte, 4<<20)); err == nil {
		return errors.New("PutSession past the size limit succeeded")
	}
	if _, err := db.AppendEvent("full", func(uint64) ([]byte, error) { return make([]byte, 4<<20), nil }); err == nil {
		return errors.New("AppendEvent past the size limit succeeded")
	}
	// Small writes that fit in free pages may still work; either way no panic.
	_ = db.PutSession("small", []byte("{}"))

	raw, err := OpenRawLog(filepath.Dir(path), "full", 64<<20)
	if err != nil {
		return err
	}
	n, err := raw.Write(make([]byte, 3<<20))
	if err == nil || n >= 3<<20 {
		return fmt.Errorf("raw Write past the size limit: n=%d err=%v", n, err)
	}
	raw.Close()

	fmt.Printf("committed %d\n", l.Committed())
	fmt.Printf("flusherr %v\n", flushErr)
	fmt.Printf("close %v\n", db.Close())
	return nil
}

func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	cmd, _, out := startChild(t, "diskfull", path)
	var committed uint64
	for out.Scan() {
		t.Log("child:", out.Text())
		if v, ok := strings.CutPrefix(out.Text(), "committed "); ok {
			committed, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child failed: %v", err)
	}
	if committed == 0 {
		t.Fatal("child committed nothing")
	}
	db, err := Open(path, Options{})
	must(t, err)
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("Check after disk full: %v", err)
	}
	l := mustRows(t, db, "full")
	if l.Committed() < committed {
		t.Fatalf("committed %d before, %d after reopen", committed, l.Committed())
	}
	rows, err := l.Read(0, 0)
	must(t, err)
	for i, r := range rows {
		if r.ID != uint64(i)+1 || !strings.HasPrefix(r.Text, rowText(r.ID)+".") {
			t.Fatalf("bad row %d: %d %.20q", i, r.ID, r.Text)
		}
	}
	// With the limit gone the store works again.
	l.Append(1, "after")
	must(t, l.Flush())
}
