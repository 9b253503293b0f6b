package pty

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// collector is the single reader of a Process: it copies output into a
// buffer until Read fails, so tests can wait for text to appear and for
// io.EOF without blocking reads of their own.
type collector struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced whenever buf grows
	err     error         // the error that ended reading; nil for io.EOF
	done    chan struct{} // closed when reading has ended
}

func collect(t *testing.T, p *Process) *collector {
	c := &collector{changed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b := make([]byte, 32*1024)
		for {
			n, err := p.Read(b)
			c.mu.Lock()
			c.buf.Write(b[:n])
			if n > 0 {
				close(c.changed)
				c.changed = make(chan struct{})
			}
			if err != nil && err != io.EOF {
				c.err = err
			}
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	// Kill then Close: Close alone unblocks the reader, Kill makes sure no
	// helper outlives a failed test.
	t.Cleanup(func() {
		_ = p.Kill()
		_ = p.Close()
		<-c.done
	})
	return c
}

func (c *collector) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// waitFor waits until the output contains s.
func (c *collector) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(guard)
	for {
		c.mu.Lock()
		found := bytes.Contains(c.buf.Bytes(), []byte(s))
		changed := c.changed
		c.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-c.done:
			if !bytes.Contains(c.output(), []byte(s)) {
				t.Fatalf("output ended (err %v) without %q; output: %s", c.err, s, ctxString(c.output()))
			}
			return
		case <-deadline:
			t.Fatalf("no %q in output after %v; output: %s", s, guard, ctxString(c.output()))
		}
	}
}

// waitEOF waits until Read returned io.EOF and returns the whole output.
func (c *collector) waitEOF(t *testing.T) []byte {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(guard):
		t.Fatalf("no EOF after %v; output: %s", guard, ctxString(c.output()))
	}
	if c.err != nil {
		t.Fatalf("reading ended with %v, want io.EOF", c.err)
	}
	return c.output()
}

func waitDone(t *testing.T, p *Process) ExitStatus {
	t.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(guard):
		t.Fatalf("child did not exit within %v", guard)
		return ExitStatus{}
	}
}

func TestOutputTailNotLost(t *testing.T) {
	const size = 1 << 20
	p, c := startHelper(t, "bulk", fmt.Sprint(size))
	out := c.waitEOF(t)
	if len(out) != size {
		t.Fatalf("read %d bytes, want %d", len(out), size)
	}
	for i, b := range out {
		if b != bulkByte(i) {
			t.Fatalf("byte %d is %q, want %q", i, b, bulkByte(i))
		}
	}
	if st := waitDone(t, p); st != (ExitStatus{Code: 0}) {
		t.Fatalf("status %+v, want exit 0", st)
	}
}

func TestExitCodeKeptAndWaitIdempotent(t *testing.T) {
	p, c := startHelper(t, "exit3")
	out := c.waitEOF(t)
	if !bytes.Contains(out, []byte("about to exit 3")) {
		t.Fatalf("output %q lacks the helper's line", out)
	}
	want := ExitStatus{Code: 3}
	if st := waitDone(t, p); st != want {
		t.Fatalf("status %+v, want %+v", st, want)
	}
	var wg sync.WaitGroup
	results := make([]ExitStatus, 16)
	for i := range results {
		wg.Go(func() { results[i] = p.Wait() })
	}
	wg.Wait()
	for i, st := range results {
		if st != want {
			t.Errorf("Wait #%d = %+v, want %+v", i, st, want)
		}
	}
	if st := p.Wait(); st != want || st.String() != "exit 3" {
		t.Errorf("Wait again = %+v (%s)", st, st)
	}
}

func TestWriteIsEchoed(t *testing.T) {
	p, c := startHelper(t, "echo")
	c.waitFor(t, "echo ready")
	if _, err := p.Write([]byte("hello pty\n")); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "got: hello pty")
	if _, err := p.Write([]byte("quit\n")); err != nil {
		t.Fatal(err)
	}
	c.waitEOF(t)
	if st := waitDone(t, p); st.Code != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestResizeObservedByChild(t *testing.T) {
	p, c := startHelper(t, "winsize")
	c.waitFor(t, "size 24 80\r\n")
	if r, cols := p.Size(); r != 24 || cols != 80 {
		t.Fatalf("Size() = %d, %d before resize", r, cols)
	}
	if err := p.Resize(50, 132); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "winch 50 132\r\n")
	if r, cols := p.Size(); r != 50 || cols != 132 {
		t.Fatalf("Size() = %d, %d after resize", r, cols)
	}
	if err := p.Resize(0, 10); err == nil {
		t.Error("Resize(0, 10) succeeded")
	}
}

