package vt

import (
	"hash/maphash"
	"math/bits"
)

// maxReprintWords bounds the history a Screen remembers to recognise a TUI
// reprinting it: its words, as 4-byte hashes, at most 1.125 × this many
// (288 KiB). A reprint starting further back is stored again.
const maxReprintWords = 64 << 10

// maxReprintLead bounds the blank rows held before a reprint's first
// non-blank row.
const maxReprintLead = 256

// reprint recognises an inline TUI reprinting its history after a resize
// or a reset, so that the rows it repeats are not stored twice.
//
// Inline TUIs repaint on SIGWINCH: Codex (--no-alt-screen) erases the
// scrollback (CSI 3 J) and prints its whole transcript again, wrapped for
// the new width; Claude Code homes the cursor, erases the screen and prints
// the tail of its output that fits, which starts with rows already in
// history when the new width wraps its footer differently. A terminal shows
// the reprint in place of the old scrollback (or next to it); dlgt keeps
// every stable row, so the reprint would be history twice.
//
// The rule: after a reset or a size change, or a cursor-up of a whole
// screen to the top row (screenEvents.repaintTop), the filter is armed. Rows that
// scroll off from then on are held while their words repeat, in order, a
// run of the remembered history's words (compared word by word, so a
// paragraph wrapped again for a new width still matches; blank rows carry
// no words, and blank rows before the first non-blank one are held without
// matching). When the run reaches the end of the history the held rows are
// a reprint and are dropped; a row that reaches past the end (a line the
// old history held only in part) is delivered. As soon as no run matches,
// the held rows are delivered after all (late, in order) and the filter
// disarms. Another reset while rows are held drops them (their words repeat
// stored rows; the TUI is starting over) and re-arms. Rows repeating
// history outside that window are stored as usual.
//
// Resync: Gemini CLI reprints its whole transcript after clearing the
// scrollback, and its reprint differs from what scrolled off in two ways:
// rows of its input area that a redraw left behind scrolled into history
// and are not reprinted, and reply lines it erased before they scrolled off
// are. Once a run has matched resyncMin words, a row that breaks it may
// continue it up to resyncSkip words further on in history, or be held as
// a row the history lacks (at most resyncExtra of them); such rows go with
// the reprint when it reaches the end of the history, and are delivered
// with the rest if it does not.
type reprint struct {
	seed    uint32   // per Screen: FNV-1a's offset basis, varied
	hist    []uint32 // hashes of the delivered rows' words, oldest first
	armed   bool
	held    []string
	lead    int      // blank rows held before the first non-blank one
	cands   []int    // for each live run, the next history word it expects
	words   []uint32 // scratch: the current row's word hashes
	matched int      // words the live runs have matched
	extra   int      // rows held that the history lacks (resync)
	prev    []int    // scratch: the runs before the current row
}

// Resync bounds: a run that has matched resyncMin words is a reprint;
// when a row breaks it, the run may skip up to resyncSkip words of
// history (rows the TUI drew and erased, which its reprint leaves out) to
// where the row continues, and may hold up to resyncExtra rows the history
// lacks (rows the TUI erased before they scrolled off, which its reprint
// has): they are part of the reprint and not delivered.
const (
	resyncMin   = 64
	resyncSkip  = 2048
	resyncExtra = 16
)

func newReprint() *reprint {
	return &reprint{seed: 2166136261 ^ uint32(maphash.Comparable(maphash.MakeSeed(), 0))}
}

// split sets r.words to the hashes of text's words, the runs of bytes
// between ASCII spaces and tabs. It runs for every stable row, so it
// takes a word 8 bytes at a time: the separators in the next 8 bytes are
// found with one mask, and each 8-byte piece of a word costs one multiply
// (a byte-at-a-time hash was 9% of ingest CPU).
func (r *reprint) split(text string) {
	r.words = r.words[:0]
	i, n := 0, len(text)
	for {
		for i < n && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
		if i >= n {
			return
		}
		h := uint64(r.seed)
		start := i
		for {
			var x uint64
			k := 8 // bytes of x that belong to the word
			if i+8 <= n {
				x = le64(text[i : i+8])
				if m := sepMask(x); m != 0 {
					k = bits.TrailingZeros64(m) / 8
				}
			} else {
				k = 0
				for i+k < n && text[i+k] != ' ' && text[i+k] != '\t' {
					x |= uint64(text[i+k]) << (8 * k)
					k++
				}
			}
			if k == 8 {
				h = (h ^ x) * wordMul
				h ^= h >> 31
				i += 8
				continue
			}
			// The word ends inside x (k may be 0 after a run of whole
			// pieces): its last piece, zero-padded, and its length.
			x &= 1<<(8*k) - 1
			i += k
			h = (h ^ x ^ uint64(i-start)<<56) * wordMul
			h ^= h >> 29
			h *= wordMul2
			h ^= h >> 32
			r.words = append(r.words, uint32(h))
			break
		}
	}
}

const (
	wordMul  = 0x9e3779b97f4a7c15
	wordMul2 = 0xbf58476d1ce4e5b9
	lo7      = 0x7f7f7f7f7f7f7f7f
)

// sepMask has the high bit set in exactly the bytes of x that are a space
// or a tab (no false positives: each byte is tested without carries).
func sepMask(x uint64) uint64 {
	return zeroBytes(x^0x2020202020202020) | zeroBytes(x^0x0909090909090909)
}

