package vt

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/fixtures/*.bin and *.golden")

// fixture is a synthetic PTY stream shaped like a real TUI's output.
type fixture struct {
	name       string
	rows, cols int
	gen        func() []byte
}

var fixtures = []fixture{
	{"ink", 12, 60, genInk},
	{"spinner", 6, 40, genSpinner},
	{"ratatui", 10, 40, genRatatui},
	{"codex", 10, 50, genCodex},
	{"wide", 6, 20, genWide},
	{"mixed", 8, 120, func() []byte { return ingestStream(16 << 10) }},
}

// genInk imitates Claude Code (Ink): a welcome box, a prompt, a spinner that
// Ink redraws by erasing its previous frame (ESC[2K ESC[1A … ESC[G), message
// bullets, then enough output that earlier content scrolls into history.
func genInk() []byte {
	var b bytes.Buffer
	b.WriteString("\x1b[?25l\x1b[?2004h\x1b[c") // hide cursor, bracketed paste, DA1 probe
	b.WriteString("\x1b[38;5;174m╭──────────────────────────╮\x1b[39m\r\n")
	b.WriteString("\x1b[38;5;174m│\x1b[39m \x1b[38;5;174m✻\x1b[39m Welcome to \x1b[1mClaude Code\x1b[22m! \x1b[38;5;174m│\x1b[39m\r\n")
	b.WriteString("\x1b[38;5;174m╰──────────────────────────╯\x1b[39m\r\n")
	frame := func(spin string, secs int) string {
		return fmt.Sprintf("\x1b[38;5;174m%s\x1b[39m Thinking… (%ds · esc to interrupt)\r\n\x1b[2m❯\x1b[22m \r\n", spin, secs)
	}
	erase := func(lines int) {
		// ansi-escapes eraseLines(n): erase line, up, …, erase line, col 1.
		for i := 0; i < lines; i++ {
			b.WriteString("\x1b[2K")
			if i < lines-1 {
				b.WriteString("\x1b[1A")
			}
		}
		b.WriteString("\x1b[G")
	}
	spins := []string{"·", "✢", "✳", "✶", "✻", "✽"}
	b.WriteString("\x1b[?2026h" + frame(spins[0], 0) + "\x1b[?2026l")
	for i := 1; i < 8; i++ {
		b.WriteString("\x1b[?2026h")
		erase(3)
		b.WriteString(frame(spins[i%len(spins)], i))
		b.WriteString("\x1b[?2026l")
	}
	erase(3)
	b.WriteString("\x1b[37m●\x1b[39m Here is the plan 🙂 for the change:\r\n")
	for i := 1; i <= 14; i++ {
		fmt.Fprintf(&b, "  ⎿  step %d: edit \x1b[1mvt/term.go\x1b[22m ✅ done\r\n", i)
	}
	b.WriteString("\x1b[6n")           // cursor position probe
	b.WriteString("\x1b[2m❯\x1b[22m ") // prompt, cursor after it
	b.WriteString("\x1b[?25h")
	return b.Bytes()
}

// genSpinner is a plain CLI progress line redrawn with CR, then committed.
func genSpinner() []byte {
	var b bytes.Buffer
	spin := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴"}
	for task := 0; task < 8; task++ {
		for i := 0; i < 12; i++ {
			fmt.Fprintf(&b, "\r%s \x1b[36mbuilding\x1b[0m package %d (%d%%)", spin[i%len(spin)], task, i*9)
		}
		fmt.Fprintf(&b, "\r\x1b[K✔ package %d built\r\n", task)
	}
	b.WriteString("done: 8 packages\r\n")
	return b.Bytes()
}

// genRatatui is a full-screen alt-screen app (ratatui/crossterm style):
// enter ?1049h, draw borders and a list with absolute cursor moves, update a
// few cells, leave, and print a summary line on the main screen.
func genRatatui() []byte {
	var b bytes.Buffer
	b.WriteString("shell prompt $ app\r\n")
	b.WriteString("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J")
	for frame := 0; frame < 3; frame++ {
		b.WriteString("\x1b[1;1H┌ Tasks ─────────────────────────────┐")
		for r := 2; r <= 9; r++ {
			fmt.Fprintf(&b, "\x1b[%d;1H│\x1b[%d;38H│", r, r)
		}
		b.WriteString("\x1b[10;1H└────────────────────────────────────┘")
		for i := 0; i < 6; i++ {
			mark := "  "
			if i == frame {
				mark = "\x1b[7m>>"
			}
			fmt.Fprintf(&b, "\x1b[%d;3H%s item %d 😀 ready\x1b[0m", i+3, mark, i)
		}
		// Scroll inside the list with a region: content in a region is not history.
		b.WriteString("\x1b[3;9r\x1b[9;3H\n\x1b[r")
	}
	b.WriteString("\x1b[?25h\x1b[?1049l")
	b.WriteString("app exited: 6 items\r\n")
	return b.Bytes()
}

// genCodex imitates Codex's inline viewport: a composer fixed at the bottom,
// history inserted above it by scrolling a region that starts at the top row
// (DECSTBM 1;k, then CRLF at its bottom), which is how it reaches scrollback.
func genCodex() []byte {
	var b bytes.Buffer
	const rows, vp = 10, 3 // viewport rows at the bottom
	drawViewport := func(status string) {
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[J", rows-vp+1)
		b.WriteString("› Ask Codex to do anything\r\n\r\n")
		fmt.Fprintf(&b, "  %s", status)
	}
	drawViewport("⏎ send   ⌃J newline")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "\x1b[1;%dr\x1b[%d;1H", rows-vp, rows-vp)
		fmt.Fprintf(&b, "\r\n\x1b[1m•\x1b[0m history line %d: ran `go test ./...` ✓", i)
		b.WriteString("\x1b[r")
		drawViewport(fmt.Sprintf("◦ Working (%ds • Esc to interrupt)", i))
	}
	b.WriteString("\x1b]11;?\x1b\\") // background colour probe
	return b.Bytes()
}

// genWide exercises width handling: CJK and emoji in narrow and wide cells,
// a wide character at the right margin (wraps early), combining marks,
// overwriting half of a wide character, and absolute moves after wide text.
func genWide() []byte {
	var b bytes.Buffer
	b.WriteString("●❯✻ ok\r\n")
	b.WriteString("🙂x中文y\r\n")
	b.WriteString("e\u0301te\u0301 cafe\u0301\r\n")
	b.WriteString("abcdefghijklmnopqrs中\r\n") // 19 narrow + wide at col 19: wraps
	b.WriteString("中文字\x1b[1;2H\x1b[3;1Hxx\r\n")
	b.WriteString("\x1b[6;1H🙂🙂🙂\x1b[6;3HZ\x1b[6;9H|")
	b.WriteString("\x1b[1;8H<-\x1b[2;12H<")
	b.WriteString("\U0001F468\u200D\U0001F469\u200D\U0001F467 fam")
	return b.Bytes()
}

// transcript records everything a Screen produced, in order, as text, so
// runs can be compared (split-anywhere, fast vs slow) and reviewed (golden).
type transcript struct {
	b strings.Builder
}

func (tr *transcript) callbacks() Callbacks {
	return Callbacks{
		Stable: func(rows []string) {
			for _, r := range rows {
				fmt.Fprintf(&tr.b, "stable %q\n", r)
			}
		},
		Reply: func(p []byte) { fmt.Fprintf(&tr.b, "reply %q\n", p) },
		Reset: func(r ResetReason) { fmt.Fprintf(&tr.b, "reset %s\n", r) },
	}
}

// final appends the live grid and cursor state.
func (tr *transcript) final(s *Screen) string {
	rows, cols := s.Size()
	cy, cx := s.Cursor()
	fmt.Fprintf(&tr.b, "live %dx%d cursor %d,%d alt=%v epoch=%d\n", rows, cols, cy, cx, s.AltScreen(), s.Epoch())
	for _, l := range s.Live() {
		fmt.Fprintf(&tr.b, "|%s\n", l)
	}
	return tr.b.String()
}

// run feeds data to a new Screen in the given pieces and returns the transcript.
func run(rows, cols int, noFast bool, pieces ...[]byte) string {
	var tr transcript
	s := New(rows, cols, tr.callbacks())
	s.emu.(*term).noFast = noFast
	for _, p := range pieces {
		s.Write(p)
	}
	return tr.final(s)
}

func fixturePath(name, ext string) string {
	return filepath.Join("testdata", "fixtures", name+ext)
}

func loadFixture(t testing.TB, f fixture) []byte {
	t.Helper()
	if *update {
		data := f.gen()
		if err := os.MkdirAll(filepath.Dir(fixturePath(f.name, "")), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixturePath(f.name, ".bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return data
	}
	data, err := os.ReadFile(fixturePath(f.name, ".bin"))
	if err != nil {
		t.Fatalf("%v (run go test ./vt -run Golden -update)", err)
	}
	return data
}

// TestGolden checks each fixture's transcript against a reviewed golden file:
// the golden rows were read by a person against what the screen shows.
func TestGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			data := loadFixture(t, f)
			got := run(f.rows, f.cols, false, data)
			if *update {
				if err := os.WriteFile(fixturePath(f.name, ".golden"), []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(fixturePath(f.name, ".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("transcript differs from golden\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// TestSplitAnywhere feeds every fixture in two halves at every split point
// and requires the same transcript as feeding it whole, on both the fast and
// the per-rune path; it also diffs the two paths against each other.
func TestSplitAnywhere(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			data := loadFixture(t, f)
			whole := run(f.rows, f.cols, false, data)
			if slow := run(f.rows, f.cols, true, data); slow != whole {
				t.Fatalf("fast and per-rune paths differ\n--- fast\n%s--- slow\n%s", whole, slow)
			}
			step := 1
			if testing.Short() || len(data) > 8<<10 {
				step = max(1, len(data)/2000) // keep the quadratic cost bounded
			}
			for i := 0; i <= len(data); i += step {
				for _, noFast := range []bool{false, true} {
					if got := run(f.rows, f.cols, noFast, data[:i], data[i:]); got != whole {
						t.Fatalf("split at %d (noFast=%v) differs\n--- got\n%s--- whole\n%s", i, noFast, got, whole)
					}
				}
			}
			// Byte-at-a-time is the extreme split.
			pieces := make([][]byte, len(data))
			for i := range data {
				pieces[i] = data[i : i+1]
			}
			if got := run(f.rows, f.cols, false, pieces...); got != whole {
				t.Fatalf("byte-at-a-time differs\n--- got\n%s--- whole\n%s", got, whole)
			}
		})
	}
}
