package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Raw PTY transcript limits.
const (
	DefaultRawPage = 1 << 20  // default ReadAt page; enforced by the caller
	MaxRawPage     = 8 << 20  // hard cap on a ReadAt page; enforced by the caller
	DefaultRawCap  = 64 << 20 // default retained bytes per session
)

// RawLog is the bounded, append-only raw PTY transcript of one session. It is
// stored outside bbolt as at most two segment files named
// "<uid>.<start offset, 16 hex digits>.raw" (mode 0600). Offsets are absolute
// byte offsets since the session began and remain valid across restarts
// because each segment's start offset is in its name. When the current
// segment reaches capBytes/2 a new one is started and the older one deleted,
// so at most capBytes are retained and the retained start moves forward.
//
// Writes go straight to the file (one write(2) per Write, no user-space
// buffer), so ReadAt sees them immediately and a daemon crash loses nothing;
// Close fsyncs. All methods are safe for concurrent use.
type RawLog struct {
	dir, uid string
	segLimit int64

	// mu guards the fields that follow. Every method takes it exclusively:
	// readers first write out pending bytes.
	mu     sync.RWMutex
	segs   []*rawSeg // oldest first; 1 or 2 entries; the last one is written
	closed bool
	// pend holds written bytes not yet in a file: PTY output arrives a few
	// KiB at a time, and one write(2) per chunk was a fifth of the ingest
	// path's time. Every reader flushes it first, so it is never visible
	// as missing; a crash loses at most rawPendMax bytes of raw log (the
	// stable rows are in bbolt).
	pend []byte
}

// rawPendMax bounds the bytes a RawLog holds before writing them out.
const rawPendMax = 64 << 10

type rawSeg struct {
	start int64
	size  int64
	f     *os.File
}

func (s *rawSeg) end() int64 { return s.start + s.size }

