package transcript

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The text is looked for as a JSON string holds it, after the offset.
func TestHolds(t *testing.T) {
	const before = `{"text":"say \"hi\"\n"}` + "\n"
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	if !Holds(path, 0, "say \"hi\"\n") {
		t.Fatal("the JSON-quoted text is not found")
	}
	if Holds(path, int64(len(before)), "say \"hi\"\n") {
		t.Fatal("text before the offset was taken")
	}
	if Holds(filepath.Join(t.TempDir(), "none"), 0, "x") {
		t.Fatal("a missing file holds the text")
	}
}

// WatchFor calls seen once the text lands; it gives up, without calling
// it, when the harness exits or after the last look past the turn's end.
func TestWatchFor(t *testing.T) {
	defer func(p, l time.Duration) { WatchPoll, WatchLastLook = p, l }(WatchPoll, WatchLastLook)
	WatchPoll, WatchLastLook = time.Millisecond, time.Millisecond
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	never := make(chan struct{})
	seen := make(chan struct{})
	go WatchFor(path, 3, "steer me", never, never, func() { close(seen) })
	time.Sleep(20 * time.Millisecond)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"text":"steer me"}` + "\n")
	f.Close()
	select {
	case <-seen:
	case <-time.After(time.Minute):
		t.Fatal("the text landed and was not seen")
	}
	closed := make(chan struct{})
	close(closed)
	for _, c := range []struct {
		name          string
		ended, exited <-chan struct{}
	}{{"ended", closed, never}, {"exited", never, closed}} {
		calls := 0
		WatchFor(path, 0, "never written", c.ended, c.exited, func() { calls++ })
		if calls != 0 {
			t.Fatalf("%s: seen called %d times for text never written", c.name, calls)
		}
	}
}
