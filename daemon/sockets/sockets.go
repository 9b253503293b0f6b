package sockets

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// ErrInUse is returned when a live daemon already answers on the
// socket path; it is never replaced.
var ErrInUse = errors.New("another dlgt daemon is listening on the socket")

// Listen binds the Unix socket at path with the bind hygiene of a careful
// local daemon: a stale socket left by a crash is removed only when it is
// a socket, owned by us, and nothing answers on it. A live listener, a
// non-socket file, or a socket owned by another uid makes bind fail rather
// than unlinking something the daemon does not own. The socket is created
// 0600 (umask during bind, so it is never briefly wider).
func Listen(path string) (*net.UnixListener, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	case fi.Mode()&os.ModeSocket == 0:
		return nil, fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	default:
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != os.Getuid() {
			return nil, fmt.Errorf("%s is a socket owned by uid %d; refusing to replace it", path, st.Uid)
		}
		c, derr := net.DialTimeout("unix", path, time.Second)
		if derr == nil {
			c.Close()
			return nil, fmt.Errorf("%w (%s)", ErrInUse, path)
		}
		if !errors.Is(derr, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("probing existing socket %s: %v", path, derr)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", path, err)
	}
	// We unlink the path ourselves, and only if it is still our socket.
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// sameFile reports whether path still names the socket we bound.
func sameFile(path string, want os.FileInfo) bool {
	fi, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, want)
}

// CheckInterval is how often the daemon checks that its socket
// paths still name the sockets it bound when it cannot watch the
// directories holding them (see Watch); a path deleted (or
// replaced by a stale file) while it runs is bound again, so clients can
// reconnect.
const CheckInterval = 2 * time.Second

// Owned is a listener on a socket path the daemon owns. When the
// path is deleted while the daemon runs, Rebind binds it again (with
// Listen's bind hygiene) and Accept continues on the new socket; the
// server never sees the switch.
type Owned struct {
	path string

	// mu guards the fields that follow.
	mu      sync.Mutex
	l       *net.UnixListener
	info    os.FileInfo // the bound socket file, to recognize it
	closed  bool
	lastErr string     // last rebind failure logged, to log each once
	queued  []net.Conn // taken from a replaced socket's queue, for Accept
}

// ListenOwned binds path (see Listen).
func ListenOwned(path string) (*Owned, error) {
	l, err := Listen(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, err
	}
	return &Owned{path: path, l: l, info: info}, nil
}

// Accept waits on the current socket; a socket replaced by Rebind ends
// its Accept with an error, and Accept continues on the new one.
func (o *Owned) Accept() (net.Conn, error) {
	for {
		o.mu.Lock()
		if len(o.queued) > 0 {
			c := o.queued[0]
			o.queued = o.queued[1:]
			o.mu.Unlock()
			return c, nil
		}
		l := o.l
		o.mu.Unlock()
		c, err := l.Accept()
		if err == nil {
			return c, nil
		}
		o.mu.Lock()
		swapped := o.l != l && !o.closed
		o.mu.Unlock()
		if !swapped {
			return nil, err
		}
	}
}

func (o *Owned) Addr() net.Addr {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.l.Addr()
}

// Close stops accepting; the path is left alone (see Cleanup).
func (o *Owned) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for _, c := range o.queued {
		c.Close()
	}
	o.queued = nil
	return o.l.Close()
}

// Cleanup closes the listener and removes the path only if it still
// names our socket.
func (o *Owned) Cleanup() {
	o.Close()
	o.mu.Lock()
	info := o.info
	o.mu.Unlock()
	if sameFile(o.path, info) {
		os.Remove(o.path)
	}
}

// Rebind binds the path again when it no longer names our socket. A path
// taken by something Listen refuses to replace (a live daemon, a file
// that is not a socket) is left alone and the failure logged once.
func (o *Owned) Rebind(log *slog.Logger) {
	o.mu.Lock()
	if o.closed || sameFile(o.path, o.info) {
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	nl, err := Listen(o.path)
	var info os.FileInfo
	if err == nil {
		if info, err = os.Lstat(o.path); err != nil {
			nl.Close()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != o.lastErr {
			o.lastErr = msg
			log.Error("socket path no longer names the daemon's socket; cannot bind it again", "socket", o.path, "err", err)
		}
		return
	}
	if o.closed {
		nl.Close()
		if sameFile(o.path, info) {
			os.Remove(o.path)
		}
		return
	}
	old := o.l
	o.l, o.info, o.lastErr = nl, info, ""
	// Clients that connected just before the path was deleted wait in
	// the old socket's queue: Accept hands them out before the new ones.
	o.queued = append(o.queued, drainQueued(old)...)
	old.Close()
	log.Warn("socket path was deleted or replaced while running; bound it again", "socket", o.path)
}

// drainQueued accepts, without waiting, the connections queued on l (at
// most its backlog, bounded by the kernel's somaxconn).
func drainQueued(l *net.UnixListener) []net.Conn {
	rc, err := l.SyscallConn()
	if err != nil {
		return nil
	}
	var out []net.Conn
	rc.Control(func(fd uintptr) {
		for len(out) < 1<<16 {
			nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			if err == syscall.EINTR || err == syscall.ECONNABORTED {
				continue
			}
			if err != nil {
				return
			}
			f := os.NewFile(uintptr(nfd), "unix")
			c, err := net.FileConn(f)
			f.Close()
			if err == nil {
				out = append(out, c)
			}
		}
	})
	return out
}
