package vt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// recorder collects a Screen's stable rows, with resets as "<reset R>".
type recorder struct{ rows []string }

func (r *recorder) screen(rows, cols int) *Screen {
	return New(rows, cols, Callbacks{
		Stable: func(rs []string) { r.rows = append(r.rows, rs...) },
		Reset:  func(reason ResetReason) { r.rows = append(r.rows, "<reset "+string(reason)+">") },
	})
}

// lines prints rows "<prefix> i" for i in [from, to] at the cursor, each
// followed by CRLF.
func lines(prefix string, from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%s %d\r\n", prefix, i)
	}
	return b.String()
}

func want(parts ...[]string) []string { return slices.Concat(parts...) }

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s %d", prefix, i))
	}
	return out
}

// Codex inline: on a resize it erases the scrollback and prints its whole
// transcript again. The reprint is not stored twice; what follows it is.
func TestReprintAfterEraseScrollbackDropped(t *testing.T) {
	var r recorder
	s := r.screen(5, 20)
	s.Write([]byte(lines("row", 1, 12))) // rows 1..8 scroll off; 9..12 visible
	s.Write([]byte("\x1b[H\x1b[2J\x1b[3J"))
	s.Write([]byte(lines("row", 1, 14) + lines("new", 1, 5)))
	got := r.rows
	// History: 1..8, the reset, then the rows that were only on the grid
	// (9..12), the two rows printed past the old end (13, 14), new rows.
	exp := want(seq("row", 1, 8), []string{"<reset erase_scrollback>"}, seq("row", 9, 14), seq("new", 1, 1))
	if !slices.Equal(got, exp) {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}
}

// The reprint may start at the bottom of the erased grid: the blank rows
// that scroll off before it go with it.
func TestReprintLeadingBlanksDropped(t *testing.T) {
	var r recorder
	s := r.screen(5, 20)
	s.Write([]byte(lines("row", 1, 12)))
	s.Write([]byte("\x1b[2J\x1b[3J\x1b[5;1H"))
	s.Write([]byte(lines("row", 1, 12) + lines("new", 1, 5)))
	exp := want(seq("row", 1, 8), []string{"<reset erase_scrollback>"}, seq("row", 9, 12), seq("new", 1, 1))
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows:\n%q\nwant:\n%q", r.rows, exp)
	}
}

// Codex after a width change: the reprint wraps the same words at the new
// width; it is still recognised, and a row reaching past the end of the old
// history (the rest of the line was on the grid) is delivered.
func TestReprintRewrappedDropped(t *testing.T) {
	var r recorder
	s := r.screen(4, 20)
	wrap := func(words []string, width int) []string {
		var rows []string
		cur := ""
		for _, w := range words {
			if cur != "" && len(cur)+1+len(w) > width {
				rows, cur = append(rows, cur), ""
			}
			if cur != "" {
				cur += " "
			}
			cur += w
		}
		return append(rows, cur)
	}
	var words []string
	for i := range 40 {
		words = append(words, fmt.Sprintf("w%02d", i))
	}
	narrow := wrap(words, 20) // 8 rows of 5 words
	s.Write([]byte(strings.Join(narrow, "\r\n") + "\r\n"))
	// 5 rows scrolled off: words 0..24; 25..39 and a blank row are on the grid.
	s.Resize(4, 30)
	s.Write([]byte("\x1b[H\x1b[2J\x1b[3J"))
	wide := wrap(words, 30) // 6 rows of 7 words (the last 5)
	s.Write([]byte(strings.Join(wide, "\r\n") + "\r\nafter\r\n\r\n\r\n\r\n"))
	// Wide rows 0..2 hold words 0..20 (history); row 3 holds 21..27, past
	// the end of history (24): delivered, as are the rest.
	exp := want(narrow[:5], []string{"<reset resize>", "<reset erase_scrollback>"}, wide[3:], []string{"after"})
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows:\n%q\nwant:\n%q", r.rows, exp)
	}
}

