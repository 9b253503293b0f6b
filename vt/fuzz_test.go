package vt

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkInvariants fails if the Screen is in a state no input may produce.
func checkInvariants(t *testing.T, s *Screen, tr *transcript) {
	t.Helper()
	rows, cols := s.Size()
	y, x := s.Cursor()
	if y < 0 || y >= rows || x < 0 || x >= cols {
		t.Fatalf("cursor %d,%d outside %dx%d", y, x, rows, cols)
	}
	live := s.Live()
	if len(live) != rows {
		t.Fatalf("Live has %d rows, want %d", len(live), rows)
	}
	for _, l := range live {
		if w := textWidth(l); w > cols {
			t.Fatalf("row %q is %d cells wide on a %d-column screen", l, w, cols)
		}
		if !utf8.ValidString(l) {
			t.Fatalf("row %q is not valid UTF-8", l)
		}
	}
}

func textWidth(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

// FuzzWrite feeds arbitrary bytes with a resize somewhere in the stream. It
// checks that nothing panics, the cursor stays inside the grid, Live has
// exactly one entry per row, no row is wider than the screen, and — the
// differential part — that the fast path fed in three chunks produces the
// same transcript (stable rows, replies, resets, live grid) as the per-rune
// path fed one byte at a time.
func FuzzWrite(f *testing.F) {
	for _, fx := range fixtures {
		data := fx.gen()
		if len(data) > 4096 {
			data = data[:4096]
		}
		f.Add(data, uint8(fx.rows), uint8(fx.cols), uint16(len(data)/3), uint16(len(data)/2), uint8(fx.rows-1), uint8(fx.cols/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, rows, cols uint8, split, at uint16, rows2, cols2 uint8) {
		r, c := int(rows%60)+1, int(cols%160)+1
		r2, c2 := int(rows2%60)+1, int(cols2%160)+1
		k := int(at) % (len(data) + 1)
		j := int(split) % (k + 1)

		var fast transcript
		s := New(r, c, fast.callbacks())
		s.Write(data[:j])
		checkInvariants(t, s, &fast)
		s.Write(data[j:k])
		s.Resize(r2, c2)
		checkInvariants(t, s, &fast)
		s.Write(data[k:])
		checkInvariants(t, s, &fast)
		got := fast.final(s)

		var slow transcript
		s2 := New(r, c, slow.callbacks())
		s2.emu.(*term).noFast = true
		for i := range data {
			if i == k {
				s2.Resize(r2, c2)
			}
			s2.Write(data[i : i+1])
		}
		if k == len(data) {
			s2.Resize(r2, c2)
		}
		if want := slow.final(s2); got != want {
			t.Fatalf("fast/chunked and slow/bytewise differ\n--- fast\n%s--- slow\n%s", got, want)
		}
	})
}

// TestWriteFuzzSeeds regenerates the committed seed corpus with -update.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("only with -update")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzWrite")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seeds := map[string]string{
		"wide_resize":  "🙂x中文y\r\n\x1b[1;19H中\u0301e\u0301",
		"alt_region":   "\x1b[?1049h\x1b[2;3r\x1b[3;1H\n\n\x1b[r\x1b[?1049l",
		"split_csi":    "ab\x1b[38;2;1;2;3mcd\x1b[6n\x1b]11;?\x1b\\\x1b[3J\x1bc",
		"invalid_utf8": "\xe2\x97\xff\xc0\xaf\xf0\x9f\x99\x1b[K",
	}
	for _, fx := range fixtures {
		data := fx.gen()
		if len(data) > 2048 {
			data = data[:2048]
		}
		seeds["fixture_"+fx.name] = string(data)
	}
	for name, data := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint8(%d)\nuint8(%d)\nuint16(%d)\nuint16(%d)\nuint8(%d)\nuint8(%d)\n",
			strconv.Quote(data), 10, 20, len(data)/3, len(data)/2, 5, 13)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCaptures runs real TUI captures, when a helper has dropped them in
// testdata/captures (raw PTY bytes; README names rows×cols), through the same
// checks as the fixtures: invariants, fast vs per-rune, split consistency.
func TestCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "captures", "*"))
	ran := 0
	for _, path := range files {
		base := filepath.Base(path)
		if filepath.Ext(base) == ".md" || base == "README" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil || len(data) == 0 {
			continue
		}
		ran++
		t.Run(base, func(t *testing.T) {
			rows, cols := 40, 120 // the size the README names for both captures
			var tr transcript
			s := New(rows, cols, tr.callbacks())
			// Read the screen as a person would, between small chunks: the
			// mock's CJK reply must appear as one unshifted row.
			const hello = "Hello! 你好，世界！こんにちは、世界。안녕하세요."
			sawHello, sawEnd := false, false
			feedChunks(func(p []byte) {
				s.Write(p)
				for _, l := range s.Live() {
					sawHello = sawHello || strings.HasSuffix(l, hello)
					sawEnd = sawEnd || strings.TrimSpace(l) == "END-OF-REPLY-2"
				}
			}, data, 256)
			if strings.Contains(string(data), "END-OF-REPLY-2") && !(sawHello && sawEnd) {
				t.Errorf("screen never showed the reply rows (hello=%v end=%v)", sawHello, sawEnd)
			}
			checkInvariants(t, s, &tr)
			whole := tr.final(s)
			if slow := run(rows, cols, true, data); slow != run(rows, cols, false, data) {
				t.Fatalf("fast and per-rune paths differ on %s", base)
			}
			for _, at := range []int{1, len(data) / 3, len(data) / 2, len(data) - 1} {
				if at <= 0 || at >= len(data) {
					continue
				}
				var tr2 transcript
				s2 := New(rows, cols, tr2.callbacks())
				feedChunks(func(p []byte) { s2.Write(p) }, data[:at], 4096)
				feedChunks(func(p []byte) { s2.Write(p) }, data[at:], 4096)
				if got := tr2.final(s2); got != whole {
					t.Fatalf("split at %d differs", at)
				}
			}
		})
	}
	if ran == 0 {
		t.Skip("no captures in testdata/captures")
	}
}
