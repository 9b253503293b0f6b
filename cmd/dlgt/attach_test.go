package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/dlgt-dev/dlgt/internal/attach"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// serveAt runs an rpc.Server with handler on a Unix socket at path.
func serveAt(t *testing.T, path string, handler rpc.HandlerFunc) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &rpc.Server{Handler: handler, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		<-done
	})
}

// shortDir is a temporary directory with a short path (Unix socket paths
// are limited to about 100 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestAttachNeedsTerminal(t *testing.T) {
	e, out, _ := testEnv(t, map[string]string{"DLGT_SOCKET": "/nonexistent/s"}, "")
	code := run([]string{"session", "attach", "review"}, e)
	want := `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"attach needs a terminal"}}` + "\n"
	if code != cli.ExitError || out.String() != want {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

// fakeAttachDaemon serves the internal.terminal methods.
type fakeAttachDaemon struct {
	mu       sync.Mutex
	input    bytes.Buffer
	resizes  int
	detached chan struct{}
	once     sync.Once
	attached rpc.TerminalAttachParams
}

type fakeAttachStream struct{ d *fakeAttachDaemon }

func (s fakeAttachStream) Ack() any {
	return rpc.TerminalAttachAck{SessionID: "claude:x", Mode: "write", Token: "tok", State: "idle", Rows: 24, Cols: 80,
		RepaintBase64: base64.StdEncoding.EncodeToString([]byte("PAINTED"))}
}

func (s fakeAttachStream) Run(ctx context.Context, emit func([]byte) error) error {
	line, _ := json.Marshal(rpc.TerminalOutput{DataBase64: base64.StdEncoding.EncodeToString([]byte("HELLO-FROM-HARNESS"))})
	if err := emit(line); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-s.d.detached:
		line, _ := json.Marshal(rpc.TerminalOutput{End: "detached"})
		return emit(line)
	}
}

func (d *fakeAttachDaemon) serve(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch req.Method {
	case rpc.MethodTerminalAttach:
		json.Unmarshal(req.Params, &d.attached)
		return fakeAttachStream{d}, nil
	case rpc.MethodTerminalInput:
		var p rpc.TerminalInputParams
		json.Unmarshal(req.Params, &p)
		if p.Token != "tok" {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "bad token")
		}
		data, _ := base64.StdEncoding.DecodeString(p.DataBase64)
		d.input.Write(data)
		return map[string]int{"written": len(data)}, nil
	case rpc.MethodTerminalResize:
		d.resizes++
		return map[string]int{}, nil
	case rpc.MethodTerminalDetach:
		d.once.Do(func() { close(d.detached) })
		return map[string]bool{"detached": true}, nil
	}
	return nil, rpc.Errorf(rpc.CodeInvalidArgument, "no %s", req.Method)
}

// ptyReader accumulates what the command wrote to its terminal.
type ptyReader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func (r *ptyReader) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		ok := strings.Contains(r.buf.String(), want)
		r.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("terminal never showed %q; got %q", want, r.String())
}

