package store

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// storedRowIDs walks the chunk buckets of uid and returns the ids stored,
// in order, checking that every row sits in its own chunk.
func storedRowIDs(t testing.TB, db *DB, uid string) []uint64 {
	t.Helper()
	var ids []uint64
	err := db.view(func(tx *bolt.Tx) error {
		rb := tx.Bucket(bucketRows).Bucket([]byte(uid))
		if rb == nil {
			return nil
		}
		return rb.ForEach(func(ck, v []byte) error {
			if v != nil {
				t.Errorf("rows/%s holds a plain value at %x (flat layout)", uid, ck)
				return nil
			}
			return rb.Bucket(ck).ForEach(func(k, v []byte) error {
				ents, ok := decodeRows(nil, k, v)
				if !ok {
					t.Errorf("corrupt value at %x", k)
				}
				for _, e := range ents {
					if chunkOf(e.id) != decodeU64(ck) {
						t.Errorf("row %d stored in chunk %d", e.id, decodeU64(ck))
					}
					ids = append(ids, e.id)
				}
				return nil
			})
		})
	})
	must(t, err)
	return ids
}

// Retention drops whole chunks: the store holds between RowRetention and
// RowRetention+rowChunk-1 rows (a contiguous range ending at the last
// committed id) while readers see exactly the newest RowRetention, at
// every commit, whatever the batch size. The flush interval is long so that
// each batch is one commit; 9876 then 10100 is a commit that ends inside the
// chunk where the next commit's window starts (rows of that chunk below the
// window are still written, or the chunk would hold a gap).
func TestRowRetentionChunks(t *testing.T) {
	db := openTestDBOpts(t, Options{FlushRows: 1 << 30, FlushBytes: 1 << 30, MaxPendingBytes: 1 << 30, FlushInterval: time.Hour})
	fastWrites(db)
	l := mustRows(t, db, "s")
	total := uint64(0)
	for _, batch := range []int{7, 999, 1, 4000, 6000, 1500, 2, 12345, 333, 1000, 1000, 17, 25000, 1, 9876, 10100} {
		appendN(t, l, 1, batch)
		must(t, l.Flush())
		total += uint64(batch)
		ids := storedRowIDs(t, db, "s")
		want := min(total, RowRetention)
		if n := uint64(len(ids)); n < want || n > want+rowChunk-1 {
			t.Fatalf("after %d rows: %d stored, want %d..%d", total, n, want, want+rowChunk-1)
		}
		for i, id := range ids {
			if id != ids[0]+uint64(i) {
				t.Fatalf("after %d rows: stored ids not contiguous at %d: %d", total, i, id)
			}
		}
		if ids[len(ids)-1] != total || l.Committed() != total {
			t.Fatalf("after %d rows: last stored %d, Committed %d", total, ids[len(ids)-1], l.Committed())
		}
		first := uint64(1)
		if total > RowRetention {
			first = total - RowRetention + 1
		}
		if l.First() != first {
			t.Fatalf("after %d rows: First = %d, want %d", total, l.First(), first)
		}
		// Rows still stored below First are never returned.
		rows, err := l.Read(0, 0)
		must(t, err)
		checkRows(t, rows, first, total)
		rows, err = l.ReadBefore(first+3, 0)
		must(t, err)
		checkRows(t, rows, first, min(first+2, total))
		rows, err = l.ReadBefore(total+1, 5)
		must(t, err)
		checkRows(t, rows, max(first, total-4), total)
	}
}

