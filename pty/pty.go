package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ErrExited is returned by [Process.Write] once the child has exited: input
// written after that point has no reader we care about, and a write into a
// full terminal buffer could otherwise block forever.
var ErrExited = errors.New("pty: process has exited")

// Options describes the child to start.
type Options struct {
	// Argv is the command line; Argv[0] is also the name the program sees.
	//
	// If Argv[0] contains no slash it is looked up in the PATH found in Env
	// (never the daemon's own PATH), using os/exec's notion of "executable".
	// Empty and relative PATH entries are skipped, as os/exec refuses them
	// too (exec.ErrDot). If Env has no PATH, Start fails with an error
	// wrapping exec.ErrNotFound. An Argv[0] that contains a slash is used
	// as is; a relative one is resolved by the kernel after the child has
	// changed into Dir, as with exec.Cmd.
	Argv []string

	// Env is the child's complete environment, as "KEY=value" entries. A
	// nil or empty Env gives the child an empty environment; the daemon's
	// environment is never inherited. As in os/exec, if a key appears more
	// than once only the last entry is kept, and an entry containing a NUL
	// byte makes Start fail.
	Env []string

	// Dir is the child's working directory. If empty, the child starts in
	// the daemon's working directory; a relative Dir is relative to it.
	Dir string

	// Rows and Cols are the initial terminal size. Both must be non-zero.
	Rows, Cols uint16
}

// ExitStatus is how the child ended.
type ExitStatus struct {
	// Code is the exit code passed to exit(2), or -1 if the child did not
	// exit normally (killed by a signal, or waiting for it failed).
	Code int
	// Signal names the signal that killed the child, as Go spells it
	// (syscall.Signal.String: "killed", "terminated", "hangup", ...), or
	// "" if the child exited normally.
	Signal string
	// Err describes a failure to wait for the child; normally "".
	Err string
}

// String formats the status for logs, e.g. "exit 3" or "signal killed".
func (s ExitStatus) String() string {
	switch {
	case s.Err != "":
		return "wait error: " + s.Err
	case s.Signal != "":
		return "signal " + s.Signal
	default:
		return fmt.Sprintf("exit %d", s.Code)
	}
}

// Process is a child running under a PTY. See the package documentation for
// who owns what and how to tell that output is complete.
type Process struct {
	cmd    *exec.Cmd
	master *os.File
	pid    int

	// done is closed by the reaper after status is written; reading status
	// after <-done is therefore race free without a lock.
	done   chan struct{}
	status ExitStatus

	sizeMu     sync.Mutex
	rows, cols uint16

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// pumpMu is held by Pump while it reads and consumes a chunk, and by
	// Drain; it guards the fields that follow (see pump.go).
	pumpMu  sync.Mutex
	consume func([]byte)
	pumpBuf []byte
}

// Start starts opts.Argv under a new PTY of opts.Rows×opts.Cols, in its own
// session and process group, with exactly opts.Env and opts.Dir. The caller
// must eventually call Close on the returned Process.
func Start(opts Options) (*Process, error) {
	if len(opts.Argv) == 0 || opts.Argv[0] == "" {
		return nil, errors.New("pty: start: empty Argv")
	}
	if opts.Rows == 0 || opts.Cols == 0 {
		return nil, fmt.Errorf("pty: start %q: terminal size %dx%d must be non-zero", opts.Argv[0], opts.Rows, opts.Cols)
	}
	path, err := lookPath(opts.Argv[0], opts.Env)
	if err != nil {
		return nil, fmt.Errorf("pty: start: %w", err)
	}

	env := opts.Env
	if env == nil {
		// exec.Cmd treats a nil Env as "inherit the daemon's environment".
		env = []string{}
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: opts.Argv,
		Env:  env,
		Dir:  opts.Dir,
	}
	// Setsid makes the child a session (and so process group) leader, which
	// is what lets Signal address its whole group by -pid. Setctty makes the
	// PTY slave (the child's fd 0, Ctty's zero value) its controlling
	// terminal, so the kernel delivers SIGWINCH on resize and SIGHUP on
	// hangup, and job control behaves as in a real terminal.
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	unignoreHangup()
	// StartWithAttrs opens the pair, sizes it, starts the child on the slave
	// and closes the parent's copy of the slave. Not holding the slave is
	// essential: while any descriptor of it stays open in the daemon the
	// master never reports EIO and output would never end.
	master, err := creackpty.StartWithAttrs(cmd, &creackpty.Winsize{Rows: opts.Rows, Cols: opts.Cols}, attrs)
	if err != nil {
		return nil, fmt.Errorf("pty: start %q: %w", opts.Argv[0], err)
	}
	pollable, err := makePollable(master)
	if err != nil {
		// We cannot hand out a usable Process; do not leave the child behind.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("pty: start %q: %w", opts.Argv[0], err)
	}

	p := &Process{
		cmd:    cmd,
		master: pollable,
		pid:    cmd.Process.Pid,
		done:   make(chan struct{}),
		rows:   opts.Rows,
		cols:   opts.Cols,
	}
	go p.reap()
	return p, nil
}

