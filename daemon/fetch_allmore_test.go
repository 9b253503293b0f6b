package daemon

import (
	"fmt"
	"strings"
	"testing"
)

// TestFetchAllEnumerationHasMoreUntilTextDelivered: a cursorless all:true
// enumeration keeps has_more:true until every Session's long final_text has
// been delivered in full; the call after a has_more:false page has nothing
// left to return for the unchanged Sessions.
func TestFetchAllEnumerationHasMoreUntilTextDelivered(t *testing.T) {
	for _, layout := range []struct {
		name string
		long []int // which of the Sessions carry a long final_text
		n    int
	}{
		{"last of one", []int{0}, 1},
		{"last of three", []int{2}, 3},
		{"first of three", []int{0}, 3},
		{"every one of five", []int{0, 1, 2, 3, 4}, 5},
	} {
		t.Run(layout.name, func(t *testing.T) {
			rt := newFetchRuntime(t)
			want := map[string]string{}
			for i := 0; i < layout.n; i++ {
				s := addSession(t, rt, fmt.Sprintf("%s-%d", strings.ReplaceAll(layout.name, " ", "-"), i))
				text := fmt.Sprint("short ", i)
				for _, l := range layout.long {
					if l == i {
						text = strings.Repeat(fmt.Sprintf("long text %d. ", i), 8000) // ~100 KB
					}
				}
				seq := runExec(rt, s, text)
				want[fmt.Sprintf("%s#%d", s.rec.ID, seq)] = text
			}
			for _, mb := range []int{0, 4000, 64 << 10} {
				ra := newReassembler(t)
				cursor := any(nil)
				for pages := 0; ; pages++ {
					if pages > 1000 {
						t.Fatal("no end")
					}
					params := map[string]any{"all": true}
					if mb > 0 {
						params["max_bytes"] = mb
					}
					if cursor != nil {
						params["cursor"] = cursor
					}
					raw, err := fetchRaw(t, rt, params)
					if err != nil {
						t.Fatalf("max_bytes %d page %d: %v", mb, pages, err)
					}
					doc := ra.apply(raw)
					if doc.HasMore && doc.Cursor == cursor {
						t.Fatalf("has_more without advancing: %s", raw)
					}
					cursor = doc.Cursor
					if !doc.HasMore {
						break
					}
				}
				for k, text := range want {
					if ra.f.results[k] != text {
						t.Fatalf("max_bytes %d: has_more:false with %s delivered %d of %d bytes", mb, k, len(ra.f.results[k]), len(text))
					}
				}
				// Nothing changed since: the next call returns nothing.
				doc, raw := fetchDoc(t, rt, map[string]any{"all": true, "cursor": cursor})
				if len(doc.Sessions) != 0 || doc.HasMore || doc.Cursor != cursor {
					t.Fatalf("max_bytes %d: after has_more:false the next call returned %s", mb, raw)
				}
			}
		})
	}
}

// TestFetchAllEnumerationStaysBaseline: every page of a cursorless all:true
// enumeration, including those that continue a long final_text after the
// last Session was enumerated, is a baseline page (reason "snapshot") with
// has_more:true until the last, which has has_more:false; the text is
// delivered whole, and the next call returns nothing. A change made while
// the text is being continued is delivered by then too.
func TestFetchAllEnumerationStaysBaseline(t *testing.T) {
	for _, mb := range []int{0, 4000} {
		t.Run(fmt.Sprint("max_bytes ", mb), func(t *testing.T) {
			rt := newFetchRuntime(t)
			short := addSession(t, rt, fmt.Sprintf("stay-short-%d", mb))
			runExec(rt, short, "short")
			long := addSession(t, rt, fmt.Sprintf("stay-long-%d", mb))
			text := strings.Repeat("a long final text. ", 6000) // ~110 KB: several pages at any budget
			seq := runExec(rt, long, text)
			ra := newReassembler(t)
			cursor := any(nil)
			type page struct {
				from    any
				cursor  string
				hasMore bool
			}
			var seen []page
			pages := 0
			for ; ; pages++ {
				if pages > 1000 {
					t.Fatal("no end")
				}
				params := map[string]any{"all": true, "wait_ms": 60000}
				if mb > 0 {
					params["max_bytes"] = mb
				}
				if cursor != nil {
					params["cursor"] = cursor
				}
				raw, err := fetchRaw(t, rt, params)
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				doc := ra.apply(raw)
				if doc.Reason != "snapshot" {
					t.Fatalf("page %d of the enumeration has reason %q (has_more %v), want snapshot: %.300s", pages, doc.Reason, doc.HasMore, raw)
				}
				if doc.HasMore && doc.Cursor == cursor {
					t.Fatalf("page %d: has_more without advancing", pages)
				}
				seen = append(seen, page{cursor, doc.Cursor, doc.HasMore})
				cursor = doc.Cursor
				if pages == 1 {
					runExec(rt, short, "changed meanwhile") // a change during the enumeration
				}
				if !doc.HasMore {
					break
				}
			}
			if pages < 2 {
				t.Fatalf("the text took %d pages; the test needs several", pages+1)
			}
			if got := ra.f.results[resKey(long.rec.ID, seq)]; got != text {
				t.Fatalf("has_more:false with %d of %d bytes of the long text", len(got), len(text))
			}
			if got := ra.f.results[resKey(short.rec.ID, 2)]; got != "changed meanwhile" {
				t.Fatalf("the change made during the enumeration was not delivered by its end: %q", got)
			}
			doc, raw := fetchDoc(t, rt, map[string]any{"all": true, "cursor": cursor})
			if len(doc.Sessions) != 0 || doc.HasMore || doc.Cursor != cursor || doc.Reason != "timeout" {
				t.Fatalf("after the enumeration the next call returned %s", raw)
			}
			// Replaying a page's cursor returns that page again: a baseline
			// page leading to the same position.
			for i, p := range seen[1:] {
				params := map[string]any{"all": true, "cursor": p.from}
				if mb > 0 {
					params["max_bytes"] = mb
				}
				doc, raw := fetchDoc(t, rt, params)
				if doc.Reason != "snapshot" || doc.Cursor != p.cursor || doc.HasMore != p.hasMore {
					t.Fatalf("replaying page %d (cursor %v, then %s has_more %v) returned %.300s", i+1, p.from, p.cursor, p.hasMore, raw)
				}
			}
		})
	}
}
