package store

import (
	"errors"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func appendEvent(t testing.TB, db *DB, uid string) uint64 {
	t.Helper()
	seq, err := db.AppendEvent(uid, func(seq uint64) ([]byte, error) {
		return fmt.Appendf(nil, `{"seq":%d,"uid":%q}`, seq, uid), nil
	})
	must(t, err)
	return seq
}

func TestEvents(t *testing.T) {
	db := openTestDB(t)
	if db.LastEventSeq() != 0 || db.EventsEvictedThrough() != 0 {
		t.Fatal("fresh DB has events")
	}
	uids := []string{"a", "b", "a", "", "b", "a"}
	for i, uid := range uids {
		if seq := appendEvent(t, db, uid); seq != uint64(i+1) {
			t.Fatalf("seq = %d, want %d", seq, i+1)
		}
	}
	// A failing build stores nothing and consumes no seq.
	boom := errors.New("boom")
	if _, err := db.AppendEvent("a", func(uint64) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("AppendEvent build error = %v", err)
	}
	if db.LastEventSeq() != 6 {
		t.Fatalf("LastEventSeq = %d", db.LastEventSeq())
	}

	all, err := db.ReadEvents(0, 0, "")
	must(t, err)
	if len(all) != 6 {
		t.Fatalf("ReadEvents all = %d events", len(all))
	}
	for i, e := range all {
		want := fmt.Sprintf(`{"seq":%d,"uid":%q}`, i+1, uids[i])
		if e.Seq != uint64(i+1) || e.SessionUID != uids[i] || string(e.Data) != want {
			t.Errorf("event %d = %+v", i, e)
		}
	}
	a, err := db.ReadEvents(1, 0, "a")
	must(t, err)
	if len(a) != 2 || a[0].Seq != 3 || a[1].Seq != 6 || a[0].SessionUID != "a" {
		t.Errorf("ReadEvents(after 1, a) = %+v", a)
	}
	b, err := db.ReadEvents(0, 1, "b")
	must(t, err)
	if len(b) != 1 || b[0].Seq != 2 {
		t.Errorf("ReadEvents(limit 1, b) = %+v", b)
	}
	page, err := db.ReadEvents(2, 3, "")
	must(t, err)
	if len(page) != 3 || page[0].Seq != 3 || page[2].Seq != 5 {
		t.Errorf("ReadEvents(after 2, limit 3) = %+v", page)
	}
	if ev, _ := db.ReadEvents(0, 0, "nobody"); len(ev) != 0 {
		t.Errorf("unknown session events = %v", ev)
	}
}

func TestEventSeqAcrossReopen(t *testing.T) {
	db := openTestDB(t)
	for range 3 {
		appendEvent(t, db, "s")
	}
	db = reopen(t, db)
	if db.LastEventSeq() != 3 {
		t.Fatalf("LastEventSeq after reopen = %d", db.LastEventSeq())
	}
	if seq := appendEvent(t, db, "s"); seq != 4 {
		t.Fatalf("seq after reopen = %d, want 4", seq)
	}
	ev, err := db.ReadEvents(0, 0, "s")
	must(t, err)
	if len(ev) != 4 || ev[3].Seq != 4 {
		t.Errorf("events after reopen = %+v", ev)
	}
}

func TestEventRetention(t *testing.T) {
	// The real limit (50,000) takes over a minute under -race; the trimming
	// logic does not depend on the number.
	defer func(v uint64) { eventRetention = v }(eventRetention)
	const limit = 2000
	eventRetention = limit
	db := openTestDB(t)
	fastWrites(db)
	const extra = 100
	uids := []string{"a", "b", "", "c"}
	for i := range limit + extra {
		appendEvent(t, db, uids[i%len(uids)])
	}
	if w := db.EventsEvictedThrough(); w != extra {
		t.Fatalf("EventsEvictedThrough = %d, want %d", w, extra)
	}
	all, err := db.ReadEvents(0, 0, "")
	must(t, err)
	if len(all) != limit || all[0].Seq != extra+1 {
		t.Fatalf("kept %d events from %d", len(all), all[0].Seq)
	}
	// The index is trimmed too: per-session reads start after the watermark
	// and the index holds exactly the retained events.
	total := 0
	for _, uid := range []string{"a", "b", "c"} {
		ev, err := db.ReadEvents(0, 0, uid)
		must(t, err)
		if ev[0].Seq <= extra {
			t.Errorf("session %s: first event %d was evicted", uid, ev[0].Seq)
		}
		total += len(ev)
	}
	must(t, db.bolt.View(func(tx *bolt.Tx) error {
		n := 0
		tx.Bucket(bucketEventsBySess).ForEach(func(k, _ []byte) error {
			n += tx.Bucket(bucketEventsBySess).Bucket(k).Stats().KeyN
			return nil
		})
		if n != total {
			t.Errorf("index holds %d entries, reads returned %d", n, total)
		}
		return nil
	}))
	if want := limit * 3 / 4; total != want {
		t.Errorf("indexed events = %d, want %d", total, want)
	}
	db = reopen(t, db)
	if db.EventsEvictedThrough() != extra || db.LastEventSeq() != limit+extra {
		t.Errorf("after reopen: evicted %d last %d", db.EventsEvictedThrough(), db.LastEventSeq())
	}
}
