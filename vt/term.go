package vt

import (
	"slices"
	"unicode/utf8"
)

// Cell encoding. A row is a []rune with one entry per column:
//
//	>= 0       the character in that cell (blank cells hold ' ')
//	wideTail   the right half of the wide character in the cell to its left
//	<= extBase an index into line.ext: a base character with combining marks
//
// Keeping cells as bare runes makes the common case (printable ASCII) a plain
// store per byte and lets shifts (ICH/DCH/scrolling) move cells without any
// side table bookkeeping; combining marks are rare enough to live out of line.
const (
	wideTail rune = -1
	extBase  rune = -2

	maxExt      = 64 // cap on grapheme clusters per row (fuzz: endless marks)
	maxExtBytes = 64 // cap on one cluster's bytes
)

// blanks is a run of blank cells to clear rows from.
var blanks = func() (b [256]rune) {
	for i := range b {
		b[i] = ' '
	}
	return b
}()

type line struct {
	cells []rune
	ext   []string // clusters referenced by cells <= extBase
}

func newLine(cols int) *line {
	l := &line{cells: make([]rune, cols)}
	l.blank(0, cols)
	return l
}

// blank clears cells [x0, x1).
func (l *line) blank(x0, x1 int) {
	c := l.cells[x0:x1]
	for len(c) > 0 {
		c = c[copy(c, blanks[:]):] // a copy, not a store per cell
	}
	if x0 == 0 && x1 == len(l.cells) {
		l.ext = l.ext[:0]
	}
}

// appendText renders the row as a person reads it: each character once (the
// tail of a wide character adds nothing), combining marks after their base,
// trailing blanks trimmed.
func (l *line) appendText(dst []byte) []byte {
	end := len(l.cells)
	for end > 0 && l.cells[end-1] == ' ' {
		end--
	}
	// Printable ASCII, the common case, is one store per cell into room
	// grown once.
	cells := l.cells[:end]
	n := len(dst)
	dst = slices.Grow(dst, len(cells))[:n+len(cells)]
	out := dst[n:]
	for i, r := range cells {
		if uint32(r) >= utf8.RuneSelf { // negative cells too
			return l.appendRest(dst[:n+i], cells[i:])
		}
		out[i] = byte(r)
	}
	return dst
}

// appendRest is appendText from the first cell that is not ASCII.
func (l *line) appendRest(dst []byte, cells []rune) []byte {
	for _, r := range cells {
		switch {
		case r >= 0 && r < utf8.RuneSelf:
			dst = append(dst, byte(r))
		case r >= 0:
			dst = utf8.AppendRune(dst, r)
		case r == wideTail:
		default:
			dst = append(dst, l.ext[extBase-r]...)
		}
	}
	return dst
}

// buffer is one of the two screens (main, alternate).
type buffer struct {
	lines []*line
	saved savedCursor
}

type savedCursor struct {
	x, y     int
	origin   bool
	gfx      [2]bool
	shiftOut bool
}

// events is how the emulator reports what the Screen turns into callbacks.
// The emulator never calls user code directly.
type events interface {
	scrolledOff(text []byte) // a main-screen row left the top; text is trimmed and only valid during the call
	reply(b []byte)
	reset(reason ResetReason)
	repaintTop() // CUU moved the cursor a whole screen up to the top row
}

// term is dlgt's own VT emulator: a byte-level DEC/xterm parser over a grid of
// rune cells that tracks only what affects text (no colours or attributes).
// See NOTES.md for why it replaced vt10x on the ingest path.
type term struct {
	ev         events
	rows, cols int
	main, alt  buffer
	cur        *buffer // main or alt
	inAlt      bool

	x, y     int
	wrapNext bool // the last column was written; the next printable wraps first
	top, bot int  // scroll region, inclusive

	origin, autowrap, insert, newlineMode bool
	gfx                                   [2]bool // G0/G1 designated as DEC special graphics
	shiftOut                              bool    // SO: GL is G1
	tabs                                  []bool
	lastChar                              rune // for REP

	// noFast disables the ASCII run fast path so tests can diff it against
	// the per-rune path.
	noFast bool

	p      parser
	render []byte // scratch for rendering scrolled-off rows
}