func TestEnvAndDirExactlyAsPassed(t *testing.T) {
	// Something the child must not inherit from the test process.
	t.Setenv("DLGT_PTY_LEAK", "leaked")
	dir := t.TempDir()
	env := helperEnviron("env", "A=1", "SPACES=a b  c", "EQUALS=x=y=z", "EMPTY=")
	exe, _ := os.Executable()
	p, err := Start(Options{Argv: []string{exe}, Env: env, Dir: dir, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(t, p)
	out := c.waitEOF(t)
	var rep envReport
	if err := json.Unmarshal(bytes.TrimSpace(out), &rep); err != nil {
		t.Fatalf("child report %q: %v", out, err)
	}
	if !slices.Equal(rep.Env, env) {
		t.Errorf("child env\n%q\nwant\n%q", rep.Env, env)
	}
	wantDir, _ := filepath.EvalSymlinks(dir)
	gotDir, _ := filepath.EvalSymlinks(rep.Cwd)
	if gotDir != wantDir {
		t.Errorf("child cwd %q, want %q", rep.Cwd, dir)
	}
}

func TestNilEnvIsEmpty(t *testing.T) {
	// With no environment the helper cannot be selected, so run a program
	// that prints its environment instead. /usr/bin/env is in coreutils.
	const envBin = "/usr/bin/env"
	if _, err := os.Stat(envBin); err != nil {
		t.Skip(envBin, "not available")
	}
	p, err := Start(Options{Argv: []string{envBin}, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(t, p)
	if out := c.waitEOF(t); len(out) != 0 {
		t.Fatalf("child with nil Env saw environment %q", out)
	}
}

func TestArgv0LookedUpInChildPATH(t *testing.T) {
	exe, _ := os.Executable()
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "dlgt-pty-helper")); err != nil {
		t.Fatal(err)
	}

	env := []string{helperEnv + "=lines", "PATH=relative/dir::" + bin}
	p, err := Start(Options{Argv: []string{"dlgt-pty-helper", "2"}, Env: env, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(t, p)
	if out := c.waitEOF(t); string(out) != "line 0\r\nline 1\r\n" {
		t.Fatalf("output %q", out)
	}

	// The daemon's PATH must not be consulted.
	t.Setenv("PATH", bin)
	_, err = Start(Options{Argv: []string{"dlgt-pty-helper"}, Env: []string{"PATH=/nonexistent"}, Rows: 24, Cols: 80})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Start with PATH lacking the program: %v, want exec.ErrNotFound", err)
	}
	_, err = Start(Options{Argv: []string{"dlgt-pty-helper"}, Env: []string{"A=1"}, Rows: 24, Cols: 80})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Start without PATH: %v, want exec.ErrNotFound", err)
	}
}

func TestStartErrors(t *testing.T) {
	exe, _ := os.Executable()
	for name, opts := range map[string]Options{
		"empty argv":  {Rows: 24, Cols: 80},
		"zero size":   {Argv: []string{exe}, Env: helperEnviron("lines")},
		"missing dir": {Argv: []string{exe}, Env: helperEnviron("lines"), Dir: filepath.Join(t.TempDir(), "nope"), Rows: 24, Cols: 80},
		"not found":   {Argv: []string{"/nonexistent/program"}, Rows: 24, Cols: 80},
	} {
		if p, err := Start(opts); err == nil {
			p.Kill()
			p.Close()
			t.Errorf("%s: Start succeeded", name)
		}
	}
}

func TestSignalReachesGrandchild(t *testing.T) {
	p, c := startHelper(t, "group", "stay")
	c.waitFor(t, "child ready")
	c.waitFor(t, fmt.Sprintf("grandchild ready pgid=%d\r\n", p.Pid()))
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	out := c.waitEOF(t)
	for _, want := range []string{"child got SIGUSR1", "grandchild got SIGUSR1"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q: %s", want, ctxString(out))
		}
	}
	if st := waitDone(t, p); st.Code != 0 {
		t.Fatalf("status %+v", st)
	}
}

// After the child exits, a grandchild still holding the terminal keeps the
// output open: Read returns its later output, then io.EOF. Signal still
// reaches the group, and Write fails because the child is gone.
func TestOutputContinuesAfterExitWhileGrandchildHoldsPTY(t *testing.T) {
	p, c := startHelper(t, "group", "leave")
	if st := waitDone(t, p); st.Code != 0 {
		t.Fatalf("status %+v", st)
	}
	c.waitFor(t, "grandchild ready")
	select {
	case <-c.done:
		t.Fatalf("output ended while the grandchild holds the terminal: %s", ctxString(c.output()))
	default:
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, ErrExited) {
		t.Errorf("Write after exit: %v, want ErrExited", err)
	}
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	out := c.waitEOF(t)
	if !bytes.HasSuffix(out, []byte("grandchild got SIGUSR1\r\n")) {
		t.Fatalf("output does not end with the grandchild's last line: %s", ctxString(out))
	}
}

func TestTerminateEscalatesToKill(t *testing.T) {
	p, c := startHelper(t, "ignore-term")
	c.waitFor(t, "ignoring SIGTERM")
	st := p.Terminate(100 * time.Millisecond)
	if want := (ExitStatus{Code: -1, Signal: "killed"}); st != want {
		t.Fatalf("Terminate = %+v, want %+v", st, want)
	}
	if p.Wait() != st {
		t.Fatalf("Wait %+v differs from Terminate's %+v", p.Wait(), st)
	}
	c.waitEOF(t)
}

func TestTerminateGraceful(t *testing.T) {
	p, c := startHelper(t, "sleep")
	c.waitFor(t, "sleep ready")
	st := p.Terminate(guard)
	if want := (ExitStatus{Code: -1, Signal: "terminated"}); st != want {
		t.Fatalf("Terminate = %+v, want %+v", st, want)
	}
	// Signalling an exited, empty group is not an error.
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("Signal after exit: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill after exit: %v", err)
	}
}

