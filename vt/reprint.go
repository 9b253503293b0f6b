package vt

import "hash/maphash"

// maxReprintRows bounds the history a Screen remembers (as 8-byte hashes,
// at most 1.125 × this many: 288 KiB) to recognise a TUI reprinting it; a
// reprint starting further back is stored again.
const maxReprintRows = 32 << 10

// reprint recognises an inline TUI reprinting its history after a resize
// or a reset, so that the rows it repeats are not stored twice.
//
// Inline TUIs repaint on SIGWINCH: Codex (--no-alt-screen) erases the
// scrollback (CSI 3 J) and prints its whole transcript again; Claude Code
// homes the cursor, erases the screen and prints the tail of its output
// that fits, which starts with rows already in history when the new width
// wraps its footer differently. A terminal shows the reprint in place of
// the old scrollback (or next to it); dlgt keeps every stable row, so the
// reprint would be history twice.
//
// The rule: after a reset or a size change the filter is armed. Rows that
// scroll off from then on are held while they repeat, row for row, a run
// of the remembered history (blank rows before the first non-blank one,
// what is left of an erased grid, are held without matching); when the run reaches the end of the history
// and holds a non-blank row, the held rows are a reprint and are dropped.
// As soon as no run matches, the held rows are delivered after all (late,
// in order) and the filter disarms. Another reset while rows are held drops
// them (they repeat stored rows; the TUI is starting over) and re-arms.
// Rows repeating history outside that window are stored as usual.
type reprint struct {
	seed  maphash.Seed
	hist  []uint64 // hashes of the delivered rows, oldest first
	armed bool
	held  []string
	hh    []uint64 // hashes of held
	lead  int      // blank rows held before the first non-blank one
	cands []int    // positions p with hist[p:p+len(held)-lead] == held[lead:]
	blank uint64   // hash of ""
}

func newReprint() *reprint {
	r := &reprint{seed: maphash.MakeSeed()}
	r.blank = maphash.String(r.seed, "")
	return r
}

// remember appends a delivered row's hash, keeping at most maxReprintRows.
func (r *reprint) remember(h uint64) {
	if len(r.hist) >= maxReprintRows+maxReprintRows/8 {
		n := copy(r.hist, r.hist[len(r.hist)-maxReprintRows:])
		r.hist = r.hist[:n]
	}
	r.hist = append(r.hist, h)
}

// arm starts watching for a reprint; rows held by an earlier watch are
// dropped.
func (r *reprint) arm() {
	r.armed = len(r.hist) > 0
	r.held, r.hh, r.cands, r.lead = r.held[:0], r.hh[:0], r.cands[:0], 0
}

// maxReprintLead bounds the blank rows held before a reprint's first
// non-blank row.
const maxReprintLead = 256

// row takes one scrolled-off row and appends what is to be delivered now
// to out.
func (r *reprint) row(text string, out []string) []string {
	h := maphash.String(r.seed, text)
	if !r.armed {
		r.remember(h)
		return append(out, text)
	}
	n := len(r.held) - r.lead
	if n == 0 && h == r.blank && r.lead < maxReprintLead {
		// Blank rows before the reprint proper (what was left of the
		// erased grid scrolls off first) are held without matching.
		r.held, r.hh = append(r.held, text), append(r.hh, h)
		r.lead++
		return out
	}
	if n == 0 {
		for p, x := range r.hist {
			if x == h {
				r.cands = append(r.cands, p)
			}
		}
	} else {
		keep := r.cands[:0]
		for _, p := range r.cands {
			if p+n < len(r.hist) && r.hist[p+n] == h {
				keep = append(keep, p)
			}
		}
		r.cands = keep
	}
	if len(r.cands) == 0 {
		// Not a reprint: deliver what was held, then this row.
		for i, t := range r.held {
			r.remember(r.hh[i])
			out = append(out, t)
		}
		r.remember(h)
		r.armed = false
		r.held, r.hh, r.lead = r.held[:0], r.hh[:0], 0
		return append(out, text)
	}
	r.held, r.hh = append(r.held, text), append(r.hh, h)
	// A run that reached the end of the history: the held rows repeat its
	// last len(held) rows.
	n++
	for _, p := range r.cands {
		if p+n == len(r.hist) && r.nonBlank() {
			r.armed = false
			clear(r.held)
			r.held, r.hh, r.cands, r.lead = r.held[:0], r.hh[:0], r.cands[:0], 0
			return out
		}
	}
	return out
}

func (r *reprint) nonBlank() bool {
	for _, h := range r.hh[r.lead:] {
		if h != r.blank {
			return true
		}
	}
	return false
}
