package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// pattern returns n bytes whose value at absolute offset o is byte(o % 251),
// so any slice can be checked against its claimed offset.
func pattern(from int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((from + int64(i)) % 251)
	}
	return b
}

func checkRaw(t *testing.T, data []byte, start int64) {
	t.Helper()
	if !bytes.Equal(data, pattern(start, len(data))) {
		t.Fatalf("data at %d (len %d) does not match its offset", start, len(data))
	}
}

func TestRawLogBasic(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenRawLog(dir, "s1", 0)
	must(t, err)
	if _, err := l.Write(pattern(0, 1000)); err != nil {
		t.Fatal(err)
	}
	data, start, next, more, err := l.ReadAt(0, 300)
	must(t, err)
	if start != 0 || next != 300 || !more || len(data) != 300 {
		t.Fatalf("ReadAt(0,300) = len %d start %d next %d more %v", len(data), start, next, more)
	}
	checkRaw(t, data, 0)
	data, start, next, more, err = l.ReadAt(next, 0)
	must(t, err)
	if start != 300 || next != 1000 || more || len(data) != 700 {
		t.Fatalf("ReadAt(300) = len %d start %d next %d more %v", len(data), start, next, more)
	}
	checkRaw(t, data, 300)
	data, start, next, more, err = l.ReadAt(5000, 10)
	must(t, err)
	if len(data) != 0 || start != 1000 || next != 1000 || more {
		t.Fatalf("ReadAt past end = len %d start %d next %d", len(data), start, next)
	}
	must(t, l.Close())
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
	if _, err := l.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "s1.*.raw"))
	for _, m := range matches {
		fi, err := os.Stat(m)
		must(t, err)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", m, fi.Mode().Perm())
		}
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		if _, err := OpenRawLog(dir, bad, 0); !errors.Is(err, ErrInvalidName) {
			t.Errorf("OpenRawLog(%q) = %v", bad, err)
		}
	}
}

func TestRawLogRotation(t *testing.T) {
	dir := t.TempDir()
	const capBytes = 1000 // segments of 500 bytes
	l, err := OpenRawLog(dir, "s", capBytes)
	must(t, err)
	var off int64
	write := func(n int) {
		t.Helper()
		w, err := l.Write(pattern(off, n))
		if err != nil || w != n {
			t.Fatalf("Write(%d) = %d, %v", n, w, err)
		}
		off += int64(n)
	}
	write(400)
	write(400) // crosses into segment 2 at 500
	if s, e := l.Bounds(); s != 0 || e != 800 {
		t.Fatalf("Bounds = %d %d", s, e)
	}
	// Read across the segment boundary.
	data, start, next, _, err := l.ReadAt(450, 100)
	must(t, err)
	if start != 450 || next != 550 {
		t.Fatalf("cross-segment read start %d next %d", start, next)
	}
	checkRaw(t, data, 450)

	write(1234) // several rotations within one Write
	s, e := l.Bounds()
	if e != off || e-s > capBytes || s%500 != 0 || s == 0 {
		t.Fatalf("after rotation Bounds = %d %d (written %d)", s, e, off)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "s.*.raw")); len(files) > 2 {
		t.Errorf("%d segment files: %v", len(files), files)
	}
	// A reader positioned before the retained start is told where data resumes.
	data, start, next, more, err := l.ReadAt(100, 10_000)
	must(t, err)
	if start != s || next != e || more || int64(len(data)) != e-s {
		t.Fatalf("ReadAt(100) = len %d start %d next %d more %v; bounds %d %d", len(data), start, next, more, s, e)
	}
	checkRaw(t, data, start)
	must(t, l.Close())

	// Offsets survive a reopen and writing continues where it stopped.
	l, err = OpenRawLog(dir, "s", capBytes)
	must(t, err)
	if s2, e2 := l.Bounds(); s2 != s || e2 != e {
		t.Fatalf("reopened Bounds = %d %d, want %d %d", s2, e2, s, e)
	}
	write(300)
	data, start, _, _, err = l.ReadAt(0, 0)
	must(t, err)
	checkRaw(t, data, start)
	if start+int64(len(data)) != off {
		t.Fatalf("read through %d, written %d", start+int64(len(data)), off)
	}
	// Independent sessions in the same directory.
	other, err := OpenRawLog(dir, "s.x", capBytes)
	must(t, err)
	if _, e := other.Bounds(); e != 0 {
		t.Errorf("other session end = %d", e)
	}
	must(t, other.Close())
	must(t, l.Close())

	must(t, RemoveRawLog(dir, "s"))
	if files, _ := filepath.Glob(filepath.Join(dir, "s.0*.raw")); len(files) != 0 {
		t.Errorf("RemoveRawLog left %v", files)
	}
}

// A crash between creating a new segment and deleting the oldest leaves
// three files; OpenRawLog keeps the newest two.
func TestRawLogLeftoverSegment(t *testing.T) {
	dir := t.TempDir()
	for _, start := range []int64{0, 500, 1000} {
		must(t, os.WriteFile(filepath.Join(dir, rawSegName("s", start)), pattern(start, 500), 0o600))
	}
	l, err := OpenRawLog(dir, "s", 1000)
	must(t, err)
	defer l.Close()
	if s, e := l.Bounds(); s != 500 || e != 1500 {
		t.Fatalf("Bounds = %d %d", s, e)
	}
	data, start, _, _, err := l.ReadAt(0, 0)
	must(t, err)
	checkRaw(t, data, start)
}

func TestRawLogConcurrent(t *testing.T) {
	l, err := OpenRawLog(t.TempDir(), "s", 4096)
	must(t, err)
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var off int64
		for range 2000 {
			n, err := l.Write(pattern(off, 37))
			if err != nil {
				t.Error(err)
				return
			}
			off += int64(n)
		}
	}()
	var pos int64
	for {
		select {
		case <-done:
			return
		default:
		}
		data, start, next, _, err := l.ReadAt(pos, 1000)
		if err != nil {
			t.Fatal(err)
		}
		checkRaw(t, data, start)
		pos = next
	}
}
