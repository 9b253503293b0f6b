package vt

import (
	"sync"
	"unsafe"
)

// ResetReason names why a screen epoch ended. Rows emitted before a reset
// belong to the old epoch; the live grid after it belongs to the new one.
type ResetReason string

const (
	// ResetRestart is for the daemon: a new process generation gets a new
	// Screen. A Screen never reports it itself.
	ResetRestart ResetReason = "restart"
	// ResetRIS: ESC c (full reset) was seen; both screens are blank.
	ResetRIS ResetReason = "ris"
	// ResetEraseScrollback: CSI 3 J was seen; the live grid is untouched.
	ResetEraseScrollback ResetReason = "erase_scrollback"
	// ResetResize: Resize changed the column count (rows are not reflowed).
	ResetResize ResetReason = "resize"
)

// Callbacks receive what a Screen produces. Every callback runs synchronously
// on the goroutine calling Write or Resize, with the Screen's lock held: a
// callback must not call methods of the same Screen (it would deadlock), and
// should not block for long. Nil callbacks are skipped.
type Callbacks struct {
	// Stable receives rows that scrolled off the top of the main screen,
	// oldest first, as plain text with trailing blanks trimmed (blank rows
	// are "" and are still rows). Rows are delivered once per Write (per
	// MaxWriteHold piece of a larger Write) or Resize call, and before any Reset that follows them in the stream. The
	// slice is reused after the call returns; the strings may be kept (a
	// short row's string shares an 8 KiB array with its neighbours).
	Stable func(rows []string)
	// Reply receives bytes to write back to the PTY: answers to cursor
	// position (CSI 6n), status (CSI 5n), device attributes (CSI c,
	// CSI > c), mode (DECRQM), window size (CSI 18 t) and default colour
	// (OSC 10/11) queries. b is only valid during the call. Stable rows that
	// precede the query in the stream are delivered before it.
	Reply func(b []byte)
	// Reset reports the end of a screen epoch, in stream order relative to
	// Stable: ESC c, CSI 3 J, or a column-changing Resize.
	Reset func(reason ResetReason)
}

// emulator is the terminal emulator a Screen drives. It exists so the engine
// can be swapped (tests run the vt10x adapter behind it); the production
// implementation is term. Implementations report scrolled-off rows, replies
// and resets through the events they were built with.
type emulator interface {
	write(p []byte)
	resize(rows, cols int)
	size() (rows, cols int)
	cursor() (row, col int)
	altScreen() bool
	appendRow(dst []byte, y int) []byte
}

// Screen turns one process generation's PTY output into stable rows and a
// live grid. It is safe for concurrent use: every method takes an internal
// mutex (see Callbacks for what that means for callbacks).
type Screen struct {
	mu      sync.Mutex
	emu     emulator
	cb      Callbacks
	pending []string // stable rows not yet delivered
	rp      *reprint // drops a TUI's reprint of history after a reset or resize
	epoch   int
	emitted int64
	row     []byte
	strs    []byte // backing of the stable rows' strings, see rowString
}

// rowStringsChunk is the size of the arrays stable rows' strings are carved
// from: one allocation per ~100 rows instead of one per row.
const rowStringsChunk = 8 << 10

// rowString returns text as a string carved from s.strs. Bytes once handed
// out are never written again (a full array is replaced, not reused), so
// the strings are immutable like any other; one that is kept keeps its
// array (at most rowStringsChunk bytes) alive.
func (s *Screen) rowString(text []byte) string {
	if len(text) == 0 {
		return ""
	}
	if len(text) > rowStringsChunk/4 {
		return string(text)
	}
	if cap(s.strs)-len(s.strs) < len(text) {
		s.strs = make([]byte, 0, rowStringsChunk)
	}
	start := len(s.strs)
	s.strs = append(s.strs, text...)
	return unsafe.String(&s.strs[start], len(text))
}

// New returns a Screen of rows×cols (each at least 1).
func New(rows, cols int, cb Callbacks) *Screen {
	s := &Screen{cb: cb, rp: newReprint()}
	s.emu = newTerm(rows, cols, (*screenEvents)(s))
	return s
}

// screenEvents adapts the emulator's events to the Screen's callbacks.
type screenEvents Screen

func (e *screenEvents) scrolledOff(text []byte) {
	s := (*Screen)(e)
	n := len(s.pending)
	s.pending = s.rp.row(s.rowString(text), s.pending)
	s.emitted += int64(len(s.pending) - n)
}

