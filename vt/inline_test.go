package vt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/vt/vttest"
)

// Inline (main-screen) captures of the real TUIs, replayed through a
// Screen and compared with what tmux made of the same bytes: the history
// (tmux's scrollback, our stable rows) and the grid. The goldens hold
// tmux's result; `go test ./vt/ -run InlineTmux -update` regenerates them
// with the tmux on PATH. The captures come from the daemon's real-CLI
// test (see testdata/captures/README.md).

// inlineCapture is one capture and its size.
type inlineCapture struct {
	name       string
	rows, cols int
}

var inlineCaptures = []inlineCapture{
	{"claude-inline-100x40", 40, 100},
	{"codex-inline-100x40", 40, 100},
	{"claude-inline-stream-100x40", 40, 100},
	{"codex-inline-stream-100x40", 40, 100},
}

// overflowCapture is Claude Code repainting a frame taller than the screen
// (TestInlineOverflowRepaint): its history is tmux's less the repeated
// rows.
var overflowCapture = inlineCapture{"claude-inline-overflow-100x40", 40, 100}

const gridMark = "==== grid ===="

// replayHistory is what a fresh Screen makes of data: its stable rows, with
// each reset as a "<reset REASON>" row, and its grid without trailing
// blank rows.
func replayHistory(data []byte, rows, cols int) (hist, grid []string) {
	s := New(rows, cols, Callbacks{
		Stable: func(r []string) { hist = append(hist, r...) },
		Reset:  func(reason ResetReason) { hist = append(hist, "<reset "+string(reason)+">") },
	})
	s.Write(data)
	return hist, trimBlankTail(s.Live())
}

func trimBlankTail(rows []string) []string {
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

func formatTmuxGolden(ts *vttest.TmuxScreen) string {
	return strings.Join(ts.History, "\n") + "\n" + gridMark + "\n" + strings.Join(trimBlankTail(ts.Grid), "\n") + "\n"
}

func parseTmuxGolden(s string) (hist, grid []string, err error) {
	h, g, ok := strings.Cut(s, gridMark+"\n")
	if !ok {
		return nil, nil, errors.New("no grid mark")
	}
	split := func(s string) []string {
		s = strings.TrimSuffix(s, "\n")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	return split(h), split(g), nil
}

func TestInlineTmuxGolden(t *testing.T) {
	for _, c := range inlineCaptures {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "captures", c.name+".bin"))
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("capture missing: regenerate it (testdata/captures/README.md)")
			}
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "captures", c.name+".tmux")
			if *update {
				ts, err := vttest.TmuxReplay(data, c.rows, c.cols)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(formatTmuxGolden(ts)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update and tmux on PATH)", err)
			}
			wantHist, wantGrid, err := parseTmuxGolden(string(want))
			if err != nil {
				t.Fatalf("%s: %v", golden, err)
			}
			hist, grid := replayHistory(data, c.rows, c.cols)
			if d := diffRows(hist, wantHist); d != "" {
				t.Errorf("history: vt %d rows, tmux %d:\n%s", len(hist), len(wantHist), d)
			}
			if d := diffRows(grid, wantGrid); d != "" {
				t.Errorf("grid differs from tmux's:\n%s", d)
			}
			// The capture split at every byte boundary in a few places
			// renders the same (pump reads split anywhere).
			for _, cut := range []int{1, len(data) / 3, len(data) / 2, len(data) - 1} {
				var h2 []string
				s := New(c.rows, c.cols, Callbacks{
					Stable: func(r []string) { h2 = append(h2, r...) },
					Reset:  func(reason ResetReason) { h2 = append(h2, "<reset "+string(reason)+">") },
				})
				s.Write(data[:cut])
				s.Write(data[cut:])
				if d := diffRows(h2, hist); d != "" {
					t.Errorf("split at %d: history differs:\n%s", cut, d)
				}
			}
		})
	}
}

// diffRows lists the first differing rows of got and want, or "".
func diffRows(got, want []string) string {
	var out []string
	for i := 0; i < max(len(got), len(want)) && len(out) < 12; i++ {
		g, w := "<none>", "<none>"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			out = append(out, fmt.Sprintf("  row %d: vt %q, tmux %q", i, g, w))
		}
	}
	return strings.Join(out, "\n")
}

// The inline captures fed in chunks cut at seeded random places (inside
// escape sequences and UTF-8 too) give the same history and grid as one
// Write: what the daemon stores from its PTY reads, whose boundaries
// depend on timing, is what a one-shot replay of the raw log gives.
func TestInlineSplitAnywhere(t *testing.T) {
	for _, c := range append(slices.Clone(inlineCaptures), overflowCapture) {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "captures", c.name+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			wantHist, wantGrid := replayHistory(data, c.rows, c.cols)
			r := rand.New(rand.NewPCG(uint64(len(data)), 7))
			for i := range 30 {
				var hist []string
				s := New(c.rows, c.cols, Callbacks{
					Stable: func(rows []string) { hist = append(hist, rows...) },
					Reset:  func(reason ResetReason) { hist = append(hist, "<reset "+string(reason)+">") },
				})
				maxChunk := 1 + r.IntN(4096)
				for off := 0; off < len(data); {
					n := 1 + r.IntN(maxChunk)
					s.Write(data[off:min(len(data), off+n)])
					off += n
				}
				if d := diffRows(hist, wantHist); d != "" {
					t.Fatalf("chunking %d (up to %d bytes): history differs from one Write:\n%s", i, maxChunk, d)
				}
				if d := diffRows(trimBlankTail(s.Live()), wantGrid); d != "" {
					t.Fatalf("chunking %d (up to %d bytes): grid differs from one Write:\n%s", i, maxChunk, d)
				}
			}
		})
	}
}

