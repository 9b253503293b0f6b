package transcript

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// fakeClock's time moves only when the wait sleeps; onSleep runs at each.
type fakeClock struct {
	t       time.Time
	sleeps  int
	onSleep func(n int)
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	c.t = c.t.Add(d)
	c.sleeps++
	if c.onSleep != nil {
		c.onSleep(c.sleeps)
	}
	return true
}

func jsonl(t *testing.T, ms ...map[string]any) string {
	t.Helper()
	var s string
	for _, m := range ms {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		s += string(b) + "\n"
	}
	return s
}

const turnID = "6c6e35e5-eaed-4c79-b0d5-ef1f322f7bc5"

func promptLine(t *testing.T) string {
	return jsonl(t, map[string]any{"type": "user", "promptId": turnID, "uuid": "u1", "message": map[string]any{"role": "user", "content": "hi"}})
}

func endLine(t *testing.T) string {
	return jsonl(t, map[string]any{"type": "assistant", "uuid": "a1", "message": map[string]any{
		"id": "msg_1", "model": "claude-opus-5-5", "stop_reason": "end_turn", "role": "assistant",
		"content": []map[string]any{{"type": "text", "text": "DONE"}},
		"usage":   map[string]any{"input_tokens": 10, "output_tokens": 2},
	}})
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func bothTurn(path string) Turn {
	return Turn{
		Usage: harness.Claude{}, UsagePath: path, TurnID: turnID, Own: true,
		Reply: harness.Claude{}, ReplyPath: path, Prompt: "hi",
	}
}

// A turn whose end and reply never come costs its result one deadline,
// not the usage wait's and then the reply wait's (3 s + 5 s).
func TestAwaitHasOneDeadline(t *testing.T) {
	path := writeFile(t, promptLine(t)) // written, never ended, no reply
	c := &fakeClock{t: time.Unix(0, 0)}
	o := await(context.Background(), bothTurn(path), c)
	if o.Done || o.ReplyFound {
		t.Fatalf("done %v, reply %v: nothing was there", o.Done, o.ReplyFound)
	}
	if o.Waited > ReplyMax || o.Waited < ReplyMax-Poll {
		t.Fatalf("waited %v, want the one deadline %v", o.Waited, ReplyMax)
	}
	if max := int(ReplyMax / Poll); c.sleeps > max {
		t.Fatalf("%d polls, want at most %d (one loop)", c.sleeps, max)
	}
}

// The wait ends at the poll where both the reply and the turn's end are
// there, however late each lands.
func TestAwaitEndsWhenBothAreThere(t *testing.T) {
	path := writeFile(t, promptLine(t))
	c := &fakeClock{t: time.Unix(0, 0)}
	c.onSleep = func(n int) {
		if n == 30 {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(endLine(t))
			f.Close()
		}
	}
	o := await(context.Background(), bothTurn(path), c)
	if !o.Done || !o.ReplyFound || o.Reply != "DONE" || o.State != harness.TurnEnded {
		t.Fatalf("got %+v, want done with the reply DONE and the turn ended", o)
	}
	if o.FirstState != harness.TurnOpen {
		t.Fatalf("first state %v, want open", o.FirstState)
	}
	if c.sleeps != 30 {
		t.Fatalf("%d polls, want 30 (the poll after the write)", c.sleeps)
	}
}

// Without a reply wanted, a transcript holding nothing of the turn does
// not hold the result, and a turn shown open is waited for up to
// UsageMax only.
func TestAwaitUsageOnly(t *testing.T) {
	usage := func(path string) Turn {
		return Turn{Usage: harness.Claude{}, UsagePath: path, TurnID: turnID, Own: true}
	}
	c := &fakeClock{t: time.Unix(0, 0)}
	if o := await(context.Background(), usage(writeFile(t, "")), c); !o.Done || c.sleeps != 0 || o.FirstState != harness.TurnUnseen {
		t.Fatalf("nothing of the turn: %+v after %d polls, want done at once", o, c.sleeps)
	}
	o := await(context.Background(), usage(writeFile(t, promptLine(t))), c)
	if o.Done || o.Waited > UsageMax || o.Waited < UsageMax-Poll {
		t.Fatalf("an open turn: %+v, want not done after %v", o, UsageMax)
	}
	if o := await(context.Background(), Turn{}, c); !o.Done {
		t.Fatal("nothing asked for: not done")
	}
}

// A canceled wait returns at its next poll.
func TestAwaitCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &fakeClock{t: time.Unix(0, 0)}
	if o := await(ctx, bothTurn(writeFile(t, promptLine(t))), c); o.Done || c.sleeps != 0 {
		t.Fatalf("canceled: %+v after %d polls", o, c.sleeps)
	}
}

// The opener: a range past the end of a replaced file is gone for a
// turn's usage and read from the start for a reply; a missing file gives
// nothing; what it returns is bounded by MaxScan.
func TestOpen(t *testing.T) {
	path := writeFile(t, "0123456789")
	if _, ok := Open(path, 20, false); ok {
		t.Fatal("a range past a replaced file's end opened")
	}
	f, ok := Open(path, 20, true)
	if !ok {
		t.Fatal("restart: not opened")
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "0123456789" {
		t.Fatalf("restart read %q", b)
	}
	f, ok = Open(path, 4, false)
	if !ok {
		t.Fatal("a range inside the file: not opened")
	}
	b, _ = io.ReadAll(f)
	if string(b) != "456789" {
		t.Fatalf("read %q from 4", b)
	}
	if l, ok := f.(limited); !ok || l.Reader.(*io.LimitedReader).N != MaxScan-6 {
		t.Fatalf("the read is not bounded by MaxScan: %T", f)
	}
	f.Close()
	if _, ok := Open(filepath.Join(t.TempDir(), "none"), 0, true); ok {
		t.Fatal("a missing file opened")
	}
}