// Claude Code inline: after a width change it homes, erases the screen and
// prints the tail of its output that fits, starting with rows already in
// history; once they scroll off they are not stored again.
func TestReprintOverlapAfterResizeDropped(t *testing.T) {
	var r recorder
	s := r.screen(5, 20)
	s.Write([]byte(lines("row", 1, 10))) // 1..6 in history, 7..10 + blank visible
	s.Resize(5, 16)
	// Repaint from the top: the last two history rows, then the grid rows.
	s.Write([]byte("\x1b[H\x1b[2K\x1b[1B\x1b[2K\x1b[1B\x1b[2K\x1b[1B\x1b[2K\x1b[1B\x1b[2K\x1b[H"))
	s.Write([]byte(lines("row", 5, 10) + lines("more", 1, 6)))
	exp := want(seq("row", 1, 6), []string{"<reset resize>"}, seq("row", 7, 10), seq("more", 1, 2))
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(r.rows, "\n"), strings.Join(exp, "\n"))
	}
}

// New output after a reset that does not repeat history is delivered, in
// order, even when its first rows happen to repeat some history rows.
func TestReprintNotARepeatDelivered(t *testing.T) {
	var r recorder
	s := r.screen(3, 20)
	s.Write([]byte(lines("row", 1, 8))) // 1..6 in history
	s.Write([]byte("\x1b[3J"))
	// "row 3", "row 4" repeat history but do not run to its end.
	s.Write([]byte("row 3\r\nrow 4\r\nother\r\n\r\n\r\n\r\n"))
	exp := want(seq("row", 1, 6), []string{"<reset erase_scrollback>"}, seq("row", 7, 8), []string{"row 3", "row 4", "other", ""})
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows:\n%q\nwant:\n%q", r.rows, exp)
	}
	// Outside the window after a reset, repeats are stored as usual.
	r.rows = nil
	s.Write([]byte("row 5\r\nrow 6\r\n\r\n\r\n"))
	if exp := []string{"", "", "row 5", "row 6"}; !slices.Equal(r.rows, exp) {
		t.Fatalf("rows %q, want %q", r.rows, exp)
	}
}

// A run of blank rows alone is never taken for a reprint.
func TestReprintBlankRunKept(t *testing.T) {
	var r recorder
	s := r.screen(3, 20)
	s.Write([]byte("a\r\n\r\n\r\n\r\n\r\n")) // history "a", "", ""
	s.Resize(4, 20)
	s.Write([]byte("\x1b[4;1H\r\n\r\nb\r\n\r\n\r\n\r\n"))
	// Every row that scrolled off is delivered: nine line feeds at the
	// bottom, nine rows.
	if got := strings.Join(r.rows, "|"); got != "a||||||||b" {
		t.Fatalf("rows %q", r.rows)
	}
}

// A second reset in the middle of a reprint (a resize and back) drops the
// rows held so far and watches the next reprint.
func TestReprintInterruptedByReset(t *testing.T) {
	var r recorder
	s := r.screen(4, 20)
	s.Write([]byte(lines("row", 1, 10))) // 1..7 in history
	s.Write([]byte("\x1b[3J\x1b[H\x1b[2J" + lines("row", 1, 6)))
	s.Write([]byte("\x1b[3J\x1b[H\x1b[2J" + lines("row", 1, 14)))
	exp := want(seq("row", 1, 7), []string{"<reset erase_scrollback>", "<reset erase_scrollback>"}, seq("row", 8, 11))
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows:\n%q\nwant:\n%q", r.rows, exp)
	}
	if s.Emitted() != int64(len(exp)-2) {
		t.Fatalf("Emitted() = %d, want %d", s.Emitted(), len(exp)-2)
	}
}

// The remembered history is bounded.
func TestReprintHistoryBounded(t *testing.T) {
	r := newReprint()
	var out []string
	for i := range 3 * maxReprintWords {
		out = r.row(fmt.Sprint(i), out[:0])
	}
	if len(r.hist) > maxReprintWords+maxReprintWords/8 {
		t.Fatalf("%d hashes kept", len(r.hist))
	}
}