// Reads cross chunk boundaries in both directions.
func TestRowReadAcrossChunks(t *testing.T) {
	db := openTestDB(t)
	fastWrites(db)
	l := mustRows(t, db, "s")
	appendN(t, l, 1, 3*rowChunk+10)
	must(t, l.Flush())
	for _, from := range []uint64{1, rowChunk - 1, rowChunk, rowChunk + 1, 2 * rowChunk, 3*rowChunk + 10} {
		rows, err := l.Read(from, 3)
		must(t, err)
		checkRows(t, rows, from, min(from+2, 3*rowChunk+10))
		rows, err = l.ReadBefore(from+1, 4)
		must(t, err)
		checkRows(t, rows, max(1, int64ToU(int64(from)-3)), from)
	}
	rows, err := l.Read(3*rowChunk+11, 0)
	must(t, err)
	if len(rows) != 0 {
		t.Fatalf("read past the end: %d rows", len(rows))
	}
	rows, err = l.ReadBefore(1, 0)
	must(t, err)
	if len(rows) != 0 {
		t.Fatalf("read before the start: %d rows", len(rows))
	}
}

func int64ToU(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// A schema 1 file (rows stored directly under rows/<uid>) is upgraded:
// Open records schema 2, and a session's rows move into chunk buckets the
// first time the session is loaded, unchanged; appending continues.
func TestRowsMigrateFlatLayout(t *testing.T) {
	db := openTestDB(t)
	const last, evicted = 2500, 400
	err := db.update(func(tx *bolt.Tx) error {
		must(t, tx.Bucket(bucketMeta).Put(keySchemaVersion, encodeU64(1)))
		rb, err := tx.Bucket(bucketRows).CreateBucket([]byte("old"))
		if err != nil {
			return err
		}
		for id := uint64(evicted + 1); id <= last; id++ {
			v := binary.AppendUvarint(nil, 3)
			v = append(v, rowText(id)...)
			if err := rb.Put(encodeU64(id), v); err != nil {
				return err
			}
		}
		meta := append(encodeU64(last), encodeU64(evicted)...)
		return tx.Bucket(bucketRowsMeta).Put([]byte("old"), meta)
	})
	must(t, err)
	db = reopen(t, db)
	must(t, db.view(func(tx *bolt.Tx) error {
		if v := decodeU64(tx.Bucket(bucketMeta).Get(keySchemaVersion)); v != SchemaVersion {
			t.Errorf("schema_version after open = %d, want %d", v, SchemaVersion)
		}
		return nil
	}))
	l := mustRows(t, db, "old")
	if l.First() != evicted+1 || l.Committed() != last {
		t.Fatalf("First=%d Committed=%d", l.First(), l.Committed())
	}
	ids := storedRowIDs(t, db, "old")
	if len(ids) != last-evicted || ids[0] != evicted+1 {
		t.Fatalf("stored after migration: %d rows from %v", len(ids), ids[:1])
	}
	rows, err := l.Read(0, 0)
	must(t, err)
	checkRows(t, rows, evicted+1, last)
	if rows[0].Epoch != 3 {
		t.Fatalf("epoch = %d, want 3", rows[0].Epoch)
	}
	appendN(t, l, 4, 10)
	must(t, l.Flush())
	rows, err = l.Read(last-1, 0)
	must(t, err)
	checkRows(t, rows, last-1, last+10)
	must(t, db.Check())
}

// Backpressure is fair: a session flooding while the flusher cannot commit
// stops at 3/4 of MaxPendingBytes, and another session's Append still goes
// through instead of waiting behind it.
func TestAppendBackpressureSparesQuietSessions(t *testing.T) {
	const maxPending = 64 << 10
	db := openTestDBOpts(t, Options{MaxPendingBytes: maxPending, FlushInterval: time.Hour, FlushRows: 1 << 20})
	fastWrites(db)
	noisy, quiet := mustRows(t, db, "noisy"), mustRows(t, db, "quiet")
	text := strings.Repeat("n", 200)
	const floodRows = 2 * maxPending / 200

	db.flushMu.Lock() // no commit can run
	locked := true
	defer func() {
		if locked {
			db.flushMu.Unlock()
		}
	}()
	floodDone := make(chan struct{})
	go func() {
		defer close(floodDone)
		for range floodRows {
			noisy.Append(1, text)
		}
	}()
	for deadline := time.Now().Add(time.Minute); db.pendingBytes.Load() < db.heavyLimit(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood never reached 3/4 of the buffer: %d bytes", db.pendingBytes.Load())
		}
	}
	quietDone := make(chan uint64)
	go func() { quietDone <- quiet.Append(1, "quiet row") }()
	select {
	case id := <-quietDone:
		if id != 1 {
			t.Fatalf("quiet Append returned id %d", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the quiet session's Append waited behind the flood")
	}
	if p := db.pendingBytes.Load(); p >= maxPending {
		t.Fatalf("pending %d bytes: the flood filled the whole buffer", p)
	}
	select {
	case <-floodDone:
		t.Fatal("the flood was not held back while nothing could commit")
	default:
	}
	db.flushMu.Unlock()
	locked = false
	<-floodDone
	must(t, noisy.Flush())
	must(t, quiet.Flush())
	if noisy.Committed() != floodRows || quiet.Committed() != 1 {
		t.Fatalf("committed noisy %d quiet %d", noisy.Committed(), quiet.Committed())
	}
}

// A flooding session's backlog is committed in transactions of at most
// commitCap bytes of its rows, each published (hook) as it commits, while
// a quiet session's rows all go into the first one; Flush still returns
// only once everything appended before it is committed.
func TestCommitCapsFloodPerTransaction(t *testing.T) {
	db := openTestDBOpts(t, Options{FlushInterval: time.Hour, FlushRows: 1 << 30, FlushBytes: 1 << 20, MaxPendingBytes: 64 << 20})
	fastWrites(db)
	var mu sync.Mutex
	var hooks []string
	var steps []uint64
	db.SetCommitHook(func(uid string, through uint64) {
		mu.Lock()
		defer mu.Unlock()
		hooks = append(hooks, uid)
		if uid == "noisy" {
			steps = append(steps, through)
		}
	})
	noisy, quiet := mustRows(t, db, "noisy"), mustRows(t, db, "quiet")
	text := strings.Repeat("f", 300)
	const n = 12_000 // about 4 MiB counted
	texts := make([]string, n)
	for i := range texts {
		texts[i] = text
	}
	// quiet's row is pending first: the flood's own size may start a
	// background flush the moment it is appended, and that first
	// transaction must carry quiet's row, not leave it behind the flood.
	quiet.Append(1, "q")
	noisy.Append(1, texts...)
	must(t, noisy.Flush())
	if noisy.Committed() != n || quiet.Committed() != 1 {
		t.Fatalf("committed noisy %d quiet %d", noisy.Committed(), quiet.Committed())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(steps) < 4 {
		t.Fatalf("noisy committed in %d transactions (%v), want >= 4 for %d bytes", len(steps), steps, n*rowCost(text))
	}
	perTx := uint64(db.commitCap() / rowCost(text))
	prev := uint64(0)
	for _, s := range steps {
		if s-prev > perTx {
			t.Fatalf("one commit took rows %d..%d, more than %d", prev+1, s, perTx)
		}
		prev = s
	}
	if prev != n {
		t.Fatalf("last hook for noisy at %d", prev)
	}
	if i := slices.Index(hooks, "quiet"); i < 0 || i > 1 {
		t.Fatalf("quiet committed at hook %d of %v, want in the first transaction", i, hooks)
	}
	rows, err := noisy.Read(0, 0)
	must(t, err)
	if len(rows) != RowRetention || rows[len(rows)-1].ID != n {
		t.Fatalf("read %d rows ending %d", len(rows), rows[len(rows)-1].ID)
	}
}

// BenchmarkRowReadPage reads a 100-row page from the newest rows back
// and forward, as scrollback and fetch do, in a session at the bound.
func BenchmarkRowReadPage(b *testing.B) {
	db := openTestDBOpts(b, Options{})
	fastWrites(db)
	l := mustRows(b, db, "s")
	text := strings.Repeat("r", 110)
	for range 3 {
		texts := make([]string, RowRetention)
		for i := range texts {
			texts[i] = text
		}
		l.Append(1, texts...)
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	last := l.Committed()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			rows, err := l.ReadBefore(last+1, 100)
			if err != nil || len(rows) != 100 {
				b.Fatal(err, len(rows))
			}
		} else {
			rows, err := l.Read(last-5000, 100)
			if err != nil || len(rows) != 100 {
				b.Fatal(err, len(rows))
			}
		}
	}
}

// Rows stored one per value (schema 2) and in blocks (schema 3) read alike,
// in both directions, from every id, across chunk and block boundaries;
// texts of every length, empty and longer than a block, round-trip.
func TestRowBlocksMixedLayout(t *testing.T) {
	db := openTestDB(t)
	fastWrites(db)
	text := func(id uint64) string {
		switch id % 7 {
		case 0:
			return ""
		case 3:
			return strings.Repeat("x", blockBytes+int(id%5))
		}
		return strings.Repeat(string(rune('a'+id%26)), int(id%150))
	}
	const old = 1200
	err := db.update(func(tx *bolt.Tx) error {
		rb, err := tx.Bucket(bucketRows).CreateBucket([]byte("s"))
		if err != nil {
			return err
		}
		for id := uint64(1); id <= old; id++ {
			cb, err := rb.CreateBucketIfNotExists(encodeU64(chunkOf(id)))
			if err != nil {
				return err
			}
			if err := cb.Put(encodeU64(id), append(binary.AppendUvarint(nil, 2), text(id)...)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketRowsMeta).Put([]byte("s"), append(encodeU64(old), encodeU64(0)...))
	})
	must(t, err)
	db = reopen(t, db)
	fastWrites(db)
	l := mustRows(t, db, "s")
	last := uint64(old)
	for _, n := range []int{1, 70, 5, 900, 1100} {
		for range n {
			last++
			l.Append(3, text(last))
		}
		must(t, l.Flush())
	}
	check := func(what string, rows []Row, from, to uint64) {
		t.Helper()
		if uint64(len(rows)) != to+1-from {
			t.Fatalf("%s: %d rows, want %d..%d", what, len(rows), from, to)
		}
		for i, r := range rows {
			id := from + uint64(i)
			epoch := uint64(3)
			if id <= old {
				epoch = 2
			}
			if r.ID != id || r.Epoch != epoch || r.Text != text(id) {
				t.Fatalf("%s: row %d = %d/%d/%d bytes, want %d/%d/%d bytes", what, i, r.ID, r.Epoch, len(r.Text), id, epoch, len(text(id)))
			}
		}
	}
	for from := uint64(0); from <= last+1; from++ {
		rows, err := l.Read(from, 3)
		must(t, err)
		lo := max(from, 1)
		check("Read", rows, lo, min(lo+2, last))
		rows, err = l.ReadBefore(from, 3)
		must(t, err)
		if hi := min(from, last+1); hi > 1 {
			check("ReadBefore", rows, max(int64ToU(int64(hi)-3), 1), hi-1)
		} else if len(rows) != 0 {
			t.Fatalf("ReadBefore(%d): %d rows", from, len(rows))
		}
	}
	rows, err := l.Read(0, 0)
	must(t, err)
	check("Read all", rows, 1, last)
	rows, err = l.ReadBefore(last+1, 0)
	must(t, err)
	check("ReadBefore all", rows, 1, last)
}

// A corrupt block is an error, not a short read.
func TestRowBlockCorrupt(t *testing.T) {
	for _, v := range [][]byte{nil, {0}, {0, 5, 'a'}, {0, 1, 'a'}, {0, 1, 'a', 0, 1, 'b', 0}} {
		k := append(encodeU64(1), encodeU64(2)...)
		if _, ok := decodeRows(nil, k, v); ok {
			t.Errorf("value %q of rows 1..2 decoded", v)
		}
	}
	k := append(encodeU64(1), encodeU64(2)...)
	ents, ok := decodeRows(nil, k, []byte{7, 1, 'a', 8, 0})
	if !ok || len(ents) != 2 || ents[0].epoch != 7 || string(ents[0].text) != "a" || ents[1].id != 2 || len(ents[1].text) != 0 {
		t.Fatalf("decode = %+v, %v", ents, ok)
	}
}