// readPTY collects what is written to the terminal of master, until
// reading it fails (done is closed then).
func readPTY(master *os.File) *ptyReader {
	r := &ptyReader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			r.mu.Lock()
			r.buf.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

// waitExit waits for an attach run in the background to exit 0 after
// Ctrl-].
func (r *ptyReader) waitExit(t *testing.T, code <-chan int) {
	t.Helper()
	select {
	case c := <-code:
		if c != cli.ExitOK {
			t.Fatalf("exit %d; terminal %q", c, r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("attach did not exit after Ctrl-]")
	}
}

func (r *ptyReader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// attachOnPTY serves the fake attach daemon and opens a terminal.
func attachOnPTY(t *testing.T) (d *fakeAttachDaemon, sock string, master, slave *os.File) {
	t.Helper()
	sock = filepath.Join(shortDir(t), "s")
	d = &fakeAttachDaemon{detached: make(chan struct{})}
	serveAt(t, sock, d.serve)
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	return d, sock, master, slave
}

func TestAttachRawModeInputDetachRestore(t *testing.T) {
	d, sock, master, slave := attachOnPTY(t)
	if err := pty.Setsize(master, &pty.Winsize{Rows: 33, Cols: 101}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	term := readPTY(master)

	e, _, _ := testEnv(t, map[string]string{"DLGT_SOCKET": sock}, "")
	e.Stdin, e.Stdout = slave, slave
	code := make(chan int, 1)
	go func() { code <- run([]string{"session", "attach", "claude:x"}, e) }()

	term.waitFor(t, "HELLO-FROM-HARNESS")
	raw, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if raw.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Fatalf("terminal not in raw mode: lflag %#x", raw.Lflag)
	}
	// Keys reach the harness byte for byte (Ctrl-C included); Ctrl-]
	// detaches and is not sent.
	master.Write([]byte("ab\x03\r"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.mu.Lock()
		got := d.input.String()
		d.mu.Unlock()
		if got == "ab\x03\r" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("input = %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	master.Write([]byte("z\x1dnot sent"))
	term.waitExit(t, code)
	term.waitFor(t, `{"ok":true,"session_id":"claude:x","mode":"write","end":"detached"}`)
	d.mu.Lock()
	if got := d.input.String(); got != "ab\x03\rz" {
		t.Errorf("input = %q", got)
	}
	if d.attached.Rows != 33 || d.attached.Cols != 101 || d.attached.Mode != "write" || d.attached.Session != "claude:x" {
		t.Errorf("attach params = %+v", d.attached)
	}
	d.mu.Unlock()
	out := term.String()
	for _, want := range []string{attach.Enter, "PAINTED", "HELLO-FROM-HARNESS", attach.Leave} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q: %q", want, out)
		}
	}
	if strings.Index(out, attach.Leave) > strings.Index(out, `{"ok":true`) {
		t.Error("the JSON line was printed before the terminal was restored")
	}
	after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag || after.Cflag != before.Cflag {
		t.Fatalf("termios not restored: before %+v after %+v", before, after)
	}
}

func TestAttachAlreadyAttachedIsJSONFailure(t *testing.T) {
	sock := filepath.Join(shortDir(t), "s")
	serveAt(t, sock, func(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		return nil, &rpc.Error{Code: rpc.CodeAlreadyAttached, SessionID: "claude:x", Message: "another client holds the attach lease"}
	})
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	before, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	e, _, _ := testEnv(t, map[string]string{"DLGT_SOCKET": sock}, "")
	e.Stdin, e.Stdout = slave, slave
	term := readPTY(master)
	if code := run([]string{"session", "attach", "claude:x"}, e); code != cli.ExitError {
		t.Fatalf("exit %d", code)
	}
	term.waitFor(t, `"code":"ALREADY_ATTACHED"`)
	if strings.Contains(term.String(), attach.Enter) {
		t.Fatal("the terminal was taken over although the attach failed")
	}
	after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if after.Lflag != before.Lflag {
		t.Fatal("termios changed")
	}
}

// --no-end-line (dlgt ui's attach): nothing is left on the terminal after
// detaching, and a failure goes to stderr.
func TestAttachNoEndLine(t *testing.T) {
	_, sock, master, slave := attachOnPTY(t)
	term := readPTY(master)
	e, _, errb := testEnv(t, map[string]string{"DLGT_SOCKET": sock}, "")
	e.Stdin, e.Stdout = slave, slave
	code := make(chan int, 1)
	go func() { code <- run([]string{"session", "attach", "--no-end-line", "claude:x"}, e) }()
	term.waitFor(t, "HELLO-FROM-HARNESS")
	master.Write([]byte{0x1d})
	term.waitExit(t, code)
	term.waitFor(t, attach.Leave)
	time.Sleep(100 * time.Millisecond) // anything written after the restore would be read by now
	if out := term.String(); strings.Contains(out, `"ok"`) || errb.Len() != 0 {
		t.Fatalf("terminal %q, stderr %q", out, errb)
	}

	sock2 := filepath.Join(shortDir(t), "s")
	serveAt(t, sock2, func(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		return nil, &rpc.Error{Code: rpc.CodeAlreadyAttached, SessionID: "claude:x", Message: "another client holds the attach lease"}
	})
	e, _, errb = testEnv(t, map[string]string{"DLGT_SOCKET": sock2}, "")
	e.Stdin, e.Stdout = slave, slave
	if c := run([]string{"session", "attach", "--no-end-line", "claude:x"}, e); c != cli.ExitError {
		t.Fatalf("exit %d", c)
	}
	if !strings.Contains(errb.String(), `"code":"ALREADY_ATTACHED"`) || strings.Count(term.String(), `"ok"`) != 0 {
		t.Fatalf("stderr %q, terminal %q", errb, term)
	}
}