func newTerm(rows, cols int, ev events) *term {
	rows, cols = max(rows, 1), max(cols, 1)
	t := &term{ev: ev, rows: rows, cols: cols}
	t.main.lines = make([]*line, rows)
	t.alt.lines = make([]*line, rows)
	for i := range rows {
		t.main.lines[i] = newLine(cols)
		t.alt.lines[i] = newLine(cols)
	}
	t.resetState()
	return t
}

// resetState puts modes, cursor, margins and tabs in their power-on state.
func (t *term) resetState() {
	t.cur, t.inAlt = &t.main, false
	t.x, t.y, t.wrapNext = 0, 0, false
	t.top, t.bot = 0, t.rows-1
	t.origin, t.autowrap, t.insert, t.newlineMode = false, true, false, false
	t.gfx, t.shiftOut = [2]bool{}, false
	t.main.saved, t.alt.saved = savedCursor{}, savedCursor{}
	t.lastChar = 0
	t.resetTabs(0)
}

func (t *term) resetTabs(from int) {
	if len(t.tabs) != t.cols {
		tabs := make([]bool, t.cols)
		copy(tabs, t.tabs)
		t.tabs = tabs
	}
	for i := from; i < t.cols; i++ {
		t.tabs[i] = i > 0 && i%8 == 0
	}
}

func (t *term) line() *line { return t.cur.lines[t.y] }

// ---- printing ----

// printASCII writes a run of printable ASCII (0x20–0x7E) with autowrap on,
// insert mode off and no graphics charset: whole row segments are copied per
// iteration instead of going through print() per character.
func (t *term) printASCII(run []byte) {
	for len(run) > 0 {
		if t.wrapNext {
			t.wrap()
		}
		l := t.line()
		n := min(len(run), t.cols-t.x)
		t.breakPairs(l, t.x, t.x+n)
		c := l.cells[t.x : t.x+n]
		for i, b := range run[:n] {
			c[i] = rune(b)
		}
		t.lastChar = rune(run[n-1])
		run = run[n:]
		if t.x+n < t.cols {
			t.x += n
		} else {
			t.x, t.wrapNext = t.cols-1, true
		}
	}
}

// wrap performs the deferred autowrap: CR + LF, scrolling if at the margin.
func (t *term) wrap() {
	t.wrapNext = false
	t.x = 0
	t.index()
}

// print writes one character of width w (0, 1 or 2) at the cursor.
func (t *term) print(r rune, w int) {
	if w == 0 {
		t.combine(r)
		return
	}
	if t.gfx[t.glIndex()] && r >= 0x5f && r <= 0x7e {
		r = decGraphics[r-0x5f]
	}
	if t.wrapNext {
		if t.autowrap {
			t.wrap()
		} else {
			t.wrapNext = false
		}
	}
	if w == 2 && t.x == t.cols-1 && t.cols > 1 {
		// A wide character never straddles the margin: wrap early (the last
		// cell stays blank) or, without autowrap, back up one cell.
		if t.autowrap {
			t.wrap()
		} else {
			t.x--
		}
	}
	if w == 2 && t.cols == 1 {
		return // a wide character cannot be shown on a one-column screen
	}
	l := t.line()
	if t.insert {
		t.shiftRight(l, t.x, w)
	}
	t.breakPairs(l, t.x, t.x+w)
	l.cells[t.x] = r
	if w == 2 {
		l.cells[t.x+1] = wideTail
	}
	t.lastChar = r
	if t.x+w < t.cols {
		t.x += w
	} else {
		t.x, t.wrapNext = t.cols-1, true
	}
}

func (t *term) glIndex() int {
	if t.shiftOut {
		return 1
	}
	return 0
}

