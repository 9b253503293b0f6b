package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// The tail reads only complete lines appended after it started.
func TestTranscriptTailLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(path, []byte("old line\n"), 0o600)
	tl := &transcriptTail{path: path, offset: 9}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	f.WriteString("a\nb")
	if got := tl.read(); len(got) != 1 || string(got[0]) != "a" {
		t.Fatalf("got %q", got)
	}
	f.WriteString("c\n\nd\n")
	if got := tl.read(); len(got) != 2 || string(got[0]) != "bc" || string(got[1]) != "d" {
		t.Fatalf("got %q", got)
	}
}