// le64 reads the first 8 bytes of s, little-endian (one load).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func zeroBytes(y uint64) uint64 {
	return ^((y&lo7 + lo7) | y | lo7)
}

// remember appends a delivered row's words (r.words for the current row).
func (r *reprint) remember(words []uint32) {
	if len(r.hist)+len(words) >= maxReprintWords+maxReprintWords/8 {
		n := copy(r.hist, r.hist[max(0, len(r.hist)-maxReprintWords):])
		r.hist = r.hist[:n]
	}
	r.hist = append(r.hist, words...)
}

// arm starts watching for a reprint; rows held by an earlier watch are
// dropped.
func (r *reprint) arm() {
	r.armed = len(r.hist) > 0
	r.reset()
}

func (r *reprint) reset() {
	clear(r.held)
	r.held, r.cands, r.lead, r.matched, r.extra = r.held[:0], r.cands[:0], 0, 0, 0
}

// row takes one scrolled-off row and appends what is to be delivered now
// to out.
func (r *reprint) row(text string, out []string) []string {
	r.split(text)
	if !r.armed {
		r.remember(r.words)
		return append(out, text)
	}
	if len(r.words) == 0 {
		// A blank row: part of the run if one is live, else a lead row.
		if len(r.cands) > 0 || r.lead < maxReprintLead {
			r.held = append(r.held, text)
			if len(r.cands) == 0 {
				r.lead++
			}
			return out
		}
		return r.deliver(text, out)
	}
	n, k := len(r.hist), len(r.words)
	starting := len(r.cands) == 0
	if starting {
		for p, x := range r.hist {
			if x == r.words[0] {
				r.cands = append(r.cands, p)
			}
		}
	}
	if r.matched >= resyncMin {
		r.prev = append(r.prev[:0], r.cands...)
	}
	keep, past := r.cands[:0], false
	for _, q := range r.cands {
		m := min(k, n-q)
		if !wordsEqual(r.hist[q:q+m], r.words[:m]) {
			continue
		}
		switch {
		case q+k < n:
			keep = append(keep, q+k)
		case q+k == n:
			// The run ends with the history: the held rows and this one
			// are a reprint.
			r.reset()
			r.armed = false
			return out
		default:
			past = true
		}
	}
	r.cands = keep
	if past && !starting {
		// The run reached the end of the history inside this row: the
		// held rows are a reprint, this row also holds what the history
		// did not.
		r.reset()
		r.armed = false
		r.remember(r.words)
		return append(out, text)
	}
	if len(r.cands) == 0 {
		if !starting && r.matched >= resyncMin {
			if out, ok := r.resync(text, out); ok {
				return out
			}
		}
		return r.deliver(text, out)
	}
	r.matched += k
	r.held = append(r.held, text)
	return out
}

// resync continues a reprint that text broke (see resyncMin): from the
// first run that finds text's words within resyncSkip words ahead, else
// with text as a row the history lacks. It reports false when neither
// applies.
func (r *reprint) resync(text string, out []string) ([]string, bool) {
	n, k := len(r.hist), len(r.words)
	for _, q := range r.prev {
		for p := q; p < min(n, q+resyncSkip); p++ {
			m := min(k, n-p)
			if r.hist[p] != r.words[0] || !wordsEqual(r.hist[p:p+m], r.words[:m]) {
				continue
			}
			switch {
			case p+k < n:
				r.cands = append(r.cands[:0], p+k)
				r.matched += k
				r.held = append(r.held, text)
				return out, true
			case p+k == n:
				r.reset()
				r.armed = false
				return out, true
			default:
				cur := append([]uint32(nil), r.words...)
				r.reset()
				r.armed = false
				r.remember(cur)
				return append(out, text), true
			}
		}
	}
	if r.extra < resyncExtra {
		r.extra++
		r.cands = append(r.cands[:0], r.prev...)
		r.held = append(r.held, text)
		return out, true
	}
	return out, false
}

// deliver ends a watch that found no reprint: the held rows, then text,
// are delivered and remembered.
func (r *reprint) deliver(text string, out []string) []string {
	cur := append([]uint32(nil), r.words...)
	for _, t := range r.held {
		r.split(t)
		r.remember(r.words)
		out = append(out, t)
	}
	r.remember(cur)
	r.reset()
	r.armed = false
	return append(out, text)
}

func wordsEqual(a, b []uint32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// overlap is how many of the first rows of live continue the watched run
// to the end of the history: with rows held, from where the run stands;
// else live's first rows repeat the history's last words. The count ends
// with a non-blank row; 0 when there is no such run.
func (r *reprint) overlap(live []string) int {
	n := len(r.hist)
	var seq []uint32
	best := 0
	for k, text := range live {
		r.split(text)
		if len(r.words) == 0 {
			continue
		}
		seq = append(seq, r.words...)
		if len(seq) > n {
			break
		}
		ok := false
		if len(r.cands) > 0 {
			for _, q := range r.cands {
				if q+len(seq) == n && wordsEqual(r.hist[q:], seq) {
					ok = true
					break
				}
			}
		} else {
			ok = wordsEqual(r.hist[n-len(seq):], seq)
		}
		if ok {
			best = k + 1
		}
	}
	return best
}
