package vt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
