package vt

import (
	"strconv"
	"unicode/utf8"
)

// Parser states, after the DEC/xterm model (vt100.net/emu/dec_ansi_parser),
// reduced to what a text-only emulator needs. All state lives in the struct so
// a sequence split across Write calls parses exactly as if it were whole.
const (
	stGround   = iota
	stEsc      // after ESC
	stEscInter // ESC + intermediate(s), waiting for the final byte
	stCSI      // after CSI, collecting parameters
	stCSIIgnore
	stOSC    // collecting an OSC string
	stOSCEsc // ESC seen inside an OSC (ST or abort)
	stString // DCS/SOS/PM/APC: skipped until ST
	stStringEsc
)

const (
	maxParams = 16
	maxOSC    = 64 // enough for the colour queries we answer; titles are dropped
)

type parser struct {
	state   uint8
	params  [maxParams]int
	nparams int  // parameters seen so far (a trailing empty one counts)
	priv    byte // private marker: '?', '>', '<', '=' or 0
	inter   byte // last intermediate byte (0x20–0x2F) or 0
	osc     []byte
	oscLong bool // OSC overflowed maxOSC: ignore it

	utf8    [utf8.UTFMax]byte // an incomplete UTF-8 sequence carried over
	nutf8   int
	scratch []byte // reply formatting
}

// write feeds p through the parser. It is the emulator's only input path.
func (t *term) write(p []byte) {
	if t.p.nutf8 > 0 {
		p = t.finishRune(p)
	}
	for i := 0; i < len(p); {
		b := p[i]
		if t.p.state == stGround {
			if b >= 0x20 && b < 0x7f {
				if !t.noFast && t.autowrap && !t.insert && !t.gfx[t.glIndex()] {
					j := i + 1
					for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
						j++
					}
					t.printASCII(p[i:j])
					i = j
					continue
				}
				t.print(rune(b), 1)
				i++
				continue
			}
			if b >= utf8.RuneSelf {
				if !utf8.FullRune(p[i:]) {
					// Keep the incomplete tail for the next Write.
					t.p.nutf8 = copy(t.p.utf8[:], p[i:])
					return
				}
				r, n := utf8.DecodeRune(p[i:])
				t.printRune(r)
				i += n
				continue
			}
		}
		t.step(b)
		i++
	}
}

// finishRune completes a UTF-8 sequence started in an earlier Write, using
// bytes from the front of p, and returns the rest of p. The outcome is the
// same as decoding the bytes in one piece, which the split-anywhere test
// checks: the carried bytes are a lead byte plus valid continuation bytes, so
// if the sequence turns out invalid each of them decodes to its own U+FFFD,
// exactly as utf8.DecodeRune would have done on the whole stream.
func (t *term) finishRune(p []byte) []byte {
	var tmp [2 * utf8.UTFMax]byte
	pending := t.p.nutf8
	n := copy(tmp[:], t.p.utf8[:pending])
	n += copy(tmp[n:], p[:min(len(p), utf8.UTFMax)])
	if !utf8.FullRune(tmp[:n]) {
		// Still incomplete (so n < 4 and all of p was used): keep waiting.
		t.p.nutf8 = copy(t.p.utf8[:], tmp[:n])
		return nil
	}
	t.p.nutf8 = 0
	r, size := utf8.DecodeRune(tmp[:n])
	if size > pending {
		t.printRune(r)
		return p[size-pending:]
	}
	for range pending {
		t.printRune(utf8.RuneError)
	}
	return p
}

// printRune prints a decoded non-ASCII rune (U+FFFD for invalid input).
func (t *term) printRune(r rune) {
	if r >= 0x80 && r < 0xA0 {
		return // C1 controls encoded as UTF-8: xterm ignores them in UTF-8 mode
	}
	t.print(r, runeWidth(r))
}

