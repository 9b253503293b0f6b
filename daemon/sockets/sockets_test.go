package sockets

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// guard bounds each wait for something that happens at once: generous.
const guard = 30 * time.Second

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
	o, err := ListenOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Watch(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), o)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
		o.Cleanup()
	}()
	bound := func(what string) {
		t.Helper()
		deadline := time.Now().Add(guard)
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
	case <-time.After(guard):
		t.Fatal("no event for the watched name")
	}
	os.RemoveAll(dir)
	deadline := time.Now().Add(guard)
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
	o, err := ListenOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Cleanup()
	early, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	o.Rebind(slog.New(slog.NewTextHandler(io.Discard, nil)))
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
		c.SetReadDeadline(time.Now().Add(guard))
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte('a'+i) {
			t.Fatalf("accepted %d read %q %v: not the connection in order", i, b, err)
		}
		c.Close()
	}
}

func TestListenUmaskRestored(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "u.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi, err)
	}
	if got := syscall.Umask(0o022); got != 0o022 {
		t.Fatalf("umask left at %#o", got)
	}
}
