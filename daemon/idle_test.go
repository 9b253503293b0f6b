package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// An idle Session's transcript is not polled; a line the harness wrote
// between turns (here an interrupt marker naming no turn, which would end
// any turn it is taken for) is not taken for evidence of the next turn,
// which completes.
func TestIdleTranscriptLineNotTakenForNextTurn(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "idle-tr-1", "first")
	if _, res := td.waitResult(t, r.Session.ID, r.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("first result = %+v", res)
	}
	uuid := strings.TrimPrefix(r.Session.ID, "claude:")
	paths, _ := filepath.Glob(filepath.Join(td.env["HOME"], ".claude", "projects", "*", uuid+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcript of %s: %v", uuid, paths)
	}
	// Past the polls that follow a turn, so the tail sleeps (the outcome
	// must be the same either way).
	time.Sleep(2 * transcriptIdlePoll)
	f, err := os.OpenFile(paths[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}` + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "second", RequestID: "idle-tr-2"}, &r2)
	_, res := td.waitResult(t, r.Session.ID, r2.Cursor)
	if res.Status != rpc.StatusCompleted || res.ExecutionSeq != 2 || res.FinalText == nil || *res.FinalText != "MOCK-REPLY: second" {
		t.Fatalf("second result = %+v", res)
	}
}

func TestTranscriptTailSkipBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte("old-1\nold-2\npart"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := &transcriptTail{path: path}
	tail.skipBefore(path+".other", 12) // another transcript: nothing skipped
	if tail.offset != 0 {
		t.Fatalf("offset %d after another path's start", tail.offset)
	}
	tail.skipBefore(path, 12) // the execution started with 12 bytes there
	tail.skipBefore(path, 6)  // behind the offset: no effect
	if tail.offset != 12 {
		t.Fatalf("offset %d, want 12", tail.offset)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("ial\nnew\n")
	f.Close()
	got := tail.read()
	if len(got) != 2 || string(got[0]) != "partial" || string(got[1]) != "new" {
		t.Fatalf("lines %q", got)
	}
}

// The socket directory watch: a deleted socket is bound again on the
// directory's event; with the directory itself moved and made again,
// the fallback check binds it and watches the directory again, so the
// next deletion is noticed the same way.
func TestWatchSocketsDirectoryGoneAndBack(t *testing.T) {
	base, err := os.MkdirTemp("", "dlgt-w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "d.sock")
	o, err := listenOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		watchSockets(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), o)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
		o.cleanup()
	}()
	bound := func(what string) {
		t.Helper()
		deadline := time.Now().Add(lifecycleGuard)
		for {
			if c, err := net.Dial("unix", path); err == nil {
				c.Close()
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: socket not bound again: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	go func() { // the listener must accept for Dial to succeed
		for {
			c, err := o.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	bound("at start")
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"socket deleted", func() error { return os.Remove(path) }},
		{"directory moved away and made again", func() error {
			// (Removed in place, the socket could be bound again
			// between its deletion and the directory's.)
			gone := filepath.Join(base, "gone")
			if err := os.Rename(dir, gone); err != nil {
				return err
			}
			if err := os.RemoveAll(gone); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o700)
		}},
		{"socket deleted after the directory came back", func() error { return os.Remove(path) }},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		bound(step.what)
	}
}

func TestDirWatchLosesAndRegainsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w := newDirWatch([]string{dir}, []string{"d.sock"})
	defer w.close()
	if !w.watching() {
		t.Fatal("inotify watch not set on an existing directory")
	}
	// The watched name appearing wakes the watcher.
	os.WriteFile(filepath.Join(dir, "d.sock"), nil, 0o600)
	select {
	case <-w.events:
	case <-time.After(lifecycleGuard):
		t.Fatal("no event for the watched name")
	}
	os.RemoveAll(dir)
	deadline := time.Now().Add(lifecycleGuard)
	for w.watching() {
		if time.Now().After(deadline) {
			t.Fatal("watch of a deleted directory still reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.rewatch()
	if w.watching() {
		t.Fatal("watching a directory that does not exist")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w.rewatch()
	if !w.watching() {
		t.Fatal("directory made again not watched again")
	}
}

// A client that connected just before the socket path was deleted, not
// yet accepted, is accepted after the rebind rather than dropped with the
// old socket.
func TestRebindKeepsQueuedConnection(t *testing.T) {
	base, err := os.MkdirTemp("", "dlgt-q")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	path := filepath.Join(base, "d.sock")
	o, err := listenOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	defer o.cleanup()
	early, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	o.rebind(slog.New(slog.NewTextHandler(io.Discard, nil)))
	late, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("new socket: %v", err)
	}
	defer late.Close()
	for i, client := range []net.Conn{early, late} {
		c, err := o.Accept()
		if err != nil {
			t.Fatalf("accept %d: %v", i, err)
		}
		if _, err := client.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatalf("client %d write: %v", i, err)
		}
		b := make([]byte, 1)
		c.SetReadDeadline(time.Now().Add(lifecycleGuard))
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte('a'+i) {
			t.Fatalf("accepted %d read %q %v: not the connection in order", i, b, err)
		}
		c.Close()
	}
}