// combine attaches a zero-width character to the cell before the cursor (the
// cursor cell itself when a wrap is pending, since that is the last written).
func (t *term) combine(r rune) {
	x := t.x - 1
	if t.wrapNext {
		x = t.x
	}
	if x < 0 {
		return // nothing to attach to at the start of a row
	}
	l := t.line()
	if l.cells[x] == wideTail && x > 0 {
		x--
	}
	switch c := l.cells[x]; {
	case c >= 0:
		if len(l.ext) >= maxExt {
			return
		}
		l.ext = append(l.ext, string(utf8.AppendRune(utf8.AppendRune(nil, c), r)))
		l.cells[x] = extBase - rune(len(l.ext)-1)
	case c <= extBase:
		if s := l.ext[extBase-c]; len(s)+utf8.RuneLen(r) <= maxExtBytes {
			l.ext[extBase-c] = string(utf8.AppendRune([]byte(s), r))
		}
	}
}

// breakPairs is called before cells [x0, x1) are overwritten or erased: a
// wide character only partly inside the range loses its other half too, as in
// xterm, so a row never renders half a character.
func (t *term) breakPairs(l *line, x0, x1 int) {
	if x0 > 0 && x0 < len(l.cells) && l.cells[x0] == wideTail {
		l.cells[x0-1] = ' '
	}
	if x1 < len(l.cells) && l.cells[x1] == wideTail {
		l.cells[x1] = ' '
	}
}

// ---- cursor motion and scrolling ----

// index is LF/IND: move down, scrolling the region if at its bottom margin.
func (t *term) index() {
	switch {
	case t.y == t.bot:
		t.scrollUp(t.top, 1, true)
	case t.y < t.rows-1:
		t.y++
	}
}

func (t *term) reverseIndex() {
	switch {
	case t.y == t.top:
		t.scrollDown(t.top, 1)
	case t.y > 0:
		t.y--
	}
}

// scrollUp moves rows [from, bot] up by n, blanking n rows at the bottom.
// Rows leaving the top of the main screen become stable rows when the scroll
// region starts at the top row, as xterm puts them in its scrollback: Codex's
// inline viewport relies on this (it scrolls history into a region 1..k above
// its fixed composer). Regions with a lower top margin, the alternate screen
// and line deletion (DL; history false) never produce stable rows.
func (t *term) scrollUp(from, n int, history bool) {
	n = min(n, t.bot-from+1)
	if n <= 0 {
		return
	}
	lines := t.cur.lines
	emit := history && !t.inAlt && from == 0
	for i := 0; i < n; i++ {
		l := lines[from]
		if emit {
			t.render = l.appendText(t.render[:0])
			t.ev.scrolledOff(t.render)
		}
		copy(lines[from:t.bot], lines[from+1:t.bot+1])
		l.blank(0, t.cols)
		lines[t.bot] = l
	}
}

// scrollDown moves rows [from, bot] down by n, blanking n rows at from.
func (t *term) scrollDown(from, n int) {
	n = min(n, t.bot-from+1)
	lines := t.cur.lines
	for i := 0; i < n; i++ {
		l := lines[t.bot]
		copy(lines[from+1:t.bot+1], lines[from:t.bot])
		l.blank(0, t.cols)
		lines[from] = l
	}
}

// moveTo sets the cursor, clamping to the screen (or the region in origin
// mode); every explicit motion cancels a pending wrap.
func (t *term) moveTo(x, y int) {
	miny, maxy := 0, t.rows-1
	if t.origin {
		miny, maxy = t.top, t.bot
	}
	t.x = clamp(x, 0, t.cols-1)
	t.y = clamp(y, miny, maxy)
	t.wrapNext = false
}

// moveAbs is moveTo with y relative to the top margin in origin mode (CUP, VPA).
func (t *term) moveAbs(x, y int) {
	if t.origin {
		y += t.top
	}
	t.moveTo(x, y)
}