// step advances the state machine by one byte outside the ground-state fast
// paths (controls, escape sequences, strings).
func (t *term) step(b byte) {
	p := &t.p
	// C0 controls act in every state except inside strings, where only
	// CAN/SUB/ESC (and BEL for OSC) matter.
	if b < 0x20 && p.state != stOSC && p.state != stString && p.state != stOSCEsc && p.state != stStringEsc {
		switch b {
		case 0x1b:
			p.state = stEsc
			p.inter = 0
		case 0x18, 0x1a: // CAN, SUB abort a sequence
			p.state = stGround
		default:
			t.control(b)
		}
		return
	}
	switch p.state {
	case stGround:
		if b == 0x7f {
			return // DEL is ignored
		}
		// Bytes ≥0x80 are decoded by write(); only ASCII reaches here.
		t.print(rune(b), 1)
	case stEsc:
		switch {
		case b == '[':
			p.state = stCSI
			p.nparams, p.priv, p.inter = 0, 0, 0
			p.params = [maxParams]int{}
		case b == ']':
			p.state, p.osc, p.oscLong = stOSC, p.osc[:0], false
		case b == 'P' || b == 'X' || b == '^' || b == '_':
			p.state = stString
		case b >= 0x20 && b <= 0x2f:
			p.inter, p.state = b, stEscInter
		case b >= 0x30 && b <= 0x7e:
			p.state = stGround
			t.escDispatch(b)
		default:
			p.state = stGround // DEL or a non-ASCII byte cancels
		}
	case stEscInter:
		switch {
		case b >= 0x20 && b <= 0x2f:
			p.inter = b
		case b >= 0x30 && b <= 0x7e:
			p.state = stGround
			t.escDispatch(b)
		default:
			p.state = stGround
		}
	case stCSI:
		switch {
		case b >= '0' && b <= '9':
			if p.nparams == 0 {
				p.nparams = 1
			}
			if i := p.nparams - 1; i < maxParams && p.params[i] < 1<<16 {
				p.params[i] = p.params[i]*10 + int(b-'0')
			}
		case b == ';' || b == ':':
			// Sub-parameters (SGR 38:2:…) only occur in sequences we ignore,
			// so treating ':' as ';' loses nothing.
			if p.nparams == 0 {
				p.nparams = 1
			}
			p.nparams++
		case b >= 0x3c && b <= 0x3f:
			if p.nparams == 0 && p.priv == 0 && p.inter == 0 {
				p.priv = b
			} else {
				p.state = stCSIIgnore
			}
		case b >= 0x20 && b <= 0x2f:
			p.inter = b
		case b >= 0x40 && b <= 0x7e:
			p.state = stGround
			t.csiDispatch(b)
		default:
			p.state = stCSIIgnore
		}
	case stCSIIgnore:
		if b >= 0x40 && b <= 0x7e {
			p.state = stGround
		}
	case stOSC:
		switch b {
		case 0x07:
			p.state = stGround
			t.oscDispatch(false)
		case 0x1b:
			p.state = stOSCEsc
		case 0x18, 0x1a:
			p.state = stGround
		default:
			if len(p.osc) < maxOSC {
				p.osc = append(p.osc, b)
			} else {
				p.oscLong = true
			}
		}
	case stOSCEsc:
		p.state = stGround
		if b == '\\' {
			t.oscDispatch(true)
			return
		}
		// ESC not followed by '\' aborts the string and starts a new escape.
		p.state = stEsc
		t.step(b)
	case stString:
		switch b {
		case 0x1b:
			p.state = stStringEsc
		case 0x18, 0x1a:
			p.state = stGround
		}
	case stStringEsc:
		p.state = stGround
		if b != '\\' {
			p.state = stEsc
			t.step(b)
		}
	}
}

// control executes a C0 control character.
func (t *term) control(b byte) {
	switch b {
	case '\r':
		t.x, t.wrapNext = 0, false
	case '\n', '\v', '\f':
		if t.newlineMode {
			t.x = 0
		}
		t.wrapNext = false
		t.index()
	case '\b':
		t.x, t.wrapNext = max(t.x-1, 0), false
	case '\t':
		t.tab(1)
	case 0x0e: // SO
		t.shiftOut = true
	case 0x0f: // SI
		t.shiftOut = false
	}
	// BEL, NUL, ENQ, XON/XOFF and the rest: no effect on text.
}

func (t *term) escDispatch(b byte) {
	switch t.p.inter {
	case 0:
	case '(', ')':
		g := 0
		if t.p.inter == ')' {
			g = 1
		}
		t.gfx[g] = b == '0'
		return
	case '#':
		if b == '8' { // DECALN: fill the screen with 'E'
			for _, l := range t.cur.lines {
				for i := range l.cells {
					l.cells[i] = 'E'
				}
				l.ext = l.ext[:0]
			}
			t.top, t.bot = 0, t.rows-1
			t.moveTo(0, 0)
		}
		return
	default:
		return
	}
	switch b {
	case '7':
		t.saveCursor()
	case '8':
		t.restoreCursor()
	case 'D': // IND
		// As in st/vt10x, IND and RI keep a pending wrap when they scroll
		// instead of moving the cursor.
		if t.y != t.bot {
			t.wrapNext = false
		}
		t.index()
	case 'E': // NEL
		t.x, t.wrapNext = 0, false
		t.index()
	case 'M': // RI
		if t.y != t.top {
			t.wrapNext = false
		}
		t.reverseIndex()
	case 'H': // HTS
		t.tabs[t.x] = true
	case 'c': // RIS
		t.ris()
	}
	// '=', '>' (keypad modes), '\\' (a lone ST) and others: nothing to do.
}