// OpenRawLog opens (creating if needed) the raw log of session uid in dir.
// capBytes <= 0 selects DefaultRawCap. uid must be a plain file-name
// component ([A-Za-z0-9._-], not starting with '.').
func OpenRawLog(dir, uid string, capBytes int64) (*RawLog, error) {
	if err := checkFileName(uid); err != nil {
		return nil, err
	}
	if capBytes <= 0 {
		capBytes = DefaultRawCap
	}
	l := &RawLog{dir: dir, uid: uid, segLimit: max(capBytes/2, 1)}
	starts, err := rawSegments(dir, uid)
	if err != nil {
		return nil, err
	}
	// A crash during rotation can leave a third, oldest file: drop extras.
	for len(starts) > 2 {
		if err := os.Remove(l.segPath(starts[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		starts = starts[1:]
	}
	if len(starts) == 0 {
		starts = []int64{0}
	}
	for i, start := range starts {
		flag := os.O_RDONLY
		if i == len(starts)-1 {
			flag = os.O_RDWR | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(l.segPath(start), flag, 0o600)
		if err != nil {
			l.closeFiles()
			return nil, fmt.Errorf("store: open raw log: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			l.closeFiles()
			return nil, err
		}
		l.segs = append(l.segs, &rawSeg{start: start, size: fi.Size(), f: f})
	}
	// Segments must be contiguous; if the older one does not end where the
	// newer begins (should not happen), forget it.
	if len(l.segs) == 2 && l.segs[0].end() != l.segs[1].start {
		l.segs[0].f.Close()
		os.Remove(l.segPath(l.segs[0].start))
		l.segs = l.segs[1:]
	}
	return l, nil
}

// RemoveRawLog deletes every segment file of uid in dir. The RawLog must be
// closed first.
func RemoveRawLog(dir, uid string) error {
	if err := checkFileName(uid); err != nil {
		return err
	}
	starts, err := rawSegments(dir, uid)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range starts {
		if err := os.Remove(filepath.Join(dir, rawSegName(uid, s))); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Write appends p. It only fails on a file error (e.g. ENOSPC), in which case
// the returned count says how much was appended.
func (l *RawLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if len(l.pend)+len(p) <= rawPendMax {
		l.pend = append(l.pend, p...)
		return len(p), nil
	}
	if err := l.flushLocked(); err != nil {
		return 0, err
	}
	if len(p) <= rawPendMax {
		l.pend = append(l.pend, p...)
		return len(p), nil
	}
	return l.writeLocked(p)
}

// flushLocked writes the pending bytes out. On failure they are dropped
// (as an unbuffered write would have lost them) and the error returned.
// l.mu must be held exclusively.
func (l *RawLog) flushLocked() error {
	if len(l.pend) == 0 {
		return nil
	}
	_, err := l.writeLocked(l.pend)
	l.pend = l.pend[:0]
	return err
}

// writeLocked appends p to the segment files, rotating as needed. l.mu
// must be held exclusively.
func (l *RawLog) writeLocked(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		cur := l.segs[len(l.segs)-1]
		if cur.size >= l.segLimit {
			if err := l.rotate(); err != nil {
				return written, err
			}
			cur = l.segs[len(l.segs)-1]
		}
		chunk := p[:min(int64(len(p)), l.segLimit-cur.size)]
		n, err := cur.f.Write(chunk)
		cur.size += int64(n)
		written += n
		if err != nil {
			return written, fmt.Errorf("store: write raw log: %w", err)
		}
		p = p[n:]
	}
	return written, nil
}

// rotate starts a new segment at the current end and deletes the older
// segment if there are now more than two. l.mu must be held.
func (l *RawLog) rotate() error {
	cur := l.segs[len(l.segs)-1]
	f, err := os.OpenFile(l.segPath(cur.end()), os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("store: rotate raw log: %w", err)
	}
	// The finished segment's handle is only used for ReadAt from now on.
	l.segs = append(l.segs, &rawSeg{start: cur.end(), f: f})
	if len(l.segs) > 2 {
		old := l.segs[0]
		l.segs = slices.Delete(l.segs, 0, 1)
		old.f.Close()
		if err := os.Remove(l.segPath(old.start)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store: drop old raw segment: %w", err)
		}
	}
	return nil
}

// ReadAt returns up to limit bytes (limit <= 0: DefaultRawPage) starting at
// max(after, retained start). start is the offset of data[0]; if start >
// after, bytes in between were dropped by rotation. next = start+len(data);
// hasMore reports whether more bytes exist beyond next. An after beyond the
// end is clamped to the end.
func (l *RawLog) ReadAt(after int64, limit int) (data []byte, start int64, next int64, hasMore bool, err error) {
	if limit <= 0 {
		limit = DefaultRawPage
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, 0, 0, false, ErrClosed
	}
	if err := l.flushLocked(); err != nil {
		return nil, 0, 0, false, err
	}
	first, end := l.segs[0].start, l.segs[len(l.segs)-1].end()
	start = min(max(after, first), end)
	n := min(int64(limit), end-start)
	data = make([]byte, n)
	for _, s := range l.segs {
		lo, hi := max(start, s.start), min(start+n, s.end())
		if lo >= hi {
			continue
		}
		if _, err := s.f.ReadAt(data[lo-start:hi-start], lo-s.start); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, start, start, false, fmt.Errorf("store: read raw log: %w", err)
		}
	}
	next = start + n
	return data, start, next, next < end, nil
}

// Bounds returns the retained start offset and the end offset (total bytes
// ever written).
func (l *RawLog) Bounds() (retainedStart, end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		// A failed write drops the pending bytes, as an unbuffered Write
		// would have; the bounds then describe what is on disk.
		l.flushLocked()
	}
	return l.segs[0].start, l.segs[len(l.segs)-1].end()
}

// Sync writes out pending bytes and fsyncs the current segment.
func (l *RawLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	return l.segs[len(l.segs)-1].f.Sync()
}

// Close fsyncs and closes the log. A second Close returns ErrClosed.
func (l *RawLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	err := errors.Join(l.flushLocked(), l.segs[len(l.segs)-1].f.Sync())
	return errors.Join(err, l.closeFiles())
}

func (l *RawLog) closeFiles() error {
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.f.Close())
	}
	return errors.Join(errs...)
}

func (l *RawLog) segPath(start int64) string {
	return filepath.Join(l.dir, rawSegName(l.uid, start))
}

func rawSegName(uid string, start int64) string {
	return fmt.Sprintf("%s.%016x.raw", uid, start)
}

// rawSegments returns the start offsets of uid's segment files, ascending.
func rawSegments(dir, uid string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: list raw logs: %w", err)
	}
	var starts []int64
	prefix := uid + "."
	for _, e := range entries {
		name := e.Name()
		hex, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		hex, ok = strings.CutSuffix(hex, ".raw")
		if !ok || len(hex) != 16 {
			continue
		}
		v, err := strconv.ParseInt(hex, 16, 64)
		if err != nil || v < 0 {
			continue
		}
		starts = append(starts, v)
	}
	slices.Sort(starts)
	return starts, nil
}

func checkFileName(s string) error {
	ok := s != "" && len(s) <= 128 && s[0] != '.'
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: %q is not a safe file name", ErrInvalidName, truncate(s, 64))
	}
	return nil
}