// hangupSink receives the SIGHUPs of a process that was started with
// SIGHUP ignored (see unignoreHangup); nothing reads it, so they are dropped.
var hangupSink = make(chan os.Signal, 1)

// unignoreHangup makes sure the child starts with SIGHUP's default action.
//
// A signal a process ignores stays ignored across fork and exec, and Go's
// runtime keeps an inherited SIG_IGN for SIGHUP. So a daemon started under
// nohup (or by anything that ignores SIGHUP, as some job runners do) would
// pass the ignore on to every harness, which would then survive the hangup
// that closing its master is documented to deliver: the child never
// exited, and TestCloseUnblocksReadAndWrite timed out whenever the tests
// ran with SIGHUP ignored. Installing a Go handler in this process (the
// signals go to hangupSink, which nothing reads) keeps SIGHUP harmless here
// while the fork resets a handled signal to its default in the child.
func unignoreHangup() {
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(hangupSink, syscall.SIGHUP)
	}
}

// makePollable returns a non-blocking, runtime-poller-backed duplicate of f
// and closes f.
//
// creack/pty issues its ioctls through (*os.File).Fd, which permanently
// switches the file to blocking mode. A blocking read(2) on the master
// occupies an OS thread and cannot be interrupted by Close or a deadline, so
// a grandchild holding the slave open would pin the reader forever. A fresh
// *os.File made by os.NewFile from a non-blocking descriptor is registered
// with the poller instead.
func makePollable(f *os.File) (*os.File, error) {
	defer func() { _ = f.Close() }()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("set pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// lookPath resolves name the way os/exec would, but against the PATH in the
// child's environment rather than the daemon's: the child runs with env, so
// that is the PATH the user configured for it.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathVar, ok := "", false
	for _, kv := range env { // last entry wins, matching exec.Cmd's dedup
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathVar, ok = v, true
		}
	}
	if !ok {
		return "", fmt.Errorf("%q: no PATH in Options.Env: %w", name, exec.ErrNotFound)
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(dir) {
			continue
		}
		// With a slash in its argument, exec.LookPath only checks that the
		// file is an executable regular file; reuse that check.
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q in PATH %q: %w", name, pathVar, exec.ErrNotFound)
}

// reap waits for the child, records how it ended and wakes everyone waiting.
func (p *Process) reap() {
	err := p.cmd.Wait()
	p.status = exitStatus(p.cmd.ProcessState, err)
	close(p.done)
	// Wake any Write parked on a full terminal buffer (the child no longer
	// reads it) and make later writes fail fast; Write reports ErrExited.
	// After Close this fails harmlessly.
	_ = p.master.SetWriteDeadline(time.Now())
}

func exitStatus(ps *os.ProcessState, waitErr error) ExitStatus {
	if ps == nil {
		msg := "unknown wait failure"
		if waitErr != nil {
			msg = waitErr.Error()
		}
		return ExitStatus{Code: -1, Err: msg}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return ExitStatus{Code: ps.ExitCode()}
	case ws.Signaled():
		return ExitStatus{Code: -1, Signal: ws.Signal().String()}
	default:
		return ExitStatus{Code: ws.ExitStatus()}
	}
}

// Pid returns the child's pid, which is also its process group id and
// session id.
func (p *Process) Pid() int { return p.pid }

// Read reads terminal output. It returns io.EOF once every descriptor of the
// PTY slave has been closed and the buffered output has been read (the
// master's EIO is translated; Read never returns EIO). After Close it returns
// an error wrapping os.ErrClosed. Read the output until io.EOF to be sure to
// have the child's last bytes; see the package documentation.
func (p *Process) Read(b []byte) (int, error) {
	n, err := p.master.Read(b)
	if err != nil && errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

// SetReadDeadline bounds pending and future Reads, as for os.File; a Read
// that hits the deadline returns an error wrapping os.ErrDeadlineExceeded.
// The zero time removes the deadline.
func (p *Process) SetReadDeadline(t time.Time) error {
	return p.master.SetReadDeadline(t)
}

// Write sends input to the child, as if typed (the terminal's line
// discipline applies: echo, canonical mode, ^C to SIGINT, ...). It is safe to
// call concurrently with Read. After Close it returns an error wrapping
// os.ErrClosed; once the child has exited it returns ErrExited, including for
// a Write that was blocked on a full input buffer when the child exited.
func (p *Process) Write(b []byte) (int, error) {
	if p.closed.Load() {
		return 0, &os.PathError{Op: "write", Path: p.master.Name(), Err: os.ErrClosed}
	}
	if p.exited() {
		return 0, ErrExited
	}
	n, err := p.master.Write(b)
	if err != nil && !errors.Is(err, os.ErrClosed) && p.exited() {
		// Typically the deadline set by reap, or EIO because the slave is
		// gone; either way the reason is the exit.
		err = ErrExited
	}
	return n, err
}

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Ended reports whether the child has exited, also when it has ended but
// its reaper has not collected it yet (a zombie: Done is not closed until
// then). waitid with WNOWAIT looks without reaping, so Wait still reports
// how it ended.
func (p *Process) Ended() bool {
	if p.exited() {
		return true
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil {
		// ECHILD: reaped between the two checks; anything else is no
		// evidence of an exit.
		return errors.Is(err, unix.ECHILD)
	}
	// Linux reports a waitable child with si_signo SIGCHLD and leaves
	// it 0 when none is (WNOHANG).
	return info.Signo == int32(unix.SIGCHLD)
}

// Resize sets the terminal size. The kernel sends SIGWINCH to the terminal's
// foreground process group, which is how full-screen programs notice.
func (p *Process) Resize(rows, cols uint16) error {
	if rows == 0 || cols == 0 {
		return fmt.Errorf("pty: resize: terminal size %dx%d must be non-zero", rows, cols)
	}
	p.sizeMu.Lock()
	defer p.sizeMu.Unlock()
	if err := setSize(p.master, rows, cols); err != nil {
		return fmt.Errorf("pty: resize: %w", err)
	}
	p.rows, p.cols = rows, cols
	return nil
}

// setSize issues TIOCSWINSZ through SyscallConn rather than creack/pty's
// Setsize, whose use of (*os.File).Fd would switch the master back to
// blocking mode. Control also keeps the descriptor from being closed (and
// its number reused) while the ioctl runs.
func setSize(f *os.File, rows, cols uint16) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioctlErr error
	err = rc.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err != nil {
		return err
	}
	return ioctlErr
}

// Size returns the size last set by Start or Resize.
func (p *Process) Size() (rows, cols uint16) {
	p.sizeMu.Lock()
	defer p.sizeMu.Unlock()
	return p.rows, p.cols
}

// Signal sends sig to the child's whole process group (kill(-pgid, sig)).
// It still works after the child exited, to reach grandchildren left in the
// group; if the group no longer exists (ESRCH) that is not an error.
//
// Once the child has been reaped and its whole group is gone, the kernel may
// in principle reuse the id for an unrelated process group; that needs pid
// wrap-around plus a new group leader with exactly that id, so it is not
// guarded against.
func (p *Process) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.pid, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("pty: signal %v to process group %d: %w", sig, p.pid, err)
}

// Kill sends SIGKILL to the child's process group.
func (p *Process) Kill() error { return p.Signal(syscall.SIGKILL) }

// Terminate asks the process group to stop with SIGTERM and, if the child
// has not exited after grace, sends SIGKILL to the group. It returns the
// child's exit status, blocking until the child has been reaped. It does not
// close the master: keep reading until io.EOF, then Close.
func (p *Process) Terminate(grace time.Duration) ExitStatus {
	if err := p.Signal(syscall.SIGTERM); err == nil {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
			return p.status
		case <-timer.C:
		}
	}
	_ = p.Kill()
	return p.Wait()
}

// Wait blocks until the child has exited and been reaped, and returns its
// exit status. Any number of goroutines may call it, any number of times;
// all get the same value. Wait says nothing about whether all output has
// been read.
func (p *Process) Wait() ExitStatus {
	<-p.done
	return p.status
}

// Done returns a channel that is closed once the child has exited and been
// reaped; Wait then returns immediately.
func (p *Process) Done() <-chan struct{} { return p.done }

// Close closes the PTY master. Pending and later Reads and Writes fail with
// an error wrapping os.ErrClosed, and output the kernel still buffers is
// lost. Closing the master hangs up the terminal, so the kernel sends SIGHUP
// to the child's session; Close neither waits for that nor checks that it
// worked — use Terminate or Kill for that. Close is idempotent: later calls
// return the first call's result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.closeErr = p.master.Close()
	})
	return p.closeErr
}