// cursorUp and cursorDown are CUU/CUD: they stop at the scroll margin when
// the cursor starts inside the region, at the screen edge otherwise.
func (t *term) cursorUp(n int) {
	lim := 0
	if t.y >= t.top {
		lim = t.top
	}
	t.y, t.wrapNext = max(t.y-n, lim), false
}

func (t *term) cursorDown(n int) {
	lim := t.rows - 1
	if t.y <= t.bot {
		lim = t.bot
	}
	t.y, t.wrapNext = min(t.y+n, lim), false
}

func (t *term) tab(n int) {
	x := t.x
	for ; n > 0 && x < t.cols-1; n-- {
		for x++; x < t.cols-1 && !t.tabs[x]; x++ {
		}
	}
	t.x, t.wrapNext = x, false
}

func (t *term) backTab(n int) {
	x := t.x
	for ; n > 0 && x > 0; n-- {
		for x--; x > 0 && !t.tabs[x]; x-- {
		}
	}
	t.x, t.wrapNext = x, false
}

// ---- erasing and editing ----

// erase blanks cells [x0, x1) of row y.
func (t *term) erase(y, x0, x1 int) {
	x0, x1 = clamp(x0, 0, t.cols), clamp(x1, 0, t.cols)
	if x0 >= x1 {
		return
	}
	l := t.cur.lines[y]
	t.breakPairs(l, x0, x1)
	l.blank(x0, x1)
}

func (t *term) eraseRows(y0, y1 int) {
	for y := y0; y < y1; y++ {
		t.cur.lines[y].blank(0, t.cols)
	}
}

// eraseDisplay is ED 0/1/2. None of them produce stable rows: a cleared
// screen is not history (Ink clears and redraws its whole frame with ED 2;
// pushing each frame into history would duplicate it). ED 3 is handled by
// the caller because it resets the epoch.
func (t *term) eraseDisplay(mode int) {
	switch mode {
	case 0:
		t.erase(t.y, t.x, t.cols)
		t.eraseRows(t.y+1, t.rows)
	case 1:
		t.eraseRows(0, t.y)
		t.erase(t.y, 0, t.x+1)
	case 2:
		t.eraseRows(0, t.rows)
	}
}

func (t *term) eraseLine(mode int) {
	switch mode {
	case 0:
		t.erase(t.y, t.x, t.cols)
	case 1:
		t.erase(t.y, 0, t.x+1)
	case 2:
		t.erase(t.y, 0, t.cols)
	}
}

// shiftRight inserts n blank cells at x (ICH, insert mode).
func (t *term) shiftRight(l *line, x, n int) {
	n = min(n, t.cols-x)
	t.breakPairs(l, x, x)
	copy(l.cells[x+n:], l.cells[x:t.cols-n])
	l.blank(x, x+n)
	dropCutWide(l)
}

// dropCutWide blanks a wide character whose tail fell off the right margin
// (after a shift or a narrowing resize): half a character is never shown.
func dropCutWide(l *line) {
	x := len(l.cells) - 1
	if x >= 0 && l.cells[x] != wideTail && l.cells[x] != ' ' && cellWidth(l, x) == 2 {
		l.cells[x] = ' '
	}
}

func cellWidth(l *line, x int) int {
	r := l.cells[x]
	if r <= extBase {
		r, _ = utf8.DecodeRuneInString(l.ext[extBase-r])
	}
	if r < 0 {
		return 0
	}
	return runeWidth(r)
}

// deleteChars removes n cells at the cursor, shifting the rest left (DCH).
func (t *term) deleteChars(n int) {
	l := t.line()
	n = min(n, t.cols-t.x)
	t.breakPairs(l, t.x, t.x+n)
	copy(l.cells[t.x:], l.cells[t.x+n:])
	l.blank(t.cols-n, t.cols)
	// Like st (and vt10x), a pending wrap survives DCH/ICH/ECH.
}

