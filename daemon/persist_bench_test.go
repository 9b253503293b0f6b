package daemon

import (
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// The cost of storing positions (issue 14). Every iteration records a
// lifecycle event and fetches from the previous cursor, so every fetch
// advances and mints a position (stored in a batch, its number reserved
// in blocks). Compare with the same benchmark on a tree without stored
// positions, and with BenchmarkFetchWake for the wake-up latency:
//
//	go test -run '^$' -bench 'FetchAdvance|FetchWake' -benchtime 2000x ./daemon/
func BenchmarkFetchAdvance(b *testing.B) {
	rt := newFetchRuntime(b)
	s := addSession(b, rt, "a")
	doc, _ := fetchDoc(b, rt, map[string]any{"session": "claude:a", "screen": false})
	cur := doc.Cursor
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.mu.Lock()
		rt.emitLocked(s, rpc.Event{Type: rpc.EventProviderRetrying, Attempt: i + 1})
		s.mu.Unlock()
		d, _ := fetchDoc(b, rt, map[string]any{"session": "claude:a", "cursor": cur, "screen": false})
		if d.Cursor == cur {
			b.Fatalf("fetch %d did not advance", i)
		}
		cur = d.Cursor
	}
}

// BenchmarkFetchReplay is fetch throughput from a held position with
// nothing new (no mint, no store write): the read path positions add
// nothing to.
func BenchmarkFetchReplay(b *testing.B) {
	rt := newFetchRuntime(b)
	s := addSession(b, rt, "a")
	runExec(rt, s, "one", "row")
	doc, _ := fetchDoc(b, rt, map[string]any{"session": "claude:a", "screen": false})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fetchDoc(b, rt, map[string]any{"session": "claude:a", "cursor": doc.Cursor, "screen": false})
	}
}
