package transcript

import (
	"os"
	"path/filepath"
	"testing"
)

// The tail reads only complete lines appended after it started.
func TestTranscriptTailLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(path, []byte("old line\n"), 0o600)
	tl := NewTail(path, 9)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	f.WriteString("a\nb")
	if got := tl.Read(); len(got) != 1 || string(got[0]) != "a" {
		t.Fatalf("got %q", got)
	}
	f.WriteString("c\n\nd\n")
	if got := tl.Read(); len(got) != 2 || string(got[0]) != "bc" || string(got[1]) != "d" {
		t.Fatalf("got %q", got)
	}
}

func TestTranscriptTailSkipBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte("old-1\nold-2\npart"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := NewTail(path, 0)
	tail.SkipBefore(path+".other", 12) // another transcript: nothing skipped
	if tail.offset != 0 {
		t.Fatalf("offset %d after another path's start", tail.offset)
	}
	tail.SkipBefore(path, 12) // the execution started with 12 bytes there
	tail.SkipBefore(path, 6)  // behind the offset: no effect
	if tail.offset != 12 {
		t.Fatalf("offset %d, want 12", tail.offset)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("ial\nnew\n")
	f.Close()
	got := tail.Read()
	if len(got) != 2 || string(got[0]) != "partial" || string(got[1]) != "new" {
		t.Fatalf("lines %q", got)
	}
}

// A line longer than MaxLine is dropped up to its newline, and a file
// replaced by a shorter one is followed again from its end.
func TestTailBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	long := make([]byte, MaxLine+10)
	for i := range long {
		long[i] = 'x'
	}
	if err := os.WriteFile(path, long, 0o600); err != nil {
		t.Fatal(err)
	}
	tail := NewTail(path, 0)
	if got := tail.Read(); len(got) != 0 || tail.partial != nil || !tail.skip {
		t.Fatalf("an overlong partial line: %d lines, %d bytes held, skip %v", len(got), len(tail.partial), tail.skip)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("xx\nok\n")
	f.Close()
	if got := tail.Read(); len(got) != 1 || string(got[0]) != "ok" {
		t.Fatalf("after the overlong line: %q", got)
	}
	if err := os.WriteFile(path, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := tail.Read(); len(got) != 0 || tail.offset != 4 {
		t.Fatalf("replaced: %q at offset %d, want nothing at its end", got, tail.offset)
	}
}