// ris is a full reset: both screens blank, modes and cursor as at power-on,
// and a new epoch (rows on screen are not emitted as history).
func (t *term) ris() {
	for _, b := range []*buffer{&t.main, &t.alt} {
		for _, l := range b.lines {
			l.blank(0, t.cols)
		}
	}
	t.resetState()
	t.ev.reset(ResetRIS)
}

// param returns parameter i, or def when it is absent or zero (ECMA-48: a
// zero parameter means the default for counts and positions).
func (t *term) param(i, def int) int {
	if i >= t.p.nparams || i >= maxParams || t.p.params[i] == 0 {
		return def
	}
	return t.p.params[i]
}

// rawParam returns parameter i (0 when absent) for selectors such as ED's.
func (t *term) rawParam(i int) int {
	if i >= t.p.nparams || i >= maxParams {
		return 0
	}
	return t.p.params[i]
}

func (t *term) csiDispatch(final byte) {
	p := &t.p
	if p.inter != 0 {
		switch {
		case p.inter == '$' && final == 'p': // DECRQM
			t.replyDECRQM()
		case p.inter == '!' && final == 'p': // DECSTR soft reset
			t.origin, t.autowrap, t.insert = false, true, false
			t.top, t.bot = 0, t.rows-1
			t.gfx, t.shiftOut = [2]bool{}, false
			t.cur.saved = savedCursor{}
		}
		return // DECSCUSR (SP q) and friends: cursor style, not text
	}
	switch p.priv {
	case 0:
	case '?':
		switch final {
		case 'h':
			t.setPrivateModes(true)
		case 'l':
			t.setPrivateModes(false)
		case 'J': // DECSED, selective erase: we track no protection
			if t.rawParam(0) <= 2 {
				t.eraseDisplay(t.rawParam(0))
			}
		case 'K':
			t.eraseLine(t.rawParam(0))
		case 'n':
			if t.rawParam(0) == 6 { // DECXCPR
				t.replyf("\x1b[?%d;%dR", t.cprRow(), t.x+1)
			}
		}
		return
	case '>':
		if final == 'c' && t.rawParam(0) == 0 { // DA2
			t.ev.reply([]byte(da2Reply))
		}
		return
	default:
		return
	}
	switch final {
	case 'm':
		// SGR: colours and attributes do not change text. Handled first
		// because it is by far the most frequent sequence.
	case '@': // ICH
		t.shiftRight(t.line(), t.x, t.param(0, 1))
	case 'A': // CUU
		n := t.param(0, 1)
		t.cursorUp(n)
		if n >= t.rows-1 && t.y == 0 && !t.inAlt {
			// A whole screen up to the top row: an inline TUI repainting
			// a frame taller than the screen (see screenEvents.repaintTop).
			t.ev.repaintTop()
		}
	case 'B', 'e': // CUD, VPR
		t.cursorDown(t.param(0, 1))
	case 'C', 'a': // CUF, HPR
		t.moveTo(t.x+t.param(0, 1), t.y)
	case 'D': // CUB
		t.moveTo(t.x-t.param(0, 1), t.y)
	case 'E': // CNL
		t.cursorDown(t.param(0, 1))
		t.x = 0
	case 'F': // CPL
		t.cursorUp(t.param(0, 1))
		t.x = 0
	case 'G', '`': // CHA, HPA
		t.moveTo(t.param(0, 1)-1, t.y)
	case 'H', 'f': // CUP, HVP
		t.moveAbs(t.param(1, 1)-1, t.param(0, 1)-1)
	case 'd': // VPA
		t.moveAbs(t.x, t.param(0, 1)-1)
	case 'I': // CHT
		t.tab(t.param(0, 1))
	case 'Z': // CBT
		t.backTab(t.param(0, 1))
	case 'J': // ED
		switch m := t.rawParam(0); m {
		case 0, 1, 2:
			t.eraseDisplay(m)
		case 3:
			// Erase scrollback: the grid is untouched, the history is gone,
			// so consumers must start a new epoch.
			t.ev.reset(ResetEraseScrollback)
		}
	case 'K': // EL
		t.eraseLine(t.rawParam(0))
	case 'L': // IL
		t.insertLines(t.param(0, 1))
	case 'M': // DL
		t.deleteLines(t.param(0, 1))
	case 'P': // DCH
		t.deleteChars(t.param(0, 1))
	case 'X': // ECH
		t.erase(t.y, t.x, t.x+t.param(0, 1))
	case 'S': // SU
		t.scrollUp(t.top, t.param(0, 1), true)
	case 'T': // SD (the 5-parameter form is mouse tracking; ignore it)
		if t.p.nparams <= 1 {
			t.scrollDown(t.top, t.param(0, 1))
		}
	case 'b': // REP
		if t.lastChar > 0 {
			r := t.lastChar
			w := runeWidth(r)
			for n := min(t.param(0, 1), t.rows*t.cols); n > 0; n-- {
				t.print(r, w)
			}
		}
	case 'g': // TBC
		switch t.rawParam(0) {
		case 0:
			t.tabs[t.x] = false
		case 3:
			clear(t.tabs)
		}
	case 'h', 'l': // SM, RM
		for i := 0; i < min(p.nparams, maxParams); i++ {
			switch p.params[i] {
			case 4:
				t.insert = final == 'h'
			case 20:
				t.newlineMode = final == 'h'
			}
		}
	case 'r': // DECSTBM
		t.setScrollRegion(t.param(0, 1)-1, t.param(1, t.rows)-1)
	case 's': // SCOSC
		t.saveCursor()
	case 'u': // SCORC
		t.restoreCursor()
	case 'n': // DSR
		switch t.rawParam(0) {
		case 5:
			t.ev.reply([]byte("\x1b[0n"))
		case 6: // CPR
			t.replyf("\x1b[%d;%dR", t.cprRow(), t.x+1)
		}
	case 'c': // DA1
		if t.rawParam(0) == 0 {
			t.ev.reply([]byte(da1Reply))
		}
	case 't': // XTWINOPS: only the text-area size report is answered
		if t.rawParam(0) == 18 {
			t.replyf("\x1b[8;%d;%dt", t.rows, t.cols)
		}
	}
}

