package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Bytes held in memory are never missing to a reader, and Close writes
// them out.
func TestRawLogPendingVisibleAndFlushed(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenRawLog(dir, "p", 0)
	must(t, err)
	if _, err := l.Write([]byte("hello ")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if s, e := l.Bounds(); s != 0 || e != 11 {
		t.Fatalf("Bounds = %d %d", s, e)
	}
	data, _, next, more, err := l.ReadAt(0, 100)
	must(t, err)
	if string(data) != "hello world" || next != 11 || more {
		t.Fatalf("ReadAt = %q next %d more %v", data, next, more)
	}
	big := bytes.Repeat([]byte("x"), rawPendMax+10) // larger than the buffer
	if _, err := l.Write(big); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
	files, _ := filepath.Glob(filepath.Join(dir, "p.*.raw"))
	var all []byte
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all = append(all, b...)
	}
	want := append(append([]byte("hello world"), big...), "tail"...)
	if !bytes.Equal(all, want) {
		t.Fatalf("files hold %d bytes, want %d", len(all), len(want))
	}
}