// repaintTop arms the reprint filter when an inline TUI moves the cursor
// up a whole screen to the top row. Claude Code does so when its frame
// has grown taller than the screen (a slow reply on a starved CPU): it
// repaints the frame from the top row, the frame's first rows are rows
// that had already scrolled off, and they would scroll off a second time
// (a terminal keeps them twice; tmux does). Rows that scroll off next
// repeating the end of the history are therefore dropped as after a
// resize. A watch already running is left alone (arm drops held rows).
func (e *screenEvents) repaintTop() {
	s := (*Screen)(e)
	if !s.rp.armed {
		s.rp.arm()
	}
}

func (e *screenEvents) reply(b []byte) {
	s := (*Screen)(e)
	if s.cb.Reply != nil {
		s.flush() // keep all callbacks in stream order
		s.cb.Reply(b)
	}
}

func (e *screenEvents) reset(reason ResetReason) {
	s := (*Screen)(e)
	s.flush() // rows that scrolled off before the reset belong to the old epoch
	s.rp.arm()
	s.epoch++
	if s.cb.Reset != nil {
		s.cb.Reset(reason)
	}
}

func (s *Screen) flush() {
	if len(s.pending) == 0 {
		return
	}
	if s.cb.Stable != nil {
		s.cb.Stable(s.pending)
	}
	clear(s.pending) // let the strings go once the callback has them
	s.pending = s.pending[:0]
}

// Write feeds PTY output to the emulator. It never fails: malformed escape
// sequences are dropped and invalid UTF-8 becomes U+FFFD. Sequences and
// characters split across calls are handled as if the stream were whole.
//
// A large p is parsed in pieces of at most MaxWriteHold bytes, taking the
// Screen's lock (and delivering stable rows) once per piece, so readers of
// the live grid never wait behind more than one piece.
func (s *Screen) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += MaxWriteHold {
		s.writePiece(p[off:min(len(p), off+MaxWriteHold)])
	}
	return len(p), nil
}

// MaxWriteHold bounds the bytes one Write parses under the Screen's lock.
const MaxWriteHold = 64 << 10

func (s *Screen) writePiece(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emu.write(p)
	s.flush()
}

// Resize changes the grid size. It returns true, after calling Reset with
// ResetResize, when the column count changed: rows are not reflowed, so the
// TUI's redraw for the new width starts a new epoch. Shrinking the row count
// below the cursor slides the main screen up and emits the rows that leave
// its top as stable rows (before the Reset).
func (s *Screen) Resize(rows, cols int) (reset bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, cols = max(rows, 1), max(cols, 1)
	oldRows, oldCols := s.emu.size()
	s.emu.resize(rows, cols)
	s.flush()
	if cols == oldCols {
		if rows != oldRows {
			s.rp.arm() // the TUI repaints for the new size
		}
		return false
	}
	(*screenEvents)(s).reset(ResetResize)
	return true
}

// LiveRepeated is how many rows at the top of Live() repeat the end of the
// history: after a resize or a reset an inline TUI may repaint rows that
// are already stable rows at the top of the screen (Claude Code reprints
// the tail of its output that fits). They are dropped from the history when
// they scroll off (see reprint.go); a reader joining history and grid can
// skip them meanwhile. It is 0 on the alternate screen and whenever no
// reprint is being watched.
func (s *Screen) LiveRepeated() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emu.altScreen() || !s.rp.armed {
		return 0
	}
	rows, _ := s.emu.size()
	live := make([]string, rows)
	for y := range live {
		s.row = s.emu.appendRow(s.row[:0], y)
		live[y] = string(s.row)
	}
	return s.rp.overlap(live)
}

// Live renders the visible grid (the alternate screen when it is active):
// exactly rows entries, one per screen row top to bottom, each trimmed of
// trailing blanks. Trailing empty rows are kept so index i is screen row i
// and matches Cursor; callers that cap or trim do so themselves.
func (s *Screen) Live() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, _ := s.emu.size()
	out := make([]string, rows)
	for y := range out {
		s.row = s.emu.appendRow(s.row[:0], y)
		out[y] = string(s.row)
	}
	return out
}

// Size returns the grid size.
func (s *Screen) Size() (rows, cols int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.size()
}

// Cursor returns the 0-based cursor position, always inside the grid.
func (s *Screen) Cursor() (row, col int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.cursor()
}

// AltScreen reports whether the alternate screen is active.
func (s *Screen) AltScreen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.altScreen()
}

// Epoch counts the resets this Screen has reported (0 until the first one).
func (s *Screen) Epoch() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Emitted counts the stable rows this Screen has produced; with a per-session
// base it gives the absolute id of the next stable row.
func (s *Screen) Emitted() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitted
}

// term's emulator methods.

func (t *term) size() (rows, cols int) { return t.rows, t.cols }
func (t *term) cursor() (row, col int) { return t.y, t.x }
func (t *term) altScreen() bool        { return t.inAlt }
func (t *term) appendRow(dst []byte, y int) []byte {
	return t.cur.lines[y].appendText(dst)
}
