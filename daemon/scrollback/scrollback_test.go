package scrollback

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// history is rows 1..n, row i's text "h<i>"; first is the oldest kept.
type history struct{ first, n uint64 }

func (h history) Committed() uint64 { return h.n }
func (h history) First() uint64     { return h.first }
func (h history) ReadBefore(before uint64, limit int) ([]store.Row, error) {
	var out []store.Row
	for id := before - 1; id >= h.first && id > 0 && len(out) < limit; id-- {
		out = append([]store.Row{{ID: id, Text: fmt.Sprint("h", id)}}, out...)
	}
	return out, nil
}

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []struct {
		id   uint64
		live int
	}{{1, 0}, {12345, 0}, {7, 3}} {
		id, live, err := ParseCursor(Cursor(c.id, c.live))
		if err != nil || id != c.id || live != c.live {
			t.Errorf("%v: parsed %d %d %v", c, id, live, err)
		}
	}
	for _, bad := range []string{"", "x", "scr_", "scr_!", "scr_1.0", "scr_1.-", "scr_1.zzzzzz"} {
		var e *rpc.Error
		if _, _, err := ParseCursor(bad); !errors.As(err, &e) || e.Field != "before" {
			t.Errorf("%q: %v, want an error on before", bad, err)
		}
	}
}

func TestLinesClamped(t *testing.T) {
	for in, want := range map[int]int{0: DefaultLines, -5: 1, 7: 7, MaxLines + 1: MaxLines} {
		if got := Lines(in); got != want {
			t.Errorf("Lines(%d) = %d, want %d", in, got, want)
		}
	}
}

// Paging back from the newest page: the live rows last, then history,
// each page's cursor reaching the next, until the oldest row kept.
func TestReadPagesBack(t *testing.T) {
	h := history{first: 3, n: 10}
	live := func() []string { return []string{"l1", "l2", "l3", "l4", "l5"} }
	var pages []string
	before := ""
	for range 10 {
		var p rpc.ScrollbackPage
		if err := Read(h, before, 4, live, &p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, strings.Join(p.Lines, " "))
		if !p.Truncated {
			break
		}
		before = p.Before
	}
	want := []string{"l2 l3 l4 l5", "h8 h9 h10 l1", "h4 h5 h6 h7", "h3"}
	if strings.Join(pages, "|") != strings.Join(want, "|") {
		t.Fatalf("pages %q, want %q", pages, want)
	}
	// The grid scrolled since the cursor: history only.
	var p rpc.ScrollbackPage
	if err := Read(history{first: 3, n: 11}, Cursor(11, 1), 4, live, &p); err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Lines, " ") != "h7 h8 h9 h10" {
		t.Fatalf("after a scroll: %q", p.Lines)
	}
	if err := Read(h, "nope", 4, live, &p); err == nil {
		t.Fatal("a bad cursor was read")
	}
}

func TestTrimBlank(t *testing.T) {
	if got := TrimBlank([]string{"a", "", "b", "", ""}); strings.Join(got, "|") != "a||b" {
		t.Fatalf("TrimBlank = %q", got)
	}
	if got := TrimBlank([]string{"", ""}); len(got) != 0 {
		t.Fatalf("TrimBlank of blanks = %q", got)
	}
}
