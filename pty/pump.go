package pty

import (
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Pump reads the terminal's output until the end (io.EOF, as Read reports
// it) or an error, which it returns, and hands every chunk, in order, to
// consume, which must be done with it before it returns. buf should hold
// at least 4 KiB (see Drain). Use Pump or Read, not both.
//
// Each read and the consume of what it read run under one lock, which
// Drain takes too: while Pump waits for output it holds nothing.
func (p *Process) Pump(buf []byte, consume func([]byte)) error {
	rc, err := p.master.SyscallConn()
	if err != nil {
		return err
	}
	p.pumpMu.Lock()
	p.consume, p.pumpBuf = consume, buf
	p.pumpMu.Unlock()
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			p.pumpMu.Lock()
			defer p.pumpMu.Unlock()
			n, rerr = readOnce(int(fd), buf)
			if rerr == syscall.EAGAIN {
				return false // wait for output, holding nothing
			}
			if n > 0 {
				consume(buf[:n])
			}
			return true
		})
		switch {
		case err != nil && p.closed.Load():
			return &os.PathError{Op: "read", Path: p.master.Name(), Err: os.ErrClosed}
		case err != nil:
			return err
		case rerr == syscall.EIO || (rerr == nil && n == 0):
			return io.EOF // every descriptor of the slave is closed
		case rerr != nil:
			return &os.PathError{Op: "read", Path: p.master.Name(), Err: rerr}
		}
	}
}

// Drain hands the running Pump's consume, at once, the output the
// terminal holds unread, after the chunk Pump may be consuming: when Drain
// returns, every byte the child had written before the call has been
// consumed (bytes it writes meanwhile may be too). It does nothing, and
// costs one read that finds nothing, when Pump is caught up; it never
// waits for output the child has not written. Without a running Pump, or
// after Close, it does nothing.
//
// Linux keeps a terminal's unread output in two places: the line
// discipline's 4 KiB read buffer, which a read empties, and a queue of up
// to 64 KiB behind it, moved into the buffer by kernel work that runs
// after the read made room. So Drain asks with a read, not with TIOCINQ:
// TIOCINQ counts the buffer only, and says 0 while that work has yet to
// run (a loaded machine), whereas a read that finds the buffer empty waits
// for pending work first (n_tty_read flushes it). Should a read after a
// full one still find nothing, Drain waits up to drainRefill for the work
// before it takes "nothing to read" for an answer. It stops after drainMax
// bytes (more than both hold: a child that never pauses cannot keep it
// reading).
func (p *Process) Drain() {
	p.pumpMu.Lock()
	defer p.pumpMu.Unlock()
	if p.consume == nil || p.closed.Load() {
		return
	}
	rc, err := p.master.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		full := false
		for total := 0; total < drainMax; {
			n, err := readOnce(int(fd), p.pumpBuf)
			if n > 0 {
				p.consume(p.pumpBuf[:n])
				total += n
				full = n >= ldiscFull
				continue
			}
			if err != syscall.EAGAIN || !full {
				return // empty, or the end (Pump sees it next)
			}
			ready, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(drainRefill/time.Millisecond))
			if err != nil || ready <= 0 {
				return
			}
			full = false
		}
	})
}

// Drain's bounds (see Drain).
const (
	// ldiscFull is a read that took (nearly) the whole 4 KiB line
	// discipline buffer: more may be queued behind it.
	ldiscFull = 4000
	// drainRefill bounds the wait for the kernel to refill that buffer.
	drainRefill = 2 * time.Millisecond
	// drainMax is more than the buffer and its queue hold together.
	drainMax = 256 << 10
)

// readOnce is read(2) on the non-blocking master, retried on EINTR.
func readOnce(fd int, buf []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, buf)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
