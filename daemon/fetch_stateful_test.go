package daemon

import (
	"slices"
	"testing"
)

// The all:true list is built once and reused while nothing it depends on
// changed, and rebuilt when a Session is added or removed or changes
// whether it carries state.
func TestStatefulListCache(t *testing.T) {
	rt := newFetchRuntime(t)
	ss := idleSessions(t, rt, 3, 0)
	uids := func(l []*session) []string {
		var out []string
		for _, s := range l {
			out = append(out, s.uid)
		}
		return out
	}
	want := uids(ss)
	rt.stateful() // first publishes settle
	a := rt.stateful()
	if got := uids(a); !slices.Equal(got, want) {
		t.Fatalf("stateful = %v, want %v", got, want)
	}
	if b := rt.stateful(); &b[0] != &a[0] {
		t.Fatal("an unchanged list was built again")
	}

	more := idleSessions(t, rt, 1, 0)
	if got := uids(rt.stateful()); !slices.Equal(got, append(want, more[0].uid)) {
		t.Fatalf("after an add: %v", got)
	}

	rt.mu.Lock()
	rt.dropSessionLocked(more[0])
	rt.mu.Unlock()
	if got := uids(rt.stateful()); !slices.Equal(got, want) {
		t.Fatalf("after a removal: %v", got)
	}

	// A Session that no longer carries state leaves the list once it
	// publishes that.
	s := ss[1]
	s.mu.Lock()
	s.rec.ID = ""
	s.publishLocked()
	s.mu.Unlock()
	if got := uids(rt.stateful()); !slices.Equal(got, []string{ss[0].uid, ss[2].uid}) {
		t.Fatalf("after losing its ID: %v", got)
	}
	s.mu.Lock()
	s.rec.ID = "claude:back"
	s.publishLocked()
	s.mu.Unlock()
	if got := uids(rt.stateful()); !slices.Equal(got, want) {
		t.Fatalf("after gaining an ID: %v", got)
	}
}
