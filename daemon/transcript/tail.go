package transcript

import (
	"bytes"
	"io"
	"os"
)

// MaxLine bounds one buffered line of a Tail; longer lines are skipped
// (lifecycle entries are small).
const MaxLine = 8 << 20

// Tail reads the complete lines appended to a file (a provider
// transcript being followed for lifecycle evidence).
type Tail struct {
	path    string
	offset  int64
	partial []byte
	skip    bool // dropping an overlong line up to its newline
}

// NewTail is a Tail of the file at path from offset.
func NewTail(path string, offset int64) *Tail { return &Tail{path: path, offset: offset} }

// SkipBefore moves past what path held before an execution started,
// when from (the file's size then) is ahead: those lines belong to
// earlier turns, read only now because the tail slept between turns.
func (t *Tail) SkipBefore(path string, from int64) {
	if path == t.path && from > t.offset {
		t.offset, t.partial, t.skip = from, nil, false
	}
}

// Read returns the complete lines appended since the last Read (none
// when the file is missing; a file now shorter than what was read is
// started over at its end).
func (t *Tail) Read() [][]byte {
	// Most polls find nothing new: one stat, no open, no buffer (a
	// Session is polled ten times a second during a turn).
	fi, err := os.Stat(t.path)
	if err != nil || fi.Size() == t.offset {
		return nil
	}
	if fi.Size() < t.offset {
		// Truncated or replaced: start over at its end.
		t.offset, t.partial, t.skip = fi.Size(), nil, false
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil
	}
	var lines [][]byte
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		t.offset += int64(n)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if !t.skip {
					t.partial = append(t.partial, chunk...)
					if len(t.partial) > MaxLine {
						t.partial, t.skip = nil, true
					}
				}
				break
			}
			if !t.skip {
				line := append(t.partial, chunk[:i]...)
				if len(line) > 0 {
					lines = append(lines, line)
				}
			}
			t.partial, t.skip = nil, false
			chunk = chunk[i+1:]
		}
		if err != nil || n == 0 {
			return lines
		}
	}
}
