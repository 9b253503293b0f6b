package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func rowText(id uint64) string { return fmt.Sprintf("row %d", id) }

// appendN appends n rows whose text encodes their id.
func appendN(t testing.TB, l *RowLog, epoch uint64, n int) (first uint64) {
	t.Helper()
	for i := range n {
		l.mu.Lock()
		next := l.next
		l.mu.Unlock()
		id := l.Append(epoch, rowText(next))
		if id != next {
			t.Fatalf("Append returned %d, want %d (single appender)", id, next)
		}
		if i == 0 {
			first = id
		}
	}
	return first
}

func checkRows(t testing.TB, rows []Row, from, to uint64) {
	t.Helper()
	if uint64(len(rows)) != to-from+1 {
		t.Fatalf("got %d rows, want ids %d..%d", len(rows), from, to)
	}
	for i, r := range rows {
		id := from + uint64(i)
		if r.ID != id || r.Text != rowText(id) {
			t.Fatalf("row %d = %+v, want id %d text %q", i, r, id, rowText(id))
		}
	}
}

func TestRowsBasic(t *testing.T) {
	db := openTestDB(t)
	l := mustRows(t, db, "s")
	if l2 := mustRows(t, db, "s"); l2 != l {
		t.Error("Rows returned a different log for the same uid")
	}
	if l.First() != 1 || l.Committed() != 0 {
		t.Fatalf("fresh log First=%d Committed=%d", l.First(), l.Committed())
	}
	if id := l.Append(7, "a", "b", "c"); id != 1 {
		t.Fatalf("first id = %d", id)
	}
	if id := l.Append(8, "d"); id != 4 {
		t.Fatalf("second id = %d", id)
	}
	if id := l.Append(8); id != 5 {
		t.Fatalf("empty Append = %d, want next id 5", id)
	}
	must(t, l.Flush())
	if l.Committed() != 4 {
		t.Fatalf("Committed = %d", l.Committed())
	}
	rows, err := l.Read(2, 2)
	must(t, err)
	if len(rows) != 2 || rows[0] != (Row{2, 7, "b"}) || rows[1] != (Row{3, 7, "c"}) {
		t.Errorf("Read(2,2) = %+v", rows)
	}
	rows, err = l.Read(1, 0)
	must(t, err)
	if len(rows) != 4 || rows[3] != (Row{4, 8, "d"}) {
		t.Errorf("Read(1,0) = %+v", rows)
	}
	rows, err = l.ReadBefore(4, 2)
	must(t, err)
	if len(rows) != 2 || rows[0].ID != 2 || rows[1].ID != 3 {
		t.Errorf("ReadBefore(4,2) = %+v", rows)
	}
	rows, err = l.ReadBefore(100, 3)
	must(t, err)
	if len(rows) != 3 || rows[0].ID != 2 || rows[2].ID != 4 {
		t.Errorf("ReadBefore(100,3) = %+v", rows)
	}
	if rows, _ = l.ReadBefore(1, 10); len(rows) != 0 {
		t.Errorf("ReadBefore(1) = %+v", rows)
	}
	if rows, _ = l.Read(5, 10); len(rows) != 0 {
		t.Errorf("Read past end = %+v", rows)
	}
	// Sessions are independent.
	other := mustRows(t, db, "other")
	if id := other.Append(1, "x"); id != 1 {
		t.Errorf("other session first id = %d", id)
	}
}

func TestRowsNotVisibleBeforeCommit(t *testing.T) {
	db := openTestDBOpts(t, Options{FlushInterval: time.Hour, FlushRows: 1 << 20})
	l := mustRows(t, db, "s")
	l.Append(1, "a")
	if rows, _ := l.Read(1, 0); len(rows) != 0 || l.Committed() != 0 {
		t.Fatalf("uncommitted row visible: %+v committed=%d", rows, l.Committed())
	}
	must(t, l.Flush())
	if rows, _ := l.Read(1, 0); len(rows) != 1 || l.Committed() != 1 {
		t.Fatalf("after Flush: %+v committed=%d", rows, l.Committed())
	}
}

