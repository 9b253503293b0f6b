package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
)

// The reply is read from where the transcript stood when the execution
// started: the same prompt answered earlier is not this turn's reply; a
// transcript shorter than that offset (replaced) is read whole; a missing
// one gives nothing.
func TestReadReplyFromTheExecutionsStart(t *testing.T) {
	const earlier = `{"type":"user","message":{"role":"user","content":"again"}}
{"type":"assistant","message":{"role":"assistant","content":"OLD"}}
`
	const turn = `{"type":"user","message":{"role":"user","content":"again"}}
`
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(earlier+turn), 0o600); err != nil {
		t.Fatal(err)
	}
	from := int64(len(earlier))
	if text, ok := readReply(harness.Claude{}, path, from, "again"); ok {
		t.Fatalf("the earlier turn's reply %q taken for this one", text)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"assistant","message":{"role":"assistant","content":"NEW"}}` + "\n")
	f.Close()
	if text, ok := readReply(harness.Claude{}, path, from, "again"); !ok || text != "NEW" {
		t.Fatalf("got %q %v, want NEW", text, ok)
	}
	if text, ok := readReply(harness.Claude{}, path, 1<<20, "again"); !ok || text != "NEW" {
		t.Fatalf("a replaced transcript: got %q %v, want NEW", text, ok)
	}
	if _, ok := readReply(harness.Claude{}, filepath.Join(t.TempDir(), "none.jsonl"), 0, "again"); ok {
		t.Fatal("a missing transcript gave a reply")
	}
}
