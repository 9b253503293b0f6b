package sockets

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// socketSafetyInterval is how often the socket paths are checked while
// the directories holding them are watched: a safety net for what a
// directory watch cannot see (a directory above them renamed), rare
// enough to cost an idle daemon nothing measurable.
const socketSafetyInterval = time.Minute

// Watch rebinds deleted socket paths until ctx is done. It sleeps
// on inotify events of the directories that hold the paths (an entry
// deleted, created or renamed there), so an idle daemon is not woken to
// look; where inotify is unavailable, or a watched directory itself was
// deleted or moved, it checks every CheckInterval until the
// directory can be watched again.
func Watch(ctx context.Context, log *slog.Logger, socks ...*Owned) {
	var dirs, names []string
	for _, o := range socks {
		dirs, names = append(dirs, filepath.Dir(o.path)), append(names, filepath.Base(o.path))
	}
	w := newDirWatch(dirs, names)
	defer w.close()
	t := time.NewTimer(CheckInterval)
	defer t.Stop()
	for {
		// First (a path deleted before the watch was set) and after
		// every wake-up.
		for _, o := range socks {
			o.Rebind(log)
		}
		every := socketSafetyInterval
		if !w.watching() {
			every = CheckInterval
		}
		t.Reset(every)
		select {
		case <-ctx.Done():
			return
		case <-w.events:
			t.Stop()
		case <-t.C:
			w.rewatch()
		}
	}
}

// dirWatchMask: what in a watched directory may mean a socket path no
// longer names the daemon's socket, and what ends the watch itself.
const dirWatchMask = syscall.IN_DELETE | syscall.IN_CREATE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
	syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR

// dirWatch is one inotify instance watching a few directories for
// changes of a few names in them.
type dirWatch struct {
	fd     int
	f      *os.File        // nil when inotify is unavailable
	names  map[string]bool // the entries that matter
	events chan struct{}   // one of them, or a watch, changed (1-buffered)

	mu     sync.Mutex
	closed bool             // fd is no longer ours to use
	wds    map[int32]string // watch descriptor -> directory
	want   map[string]bool  // directory -> watched now
}

func newDirWatch(dirs, names []string) *dirWatch {
	w := &dirWatch{fd: -1, names: map[string]bool{}, events: make(chan struct{}, 1), wds: map[int32]string{}, want: map[string]bool{}}
	for _, d := range dirs {
		w.want[d] = false
	}
	for _, n := range names {
		w.names[n] = true
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return w
	}
	w.fd, w.f = fd, os.NewFile(uintptr(fd), "inotify") // non-blocking: read through the poller
	w.rewatch()
	go w.read()
	return w
}

// watching reports whether every directory has a watch.
func (w *dirWatch) watching() bool {
	if w.f == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ok := range w.want {
		if !ok {
			return false
		}
	}
	return true
}

// rewatch sets a watch on each directory that has none.
func (w *dirWatch) rewatch() {
	if w.f == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	for d, ok := range w.want {
		if ok {
			continue
		}
		wd, err := syscall.InotifyAddWatch(w.fd, d, dirWatchMask)
		if err == nil {
			w.wds[int32(wd)] = d
			w.want[d] = true
		}
	}
}

// read turns inotify events into wake-ups of Watch and forgets
// the watches that ended, until the instance is closed.
func (w *dirWatch) read() {
	buf := make([]byte, 16<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		wake := false
		for b := buf[:n]; len(b) >= syscall.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
			if size > len(b) {
				break
			}
			name := string(bytes.TrimRight(b[syscall.SizeofInotifyEvent:size], "\x00"))
			b = b[size:]
			if name != "" && !w.names[name] {
				continue // another entry of the directory
			}
			wake = true
			w.mu.Lock()
			switch {
			case mask&syscall.IN_IGNORED != 0: // deleted, or removed below
				if d, ok := w.wds[wd]; ok {
					delete(w.wds, wd)
					w.want[d] = false
				}
			case mask&syscall.IN_MOVE_SELF != 0:
				// The watch follows the directory to its new name: the
				// path is watched no more.
				if d, ok := w.wds[wd]; ok {
					delete(w.wds, wd)
					w.want[d] = false
					if !w.closed {
						syscall.InotifyRmWatch(w.fd, uint32(wd))
					}
				}
			}
			w.mu.Unlock()
		}
		if !wake {
			continue
		}
		select {
		case w.events <- struct{}{}:
		default:
		}
	}
}

func (w *dirWatch) close() {
	if w.f == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.f.Close()
}
