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
