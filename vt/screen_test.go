package vt

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rec collects callbacks in stream order.
type rec struct {
	stable  []string
	replies []string
	events  []string // "S:text", "R:reason" interleaved
}

func newRec(rows, cols int) (*Screen, *rec) {
	r := &rec{}
	s := New(rows, cols, Callbacks{
		Stable: func(rows []string) {
			for _, x := range rows {
				r.stable = append(r.stable, x)
				r.events = append(r.events, "S:"+x)
			}
		},
		Reply: func(b []byte) { r.replies = append(r.replies, string(b)) },
		Reset: func(reason ResetReason) { r.events = append(r.events, "R:"+string(reason)) },
	})
	return s, r
}

func write(s *Screen, parts ...string) {
	for _, p := range parts {
		s.Write([]byte(p))
	}
}

func TestScrollEmitsStableRows(t *testing.T) {
	s, r := newRec(3, 10)
	write(s, "one  \r\ntwo\r\n\r\nfour\r\nfive")
	if want := []string{"one", "two"}; !slices.Equal(r.stable, want) {
		t.Fatalf("stable = %q, want %q", r.stable, want)
	}
	if got, want := s.Live(), []string{"", "four", "five"}; !slices.Equal(got, want) {
		t.Fatalf("live = %q, want %q", got, want)
	}
	if s.Emitted() != 2 {
		t.Fatalf("Emitted = %d", s.Emitted())
	}
	// Autowrap at the bottom row scrolls too.
	write(s, "\r\n0123456789abc")
	if want := []string{"one", "two", "", "four"}; !slices.Equal(r.stable, want) {
		t.Fatalf("stable after wrap = %q", r.stable)
	}
	if got := s.Live(); got[1] != "0123456789" || got[2] != "abc" {
		t.Fatalf("live after wrap = %q", got)
	}
}

func TestClearDoesNotEmit(t *testing.T) {
	s, r := newRec(3, 10)
	write(s, "a\r\nb\r\nc", "\x1b[2J\x1b[H", "x\x1b[1J\x1b[0J\x1b[2K")
	if len(r.stable) != 0 || len(r.events) != 0 {
		t.Fatalf("clears emitted %q", r.events)
	}
	if got := s.Live(); !slices.Equal(got, []string{"", "", ""}) {
		t.Fatalf("live = %q", got)
	}
}

func TestScrollRegion(t *testing.T) {
	// A region that does not start at the top row scrolls without history.
	s, r := newRec(5, 10)
	write(s, "head\x1b[2;4r\x1b[4;1H1\r\n2\r\n3\r\n4\x1b[r")
	if len(r.stable) != 0 {
		t.Fatalf("inner region emitted %q", r.stable)
	}
	if got, want := s.Live(), []string{"head", "2", "3", "4", ""}; !slices.Equal(got, want) {
		t.Fatalf("live = %q, want %q", got, want)
	}
	// A region starting at the top row (Codex's history insertion) emits,
	// like xterm's scrollback; the rows below the region stay put.
	s, r = newRec(5, 10)
	write(s, "h1\r\nh2\r\nh3\x1b[5;1Hfooter\x1b[1;3r\x1b[3;1H\r\nh4\r\nh5\x1b[r")
	if want := []string{"h1", "h2"}; !slices.Equal(r.stable, want) {
		t.Fatalf("top region stable = %q, want %q", r.stable, want)
	}
	if got, want := s.Live(), []string{"h3", "h4", "h5", "", "footer"}; !slices.Equal(got, want) {
		t.Fatalf("live = %q, want %q", got, want)
	}
	// DL at the top row deletes content; it is not history.
	write(s, "\x1b[1;1H\x1b[2M")
	if len(r.stable) != 2 {
		t.Fatalf("DL emitted %q", r.stable)
	}
}

func TestAltScreenNeverEmits(t *testing.T) {
	for _, mode := range []string{"1049", "1047", "47"} {
		t.Run(mode, func(t *testing.T) {
			s, r := newRec(4, 20)
			write(s, "main 1\r\nmain 2")
			write(s, "\x1b[?"+mode+"h")
			if !s.AltScreen() {
				t.Fatal("not in alt screen")
			}
			for i := 0; i < 50; i++ {
				write(s, fmt.Sprintf("alt %d\r\n", i))
			}
			write(s, "\x1b[1;2r\x1b[2;1H\n\n\x1b[r\x1b[10S")
			if len(r.events) != 0 {
				t.Fatalf("alt screen produced %q", r.events)
			}
			write(s, "\x1b[?"+mode+"l")
			if s.AltScreen() {
				t.Fatal("still in alt screen")
			}
			if got := s.Live(); got[0] != "main 1" || got[1] != "main 2" {
				t.Fatalf("main screen not preserved: %q", got)
			}
		})
	}
}

func TestResetReasons(t *testing.T) {
	s, r := newRec(2, 10)
	write(s, "a\r\nb\r\nc\x1bcafter")
	write(s, "\r\nx\r\ny\x1b[3J")
	if !s.Resize(2, 10) == false || s.Resize(3, 10) {
		t.Fatal("row-only resize must not reset")
	}
	if !s.Resize(3, 12) {
		t.Fatal("column resize must reset")
	}
	want := []string{"S:a", "R:ris", "S:after", "R:erase_scrollback", "R:resize"}
	if !slices.Equal(r.events, want) {
		t.Fatalf("events = %q, want %q", r.events, want)
	}
	if s.Epoch() != 3 {
		t.Fatalf("epoch = %d", s.Epoch())
	}
	// RIS blanks the screen; CSI 3 J leaves the grid alone.
	if got := s.Live(); !slices.Equal(got, []string{"x", "y", ""}) {
		t.Fatalf("live = %q", got)
	}
}