// Rows an inline TUI repaints at the top of the screen after a resize that
// are history already are reported by LiveRepeated until they scroll off
// (and are dropped then).
func TestLiveRepeated(t *testing.T) {
	var r recorder
	s := r.screen(6, 20)
	s.Write([]byte(lines("row", 1, 11))) // 1..6 in history, 7..11 visible
	if n := s.LiveRepeated(); n != 0 {
		t.Fatalf("LiveRepeated() = %d before any resize", n)
	}
	s.Resize(6, 16)
	s.Write([]byte("\x1b[H\x1b[2J" + lines("row", 5, 8)))
	if n := s.LiveRepeated(); n != 2 {
		t.Fatalf("LiveRepeated() = %d, want 2 (rows 5 and 6); live %q", n, s.Live())
	}
	s.Write([]byte(lines("row", 9, 12)))
	if n := s.LiveRepeated(); n != 0 {
		t.Fatalf("LiveRepeated() = %d once the repeated rows scrolled off", n)
	}
	exp := want(seq("row", 1, 6), []string{"<reset resize>"}, seq("row", 7, 7))
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows %q, want %q", r.rows, exp)
	}
}

// split finds the same words as a byte-by-byte scan, and a word hashes the
// same wherever it stands (within 8 bytes of the end or not, after any
// run of separators).
func TestReprintSplitWords(t *testing.T) {
	r := newReprint()
	hash := func(w string) uint32 {
		r.split(w)
		if len(r.words) != 1 {
			t.Fatalf("split(%q) = %d words", w, len(r.words))
		}
		return r.words[0]
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := "ab \t\x00\xff\u00e9"
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		text := string(b)
		var want []uint32
		for _, w := range strings.FieldsFunc(text, func(c rune) bool { return c == ' ' || c == '\t' }) {
			want = append(want, hash(w))
		}
		r.split(text)
		if !slices.Equal(r.words, want) {
			t.Fatalf("split(%q) = %x, want %x", text, r.words, want)
		}
	}
	// 100,000 distinct words in 32 bits: about one collision expected.
	seen, collisions := map[uint32]bool{}, 0
	for i := range 25000 {
		w := fmt.Sprint(i)
		for _, v := range []string{w, w + "x", "longer-word-" + w, strings.Repeat(w, 5)} {
			h := hash(v)
			if seen[h] {
				collisions++
			}
			seen[h] = true
		}
	}
	if collisions > 10 {
		t.Fatalf("%d collisions among 100,000 words", collisions)
	}
}

// Gemini CLI inline: rows of its input area that a redraw left behind
// scroll into history between reply lines, and it erases the last reply
// lines above its input area before they scroll off. It then clears the
// scrollback and prints its whole transcript again, without the leftovers
// and with the erased lines: the reprint still matches the history, with
// the leftovers skipped and the erased lines held as part of it.
func TestReprintResync(t *testing.T) {
	var r recorder
	s := r.screen(4, 40)
	reply := lines("a reply line with some words", 1, 30)
	leftover := "> input\r\nstatus line\r\n"
	s.Write([]byte(reply + leftover + lines("second turn", 1, 6) + "\r\n\r\n\r\n"))
	if n := len(r.rows); n != 30+2+6 {
		t.Fatalf("%d rows before the reprint: %q", n, r.rows)
	}
	r.rows = nil
	s.Write([]byte("\x1b[2J\x1b[3J\x1b[H" + reply + lines("erased", 1, 2) + lines("second turn", 1, 6) + lines("third turn", 1, 8)))
	// The reprint ends with "second turn 6", the history's end; then new rows.
	exp := want([]string{"<reset erase_scrollback>"}, seq("third turn", 1, 5))
	if !slices.Equal(r.rows, exp) {
		t.Fatalf("rows:\n%q\nwant:\n%q", r.rows, exp)
	}
}

// A run that broke off into rows found nowhere ahead in history is not
// resynchronised for ever: past resyncExtra such rows, everything held is
// delivered, in order.
func TestReprintResyncBounded(t *testing.T) {
	var r recorder
	s := r.screen(4, 40)
	s.Write([]byte(lines("a reply line with some words", 1, 30) + "\r\n\r\n\r\n"))
	r.rows = nil
	fresh := lines("new", 1, resyncExtra+5)
	s.Write([]byte("\x1b[2J\x1b[3J\x1b[H" + lines("a reply line with some words", 1, 20) + fresh + "\r\n\r\n\r\n\r\n"))
	exp := want([]string{"<reset erase_scrollback>"}, seq("a reply line with some words", 1, 20), seq("new", 1, resyncExtra+5))
	if !slices.Equal(r.rows[:len(exp)], exp) {
		t.Fatalf("rows:\n%q\nwant:\n%q", r.rows, exp)
	}
}