func (t *term) insertLines(n int) {
	if t.y < t.top || t.y > t.bot {
		return
	}
	t.scrollDown(t.y, n)
	t.x, t.wrapNext = 0, false
}

func (t *term) deleteLines(n int) {
	if t.y < t.top || t.y > t.bot {
		return
	}
	// DL discards rows, even at the top: that is editing, not history.
	t.scrollUp(t.y, n, false)
	t.x, t.wrapNext = 0, false
}

// ---- modes, screens, cursor save ----

func (t *term) saveCursor() {
	t.cur.saved = savedCursor{x: t.x, y: t.y, origin: t.origin, gfx: t.gfx, shiftOut: t.shiftOut}
}

func (t *term) restoreCursor() {
	s := t.cur.saved
	t.origin, t.gfx, t.shiftOut = s.origin, s.gfx, s.shiftOut
	t.x, t.y, t.wrapNext = clamp(s.x, 0, t.cols-1), clamp(s.y, 0, t.rows-1), false
}

// setAlt switches between the main and alternate screens. The cursor is
// shared, as in xterm; callers handle 1049's save/clear.
func (t *term) setAlt(on bool) {
	if on == t.inAlt {
		return
	}
	t.inAlt = on
	if on {
		t.cur = &t.alt
	} else {
		t.cur = &t.main
	}
}

func (t *term) setScrollRegion(top, bot int) {
	top, bot = clamp(top, 0, t.rows-1), clamp(bot, 0, t.rows-1)
	if top >= bot {
		return // xterm ignores a region of fewer than two rows
	}
	t.top, t.bot = top, bot
	t.moveAbs(0, 0)
}

// resize changes the grid without reflow. Rows cut off the bottom by a shrink
// are dropped unless the cursor is among them, in which case the screen slides
// up so the cursor row stays visible, and rows sliding off the main screen's
// top become stable rows (tmux and xterm push them into history too).
func (t *term) resize(rows, cols int) {
	rows, cols = max(rows, 1), max(cols, 1)
	if rows == t.rows && cols == t.cols {
		return
	}
	for _, b := range []*buffer{&t.main, &t.alt} {
		cy := b.saved.y
		if b == t.cur {
			cy = t.y
		}
		if slide := cy - rows + 1; slide > 0 {
			if b == &t.main {
				for _, l := range b.lines[:slide] {
					t.render = l.appendText(t.render[:0])
					t.ev.scrolledOff(t.render)
				}
			}
			b.lines = b.lines[slide:]
			b.saved.y -= slide
			if b == t.cur {
				t.y -= slide
			}
		}
		if len(b.lines) > rows {
			b.lines = b.lines[:rows]
		}
		for _, l := range b.lines {
			l.resize(cols)
		}
		for len(b.lines) < rows {
			b.lines = append(b.lines, newLine(cols))
		}
		b.saved.x = clamp(b.saved.x, 0, cols-1)
		b.saved.y = clamp(b.saved.y, 0, rows-1)
	}
	oldCols := t.cols
	t.rows, t.cols = rows, cols
	t.top, t.bot = 0, rows-1
	t.x, t.y = clamp(t.x, 0, cols-1), clamp(t.y, 0, rows-1)
	t.wrapNext = false
	if cols > oldCols {
		t.resetTabs(oldCols)
	} else {
		t.tabs = t.tabs[:cols]
	}
}

func (l *line) resize(cols int) {
	old := len(l.cells)
	if cols <= old {
		l.cells = l.cells[:cols]
		dropCutWide(l)
		return
	}
	if cols <= cap(l.cells) {
		l.cells = l.cells[:cols]
	} else {
		c := make([]rune, cols)
		copy(c, l.cells)
		l.cells = c
	}
	l.blank(old, cols)
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// decGraphics maps 0x5F–0x7E in the DEC special graphics set (ESC ( 0), used
// by ncurses-style box drawing.
var decGraphics = [32]rune{
	' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼',
	'⎺', '⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
}