func TestResizeShrinkRowsEmits(t *testing.T) {
	s, r := newRec(4, 10)
	write(s, "1\r\n2\r\n3\r\n4")
	if s.Resize(2, 10) {
		t.Fatal("row-only resize reported a reset")
	}
	if want := []string{"1", "2"}; !slices.Equal(r.stable, want) {
		t.Fatalf("stable = %q", r.stable)
	}
	if got := s.Live(); !slices.Equal(got, []string{"3", "4"}) {
		t.Fatalf("live = %q", got)
	}
	if y, x := s.Cursor(); y != 1 || x != 1 {
		t.Fatalf("cursor = %d,%d", y, x)
	}
	// Growing adds blank rows below; nothing comes back from history.
	s.Resize(4, 10)
	if got := s.Live(); !slices.Equal(got, []string{"3", "4", "", ""}) {
		t.Fatalf("live after grow = %q", got)
	}
}

func TestWideCharacters(t *testing.T) {
	s, _ := newRec(3, 12)
	// Claude Code's glyphs are narrow (●, ❯, ✻, ⏺, ⎿); emoji and CJK are wide.
	write(s, "●❯✻⏺⎿ab\r\n🙂c中d\x1b[2;7H|")
	got := s.Live()
	if got[0] != "●❯✻⏺⎿ab" {
		t.Errorf("narrow glyphs row = %q", got[0])
	}
	// 🙂 cols 0-1, c 2, 中 3-4, d 5, | at col 6: nothing shifted.
	if got[1] != "🙂c中d|" {
		t.Errorf("wide row = %q", got[1])
	}
	if y, x := s.Cursor(); y != 1 || x != 7 {
		t.Errorf("cursor = %d,%d", y, x)
	}
	// Overwriting either half of a wide character removes all of it.
	write(s, "\x1b[2;2HX\x1b[2;5HY")
	if got := s.Live()[1]; got != " Xc Yd|" {
		t.Errorf("after overwrite = %q", got)
	}
	// A wide character that does not fit at the margin wraps whole.
	write(s, "\x1b[3;1H01234567890中")
	if got := s.Live(); got[1] != "01234567890" || got[2] != "中" {
		t.Errorf("margin wrap = %q", got)
	}
}

func TestCombiningMarks(t *testing.T) {
	s, _ := newRec(2, 10)
	write(s, "cafe\u0301 n\u0303o")
	if got := s.Live()[0]; got != "cafe\u0301 n\u0303o" {
		t.Fatalf("row = %q", got)
	}
	if _, x := s.Cursor(); x != 7 {
		t.Fatalf("cursor col = %d, want 7 (marks take no cell)", x)
	}
	// A mark after a wide character attaches to it.
	write(s, "\r\n中\u0301x")
	if got := s.Live()[1]; got != "中\u0301x" {
		t.Fatalf("row = %q", got)
	}
}

func TestInvalidUTF8(t *testing.T) {
	s, _ := newRec(2, 10)
	write(s, "a\xffb\xe2\x97c", "\xe2", "\x97", "\x8f")
	if got := s.Live()[0]; got != "a\uFFFDb\uFFFD\uFFFDc●" {
		t.Fatalf("row = %q", got)
	}
}

func TestQueryReplies(t *testing.T) {
	s, r := newRec(5, 20)
	write(s, "\x1b[3;7H\x1b[6n\x1b[c\x1b[0c\x1b[>c\x1b[5n\x1b[?6n\x1b[18t\x1b]10;?\x07\x1b[?1049$p")
	want := []string{"\x1b[3;7R", da1Reply, da1Reply, da2Reply, "\x1b[0n", "\x1b[?3;7R",
		"\x1b[8;5;20t", "\x1b]10;rgb:ffff/ffff/ffff\x07", "\x1b[?1049;2$y"}
	if !slices.Equal(r.replies, want) {
		t.Fatalf("replies = %q\nwant %q", r.replies, want)
	}
	// Queries split across writes still get exactly one answer.
	r.replies = nil
	write(s, "\x1b", "[", "6", "n")
	if !slices.Equal(r.replies, []string{"\x1b[3;7R"}) {
		t.Fatalf("split query replies = %q", r.replies)
	}
}

func TestStableImmutableAndOrdered(t *testing.T) {
	var got []string
	var batches [][]string
	s := New(2, 5, Callbacks{Stable: func(rows []string) {
		got = append(got, rows...)
		batches = append(batches, rows) // retaining the slice is wrong; check it is reused
	}})
	for i := 0; i < 20; i++ {
		fmt.Fprintf(s, "r%d\r\n", i)
	}
	for i, row := range got {
		if want := fmt.Sprintf("r%d", i); row != want {
			t.Fatalf("row %d = %q, want %q", i, row, want)
		}
	}
	_ = batches
}

func TestLiveShape(t *testing.T) {
	s, _ := newRec(4, 8)
	write(s, "a   \t \r\n\r\n")
	got := s.Live()
	if len(got) != 4 || got[0] != "a" || strings.Join(got[1:], "") != "" {
		t.Fatalf("live = %q", got)
	}
}
