package fakeclaude

import (
	"bytes"
)

// keyKind is one decoded input event.
type keyKind int

const (
	keyText      keyKind = iota // typed printable bytes (UTF-8), or "\n" from Ctrl-J
	keyPaste                    // a complete bracketed paste
	keyEnter                    // \r
	keyEsc                      // a lone Esc
	keyCtrlC                    // 0x03
	keyCtrlD                    // 0x04
	keyCtrlU                    // 0x15
	keyBackspace                // 0x7f or 0x08
)

type key struct {
	kind keyKind
	text []byte
}

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// maxPendingSeq bounds an unterminated escape sequence; longer garbage is
// dropped rather than buffered.
const maxPendingSeq = 32

// decoder turns raw terminal input into keys. Input arrives in arbitrary
// chunks, so both escape sequences and the paste end marker may be split
// across reads: whatever cannot be decided yet stays in buf. A lone ESC at
// the end of a chunk is ambiguous (Esc key, or the start of a sequence);
// the caller resolves it with flush() after a short quiet period.
type decoder struct {
	buf     []byte // undecided bytes
	pasting bool
	paste   []byte
}

// feed decodes p and returns the completed keys.
func (d *decoder) feed(p []byte) []key {
	d.buf = append(d.buf, p...)
	var keys []key
	i := 0
	for i < len(d.buf) {
		b := d.buf[i:]
		if d.pasting {
			end := bytes.Index(b, pasteEnd)
			if end < 0 {
				// Keep a tail that may be the start of a split end marker.
				keep := partialSuffix(b, pasteEnd)
				d.paste = append(d.paste, b[:len(b)-keep]...)
				i = len(d.buf) - keep
				break
			}
			d.paste = append(d.paste, b[:end]...)
			keys = append(keys, key{kind: keyPaste, text: normalizePaste(d.paste)})
			d.pasting, d.paste = false, nil
			i += end + len(pasteEnd)
			continue
		}
		c := b[0]
		switch {
		case c == 0x1b:
			n, k, complete := escapeSeq(b)
			if !complete {
				if len(b) > maxPendingSeq {
					i++ // garbage: drop the ESC and go on
					continue
				}
				d.buf = append(d.buf[:0:0], b...)
				return keys
			}
			if k != nil {
				keys = append(keys, *k)
			}
			if bytes.Equal(b[:n], pasteStart) {
				d.pasting = true
			}
			i += n
		case c == '\r':
			keys = append(keys, key{kind: keyEnter})
			i++
		case c == '\n':
			keys = append(keys, key{kind: keyText, text: []byte{'\n'}})
			i++
		case c == 0x03:
			keys = append(keys, key{kind: keyCtrlC})
			i++
		case c == 0x04:
			keys = append(keys, key{kind: keyCtrlD})
			i++
		case c == 0x15:
			keys = append(keys, key{kind: keyCtrlU})
			i++
		case c == 0x7f || c == 0x08:
			keys = append(keys, key{kind: keyBackspace})
			i++
		case c < 0x20:
			i++ // other control keys do nothing here
		default:
			j := 1
			for j < len(b) && b[j] >= 0x20 && b[j] != 0x7f {
				j++
			}
			keys = append(keys, key{kind: keyText, text: append([]byte(nil), b[:j]...)})
			i += j
		}
	}
	d.buf = append(d.buf[:0:0], d.buf[i:]...)
	return keys
}

// escapeSeq decodes the escape sequence at the start of b (b[0] == ESC).
// It reports its length, the key it stands for (nil for sequences the
// fake ignores, like arrows), and whether it is complete yet.
func escapeSeq(b []byte) (n int, k *key, complete bool) {
	if len(b) < 2 {
		return 0, nil, false
	}
	switch b[1] {
	case '[': // CSI: parameters then a final byte in 0x40..0x7e
		for j := 2; j < len(b); j++ {
			if b[j] >= 0x40 && b[j] <= 0x7e {
				return j + 1, nil, true
			}
		}
		return 0, nil, false
	case 'O': // SS3 (application cursor keys)
		if len(b) < 3 {
			return 0, nil, false
		}
		return 3, nil, true
	default:
		// ESC followed by anything else: the ESC was a key of its own.
		return 1, &key{kind: keyEsc}, true
	}
}

// flush resolves input left undecided after a quiet period: a lone ESC is
// the Esc key; an unfinished sequence is dropped. An unfinished paste is
// kept (a paste may legitimately pause between reads).
func (d *decoder) flush() []key {
	if d.pasting || len(d.buf) == 0 {
		return nil
	}
	lone := len(d.buf) == 1 && d.buf[0] == 0x1b
	d.buf = nil
	if lone {
		return []key{{kind: keyEsc}}
	}
	return nil
}

// pending reports whether an escape sequence waits for more input.
func (d *decoder) pending() bool { return !d.pasting && len(d.buf) > 0 }

// partialSuffix is the length of the longest proper suffix of b that is a
// prefix of marker.
func partialSuffix(b, marker []byte) int {
	for n := min(len(b), len(marker)-1); n > 0; n-- {
		if bytes.HasPrefix(marker, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}

// normalizePaste turns the CR and CRLF line ends terminals send inside a
// paste into \n, as Claude's input box does.
func normalizePaste(p []byte) []byte {
	if bytes.IndexByte(p, '\r') < 0 {
		return p
	}
	p = bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(p, []byte("\r"), []byte("\n"))
}
