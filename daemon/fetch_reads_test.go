package daemon

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// A fetch with nothing new reads nothing from the store (the change marks
// answer it), and one that finds news reads it in one read transaction for
// the whole document, however many Sessions it covers.
func TestFetchReadsOnlyWhatChanged(t *testing.T) {
	rt := newFetchRuntime(t)
	a, b, c := addSession(t, rt, "ra"), addSession(t, rt, "rb"), addSession(t, rt, "rc")
	runExec(rt, a, "first", "row a1", "row a2")
	catchUp := func(base map[string]any) string {
		doc, _ := fetchDoc(t, rt, base)
		for range 50 {
			p := maps.Clone(base)
			p["cursor"] = doc.Cursor
			next, _ := fetchDoc(t, rt, p)
			if !next.HasMore && next.Cursor == doc.Cursor {
				return doc.Cursor
			}
			doc = next
		}
		t.Fatalf("%v never caught up", base)
		return ""
	}
	all := catchUp(map[string]any{"all": true})
	one := catchUp(map[string]any{"session": b.rec.ID})
	poll := func(base map[string]any, cursor string) (*rpc.FetchDocument, uint64) {
		p := maps.Clone(base)
		p["cursor"] = cursor
		tx := rt.db.ReadTxns()
		doc, _ := fetchDoc(t, rt, p)
		return doc, rt.db.ReadTxns() - tx
	}

	if doc, n := poll(map[string]any{"all": true}, all); n != 0 || doc.Reason != rpc.ReasonTimeout || doc.Cursor != all {
		t.Fatalf("all:true with nothing new: %d read transactions, reason %s", n, doc.Reason)
	}
	if doc, n := poll(map[string]any{"session": b.rec.ID}, one); n != 0 || doc.Reason != rpc.ReasonTimeout || len(doc.Sessions) != 1 {
		t.Fatalf("one Session with nothing new: %d read transactions, reason %s", n, doc.Reason)
	}

	// Two Sessions change: one transaction for the all:true document,
	// which carries exactly them.
	runExec(rt, b, "second", "row b1")
	runExec(rt, c, "third")
	doc, n := poll(map[string]any{"all": true}, all)
	if n != 1 || doc.Reason != rpc.ReasonResult || len(doc.Sessions) != 2 {
		t.Fatalf("all:true after two turns: %d read transactions, reason %s, %d Sessions", n, doc.Reason, len(doc.Sessions))
	}
	for _, bk := range doc.Sessions {
		if bk.Session.ID == a.rec.ID || len(bk.Results) != 1 {
			t.Fatalf("bucket %s with %d results", bk.Session.ID, len(bk.Results))
		}
	}
	doc, n = poll(map[string]any{"session": b.rec.ID}, one)
	if n != 1 || doc.Reason != rpc.ReasonResult || len(doc.Sessions[0].Results) != 1 || len(doc.Sessions[0].Screen.Stable) != 1 {
		t.Fatalf("one Session after a turn: %d read transactions, reason %s, %+v", n, doc.Reason, doc.Sessions[0])
	}
}

// all:true long polls woken by one change from one position share one
// evaluation and one sealed document.
func TestFetchAllWakeSharesOneDocument(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "wa")
	addSession(t, rt, "wb")
	doc, _ := fetchDoc(t, rt, map[string]any{"all": true})
	for doc.HasMore {
		doc, _ = fetchDoc(t, rt, map[string]any{"all": true, "cursor": doc.Cursor})
	}
	var parked sync.WaitGroup
	parked.Add(2)
	hook := func() { parked.Done() }
	fetchParkHook.Store(&hook)
	params, _ := json.Marshal(map[string]any{"all": true, "cursor": doc.Cursor, "wait_ms": 60000})
	docs := make([]*rpc.FetchDocument, 2)
	var done sync.WaitGroup
	for i := range docs {
		done.Add(1)
		go func() {
			defer done.Done()
			res, err := fetchCall(context.Background(), rt, params)
			if err != nil {
				t.Error(err)
				return
			}
			docs[i], _ = res.(*rpc.FetchDocument)
		}()
	}
	parked.Wait()
	fetchParkHook.Store(nil)
	runExec(rt, s, "shared")
	done.Wait()
	// The change that woke them may be the turn's start or its end.
	if docs[0] == nil || docs[0] != docs[1] || len(docs[0].Sessions) != 1 || docs[0].Sessions[0].Session.ID != s.rec.ID {
		t.Fatalf("two woken long polls: %+v / %+v", docs[0], docs[1])
	}
}