func TestWriteAfterExitAndClose(t *testing.T) {
	p, c := startHelper(t, "exit3")
	c.waitEOF(t)
	waitDone(t, p)
	if _, err := p.Write([]byte("late\n")); !errors.Is(err, ErrExited) {
		t.Errorf("Write after exit: %v, want ErrExited", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := p.Write([]byte("later\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v, want os.ErrClosed", err)
	}
	if _, err := p.Read(make([]byte, 10)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v, want os.ErrClosed", err)
	}
	if err := p.Resize(30, 90); err == nil {
		t.Error("Resize after Close succeeded")
	}
}

// A Write stuck on a full input buffer must return once the child exits,
// even though a grandchild still holds the terminal (so the kernel has no
// reason to fail the write). Nobody here reads the terminal's input.
func TestBlockedWriteReturnsOnExit(t *testing.T) {
	p, c := startHelper(t, "group", "usr2")
	c.waitFor(t, "child waiting for SIGUSR2")
	c.waitFor(t, "grandchild ready")

	// Fill the input buffer until writing no longer makes progress. The
	// short deadline only detects "full"; if it fires early we just write
	// again.
	line := []byte(strings.Repeat("x", 63) + "\n")
	full := false
	for i := 0; i < 1<<16 && !full; i++ {
		_ = p.master.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := p.master.Write(line)
		full = errors.Is(err, os.ErrDeadlineExceeded)
	}
	if !full {
		t.Fatal("terminal input buffer never filled up")
	}
	_ = p.master.SetWriteDeadline(time.Time{})

	writeErr := make(chan error, 1)
	go func() {
		// Blocks once the buffer is full (it may drain a little first
		// under load, so keep writing until a Write fails).
		for {
			if _, err := p.Write(line); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	if err := p.Signal(syscall.SIGUSR2); err != nil { // only the child exits
		t.Fatal(err)
	}
	waitDone(t, p)
	select {
	case err := <-writeErr:
		if !errors.Is(err, ErrExited) {
			t.Errorf("blocked Write returned %v, want ErrExited", err)
		}
	case <-time.After(guard):
		t.Fatalf("Write still blocked %v after the child exited", guard)
	}
	// The mechanism, checked below Write's own exited() shortcut: the
	// master's writes now fail immediately instead of parking.
	if _, err := p.master.Write(line); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("raw master write after exit: %v, want os.ErrDeadlineExceeded", err)
	}

	if err := p.Signal(syscall.SIGUSR1); err != nil { // let the grandchild go
		t.Fatal(err)
	}
	c.waitEOF(t)
}

func TestCloseUnblocksReadAndWrite(t *testing.T) {
	if os.Getenv(expectHupIgnoredEnv) != "" && !signal.Ignored(syscall.SIGHUP) {
		t.Fatal("the outer test meant this run to start with SIGHUP ignored")
	}
	exe, _ := os.Executable()
	p, err := Start(Options{Argv: []string{exe}, Env: helperEnviron("silent"), Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); p.Close() })

	readErr := make(chan error, 1)
	go func() {
		_, err := p.Read(make([]byte, 100))
		readErr <- err
	}()
	writeErr := make(chan error, 1)
	go func() {
		_, err := p.Write(bytes.Repeat([]byte("0123456789abcde\n"), 1<<16))
		writeErr <- err
	}()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"Read": readErr, "Write": writeErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("%s after Close: %v, want os.ErrClosed", name, err)
			}
		case <-time.After(guard):
			t.Fatalf("%s still blocked %v after Close", name, guard)
		}
	}
	// Closing the master hangs up the terminal: the child gets SIGHUP.
	if st := waitDone(t, p); st.Signal != "hangup" {
		t.Errorf("status after Close %+v, want signal hangup", st)
	}
}