func TestRowsFlushedByInterval(t *testing.T) {
	db := openTestDBOpts(t, Options{FlushInterval: 5 * time.Millisecond})
	l := mustRows(t, db, "s")
	l.Append(1, "a")
	deadline := time.Now().Add(10 * time.Second)
	for l.Committed() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("row never committed without Flush")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRowsContinueAfterReopen(t *testing.T) {
	db := openTestDB(t)
	l := mustRows(t, db, "s")
	appendN(t, l, 1, 10)
	must(t, l.Flush())
	db = reopen(t, db)
	l = mustRows(t, db, "s")
	if l.Committed() != 10 || l.First() != 1 {
		t.Fatalf("after reopen Committed=%d First=%d", l.Committed(), l.First())
	}
	if id := appendN(t, l, 2, 5); id != 11 {
		t.Fatalf("id after reopen = %d, want 11", id)
	}
	// Close commits pending rows.
	db = reopen(t, db)
	l = mustRows(t, db, "s")
	rows, err := l.Read(0, 0)
	must(t, err)
	checkRows(t, rows, 1, 15)
}

func TestRowRetention(t *testing.T) {
	db := openTestDBOpts(t, Options{FlushRows: 2000})
	fastWrites(db)
	l := mustRows(t, db, "s")
	const total = 2*RowRetention + 1234
	appendN(t, l, 1, total)
	must(t, l.Flush())
	wantFirst := uint64(total - RowRetention + 1)
	if l.First() != wantFirst || l.Committed() != total {
		t.Fatalf("First=%d Committed=%d, want %d %d", l.First(), l.Committed(), wantFirst, total)
	}
	rows, err := l.Read(1, 0)
	must(t, err)
	checkRows(t, rows, wantFirst, total)
	rows, err = l.ReadBefore(wantFirst+5, 100)
	must(t, err)
	checkRows(t, rows, wantFirst, wantFirst+4)

	// A single batch larger than the retention window.
	appendN(t, l, 1, RowRetention+10)
	must(t, l.Flush())
	last := uint64(total + RowRetention + 10)
	rows, err = l.Read(0, 0)
	must(t, err)
	checkRows(t, rows, last-RowRetention+1, last)

	db = reopen(t, db)
	l = mustRows(t, db, "s")
	if l.First() != last-RowRetention+1 || l.Committed() != last {
		t.Fatalf("after reopen First=%d Committed=%d", l.First(), l.Committed())
	}
}

func TestCommitHook(t *testing.T) {
	db := openTestDB(t)
	var mu sync.Mutex
	seen := map[string]uint64{}
	db.SetCommitHook(func(uid string, through uint64) {
		// The hook may read; it must see what it is told about.
		l, _ := db.Rows(uid)
		if rows, err := l.ReadBefore(through+1, 1); err != nil || len(rows) != 1 || rows[0].ID != through {
			t.Errorf("hook(%s,%d): read %+v %v", uid, through, rows, err)
		}
		mu.Lock()
		if through < seen[uid] {
			t.Errorf("hook for %s went backwards: %d after %d", uid, through, seen[uid])
		}
		seen[uid] = through
		mu.Unlock()
	})
	a, b := mustRows(t, db, "a"), mustRows(t, db, "b")
	a.Append(1, "1", "2")
	b.Append(1, "1")
	must(t, a.Flush())
	mu.Lock()
	if seen["a"] != 2 || seen["b"] != 1 {
		t.Errorf("hook saw %v", seen)
	}
	mu.Unlock()
	db.SetCommitHook(nil)
	a.Append(1, "3")
	must(t, a.Flush())
}

// Many sessions appending concurrently (several goroutines per session) while
// readers page through committed rows.
func TestRowsConcurrent(t *testing.T) {
	db := openTestDBOpts(t, Options{MaxPendingBytes: 64 << 10})
	const sessions, writersPer, perWriter = 8, 3, 2000
	var commits sync.Map
	db.SetCommitHook(func(uid string, through uint64) { commits.Store(uid, through) })
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for s := range sessions {
		l := mustRows(t, db, fmt.Sprintf("s%d", s))
		for w := range writersPer {
			wg.Go(func() {
				for i := range perWriter {
					l.Append(uint64(w), fmt.Sprintf("w%d-%d", w, i))
					if i%500 == 0 {
						if err := l.Flush(); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
	}
	var readers sync.WaitGroup
	for s := range sessions {
		l := mustRows(t, db, fmt.Sprintf("s%d", s))
		readers.Go(func() {
			var pos uint64 = 1
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := l.Committed()
				rows, err := l.Read(pos, 100)
				if err != nil {
					t.Error(err)
					return
				}
				for i, r := range rows {
					if r.ID != pos+uint64(i) {
						t.Errorf("gap: got %d want %d", r.ID, pos+uint64(i))
						return
					}
				}
				if len(rows) > 0 {
					pos = rows[len(rows)-1].ID + 1
				} else if pos <= c {
					t.Errorf("Committed=%d but Read(%d) empty", c, pos)
					return
				}
				if _, err := l.ReadBefore(pos, 50); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for s := range sessions {
		uid := fmt.Sprintf("s%d", s)
		l := mustRows(t, db, uid)
		must(t, l.Flush())
		const n = writersPer * perWriter
		if l.Committed() != n {
			t.Errorf("%s committed %d, want %d", uid, l.Committed(), n)
		}
		rows, err := l.Read(0, 0)
		must(t, err)
		if len(rows) != n {
			t.Fatalf("%s has %d rows", uid, len(rows))
		}
		// Each writer's rows are in its own order.
		next := make([]int, writersPer)
		for _, r := range rows {
			want := fmt.Sprintf("w%d-%d", r.Epoch, next[r.Epoch])
			if r.Text != want {
				t.Fatalf("%s row %d = %q, want %q", uid, r.ID, r.Text, want)
			}
			next[r.Epoch]++
		}
		if v, _ := commits.Load(uid); v != uint64(n) {
			t.Errorf("last hook for %s = %v", uid, v)
		}
	}
	if db.pendingRows.Load() != 0 || db.pendingBytes.Load() != 0 {
		t.Errorf("pending counters not zero: %d rows %d bytes", db.pendingRows.Load(), db.pendingBytes.Load())
	}
}

// With a tiny buffer, Append must block and resume as the flusher commits,
// without deadlocking, including when the hook is slow.
func TestAppendBackpressure(t *testing.T) {
	db := openTestDBOpts(t, Options{MaxPendingBytes: 4 << 10, FlushInterval: time.Hour, FlushRows: 1 << 20})
	fastWrites(db)
	db.SetCommitHook(func(string, uint64) { time.Sleep(100 * time.Microsecond) })
	text := strings.Repeat("x", 100)
	var wg sync.WaitGroup
	const goroutines, per = 4, 1500
	var blocked sync.Map
	for g := range goroutines {
		l := mustRows(t, db, fmt.Sprintf("s%d", g))
		wg.Go(func() {
			for range per {
				l.Append(1, text)
				if b := db.pendingBytes.Load(); b > 4<<10+goroutines*(100+rowOverhead) {
					blocked.Store(g, b)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Append deadlocked under backpressure")
	}
	blocked.Range(func(k, v any) bool {
		t.Errorf("goroutine %v saw pending bytes %v above the bound", k, v)
		return true
	})
	for g := range goroutines {
		l := mustRows(t, db, fmt.Sprintf("s%d", g))
		must(t, l.Flush())
		if l.Committed() != per {
			t.Errorf("s%d committed %d", g, l.Committed())
		}
	}
}

// Close must release Appends blocked on backpressure.
func TestCloseReleasesBlockedAppend(t *testing.T) {
	db := openTestDBOpts(t, Options{MaxPendingBytes: 1 << 10, FlushInterval: time.Hour, FlushRows: 1 << 20})
	l := mustRows(t, db, "s")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10000 {
				l.Append(1, strings.Repeat("y", 200))
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	must(t, db.Close())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Append still blocked after Close")
	}
}
