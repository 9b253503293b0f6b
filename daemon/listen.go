package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// ErrSocketInUse is returned when a live daemon already answers on the
// socket path; it is never replaced.
var ErrSocketInUse = errors.New("another dlgt daemon is listening on the socket")

// listen binds the Unix socket at path with the bind hygiene of a careful
// local daemon: a stale socket left by a crash is removed only when it is
// a socket, owned by us, and nothing answers on it. A live listener, a
// non-socket file, or a socket owned by another uid makes bind fail rather
// than unlinking something the daemon does not own. The socket is created
// 0600 (umask during bind, so it is never briefly wider).
func listen(path string) (*net.UnixListener, error) {
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
			return nil, fmt.Errorf("%w (%s)", ErrSocketInUse, path)
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