const expectHupIgnoredEnv = "DLGT_PTY_TEST_HUP_IGNORED"

// A process that ignores SIGHUP (a daemon started under nohup, a job runner
// that ignores it) must still start its children with SIGHUP's default
// action, or closing the master hangs nothing up. This runs
// TestCloseUnblocksReadAndWrite in a test binary started with SIGHUP
// ignored, as sh's trap leaves it across exec.
func TestCloseHangsUpWhenThisProcessIgnoresSIGHUP(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `trap "" HUP; exec "$0" -test.run='^TestCloseUnblocksReadAndWrite$' -test.count=1 -test.v`, exe)
	cmd.Env = append(os.Environ(), expectHupIgnoredEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inner run with SIGHUP ignored: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestCloseUnblocksReadAndWrite")) {
		t.Fatalf("inner run did not pass the test:\n%s", out)
	}
}

func TestReadDeadline(t *testing.T) {
	p, c := startHelper(t, "sleep")
	c.waitFor(t, "sleep ready")
	// The collector is blocked in Read; a past deadline must wake it.
	if err := p.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
		if !errors.Is(c.err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read ended with %v, want os.ErrDeadlineExceeded", c.err)
		}
	case <-time.After(guard):
		t.Fatal("Read not woken by its deadline")
	}
}

func TestExitStatusString(t *testing.T) {
	for st, want := range map[ExitStatus]string{
		{Code: 0}:                    "exit 0",
		{Code: -1, Signal: "killed"}: "signal killed",
		{Code: -1, Err: "no child"}:  "wait error: no child",
	} {
		if got := st.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", st, got, want)
		}
	}
}

// Ended is false while the child runs and true once it has exited, and
// looking (waitid with WNOWAIT) leaves the exit for Wait to report.
func TestEndedLeavesTheExitToWait(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := Start(Options{Argv: []string{sleep, "30"}, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Ended() {
		t.Fatal("Ended while the child runs")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.Ended() {
		if time.Now().After(deadline) {
			t.Fatal("Ended still false 10 s after SIGKILL")
		}
		time.Sleep(time.Millisecond)
	}
	if st := waitDone(t, p); st.Signal != syscall.SIGKILL.String() {
		t.Fatalf("Wait = %+v, want the SIGKILL", st)
	}
}