// Replies identify a VT220-class terminal with ANSI colour, which is what
// tmux answers and what TUIs (crossterm, Ink, ncurses) are happy with.
const (
	da1Reply = "\x1b[?62;22c"
	da2Reply = "\x1b[>1;10;0c"
)

func (t *term) cprRow() int {
	if t.origin {
		return t.y - t.top + 1
	}
	return t.y + 1
}

func (t *term) replyf(format string, a, b int) {
	// A tiny formatter: fmt would allocate and this runs for every probe.
	s := t.p.scratch[:0]
	arg := a
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && i+1 < len(format) && format[i+1] == 'd' {
			s = strconv.AppendInt(s, int64(arg), 10)
			arg = b
			i++
			continue
		}
		s = append(s, format[i])
	}
	t.p.scratch = s
	t.ev.reply(s)
}

func (t *term) setPrivateModes(set bool) {
	p := &t.p
	for i := 0; i < min(p.nparams, maxParams); i++ {
		switch p.params[i] {
		case 6: // DECOM
			t.origin = set
			t.moveAbs(0, 0)
		case 7: // DECAWM
			t.autowrap = set
			if !set {
				t.wrapNext = false
			}
		case 47:
			t.setAlt(set)
		case 1047:
			if !set && t.inAlt {
				t.eraseRows(0, t.rows) // 1047 clears the alternate screen on exit
			}
			t.setAlt(set)
		case 1048:
			if set {
				t.saveCursor()
			} else {
				t.restoreCursor()
			}
		case 1049:
			if set && !t.inAlt {
				t.saveCursor()
				t.setAlt(true)
				t.eraseRows(0, t.rows)
			} else if !set && t.inAlt {
				t.setAlt(false)
				t.restoreCursor()
			}
		}
	}
}

// replyDECRQM answers a mode query (CSI ? Pd $ p or CSI Pd $ p) with
// 1 (set), 2 (reset) or 0 (not recognised), so probing TUIs get an answer.
func (t *term) replyDECRQM() {
	mode := t.rawParam(0)
	state := 0
	b := func(on bool) int {
		if on {
			return 1
		}
		return 2
	}
	if t.p.priv == '?' {
		switch mode {
		case 6:
			state = b(t.origin)
		case 7:
			state = b(t.autowrap)
		case 47, 1047, 1049:
			state = b(t.inAlt)
		}
		t.replyf("\x1b[?%d;%d$y", mode, state)
		return
	}
	switch mode {
	case 4:
		state = b(t.insert)
	case 20:
		state = b(t.newlineMode)
	}
	t.replyf("\x1b[%d;%d$y", mode, state)
}

// oscDispatch answers the default-colour queries (OSC 10/11 ;?) that Codex
// and other TUIs send to pick a palette; everything else (titles,
// hyperlinks, clipboard) has no effect on text.
func (t *term) oscDispatch(st bool) {
	p := &t.p
	if p.oscLong {
		return
	}
	var colour string
	switch string(p.osc) {
	case "10;?":
		colour = "10;rgb:ffff/ffff/ffff"
	case "11;?":
		colour = "11;rgb:0000/0000/0000"
	default:
		return
	}
	s := append(p.scratch[:0], "\x1b]"...)
	s = append(s, colour...)
	if st {
		s = append(s, "\x1b\\"...)
	} else {
		s = append(s, 0x07)
	}
	p.scratch = s
	t.ev.reply(s)
}