// claude-inline-overflow-100x40 is Claude Code streaming the long reply on
// a starved CPU: it drew a frame taller than the screen and repainted it
// from the top row (CSI 39 A), so 7 reply lines that had already scrolled
// off were on the screen again and scrolled off a second time. tmux keeps
// them twice (the golden); vt keeps each line once (the reprint filter,
// armed by the cursor's move to the top row, drops the repeat), whatever
// the PTY reads' boundaries, including every cut around that repaint.
func TestInlineOverflowRepaint(t *testing.T) {
	c := overflowCapture
	data, err := os.ReadFile(filepath.Join("testdata", "captures", c.name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "captures", c.name+".tmux")
	if *update {
		ts, err := vttest.TmuxReplay(data, c.rows, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(formatTmuxGolden(ts)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update and tmux on PATH)", err)
	}
	tmuxHist, tmuxGrid, err := parseTmuxGolden(string(want))
	if err != nil {
		t.Fatal(err)
	}
	// tmux's history: reply lines 39..45 at rows 45..51 and again at
	// 52..58. vt's is the same without the second copy.
	const first, again, n = 45, 52, 7
	if !slices.Equal(tmuxHist[first:first+n], tmuxHist[again:again+n]) || !strings.Contains(tmuxHist[again], "row 039 of") {
		t.Fatalf("tmux's history does not repeat rows %d..%d at %d: the capture changed", first, first+n-1, again)
	}
	wantHist := slices.Concat(tmuxHist[:again], tmuxHist[again+n:])
	hist, grid := replayHistory(data, c.rows, c.cols)
	if d := diffRows(hist, wantHist); d != "" {
		t.Errorf("history: vt %d rows, tmux less its repeat %d:\n%s", len(hist), len(wantHist), d)
	}
	if d := diffRows(grid, tmuxGrid); d != "" {
		t.Errorf("grid differs from tmux's:\n%s", d)
	}
	repaint := bytes.Index(data, []byte("\x1b[39A"))
	if repaint < 0 {
		t.Fatal("no CSI 39 A in the capture")
	}
	for cut := max(1, repaint-300); cut < min(len(data), repaint+1500); cut++ {
		var h []string
		s := New(c.rows, c.cols, Callbacks{Stable: func(rows []string) { h = append(h, rows...) }})
		s.Write(data[:cut])
		s.Write(data[cut:])
		if d := diffRows(h, hist); d != "" {
			t.Fatalf("cut at %d: history differs from one Write:\n%s", cut, d)
		}
	}
}

// gemini-inline-resize-100x40 is Gemini CLI 0.61.0 running the daemon
// test's two turns (TestInlineHistoryGeminiE2E): the 150-line reply at
// 100 columns; at byte geminiResizeAt the daemon's attach nudge (41 rows
// and back) and a change to 80 columns, after which Gemini redrew only its
// input area, leaving rows of it in history; then the second turn's 60
// "tail row" lines and, at its end, Gemini's clear of the scrollback and
// reprint of its whole transcript without those leftovers and with reply
// lines 147..150, which it had erased before they scrolled off. The
// reprint is not history again: every reply and tail line once, in order.
const geminiResizeAt = 64362

func TestInlineGeminiResize(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "captures", "gemini-inline-resize-100x40.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var hist []string
	s := New(40, 100, Callbacks{Stable: func(rows []string) { hist = append(hist, rows...) }})
	s.Write(data[:geminiResizeAt])
	s.Resize(41, 100)
	s.Resize(40, 100)
	s.Resize(40, 80)
	s.Write(data[geminiResizeAt:])
	live := trimBlankTail(s.Live())
	all := append(slices.Clone(hist), live[min(s.LiveRepeated(), len(live)):]...)
	reply, tail := 0, 0
	for i, row := range all {
		switch {
		case strings.Contains(row, " of the inline history"):
			reply++
			if want := fmt.Sprintf("row %03d of the inline history", reply); !strings.Contains(row, want) {
				t.Fatalf("row %d = %q, want %q", i, row, want)
			}
		case strings.Contains(row, "tail row "):
			tail++
			if want := fmt.Sprintf("tail row %d", tail); !strings.HasSuffix(row, want) {
				t.Fatalf("row %d = %q, want %q", i, row, want)
			}
		}
	}
	// Lines 147..150 never scrolled off (Gemini erased them) and come
	// back only in the reprint.
	if reply != 146 || tail != 60 {
		t.Fatalf("%d reply lines and %d tail rows in history and grid, want 146 and 60:\n%s", reply, tail, strings.Join(all, "\n"))
	}
}
