// Package vttest holds test inputs shared by the vt package's tests and the
// daemon's ingest benchmark, so both measure the same stream.
package vttest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
)

// IngestStream generates the benchmark stream described in the ingest issue:
// text lines of 14 words, 30% of them with an SGR colour span, CRLF endings,
// plus occasional cursor motion and spinner-style CR redraws. It is
// deterministic so numbers are comparable between runs and emulators.
func IngestStream(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
		"session", "daemon", "render", "stable", "rows", "terminal", "cursor",
		"process", "generation", "screen", "output", "agent", "function", "value"}
	spin := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	var b bytes.Buffer
	b.Grow(size + 256)
	for n := 0; b.Len() < size; n++ {
		switch {
		case n%50 == 49:
			// Spinner-style redraw: CR, erase line, a glyph and a status.
			for i := 0; i < 5; i++ {
				fmt.Fprintf(&b, "\r\x1b[2K%s Working… (%ds)", spin[i%len(spin)], i)
			}
			b.WriteString("\r\n")
		case n%20 == 19:
			// Cursor motion: go up two rows, rewrite one, come back down.
			b.WriteString("\x1b[2A\r\x1b[K  updated row\x1b[2B\r\n")
		default:
			colour := r.IntN(10) < 3
			at := r.IntN(14)
			for w := 0; w < 14; w++ {
				if w > 0 {
					b.WriteByte(' ')
				}
				if colour && w == at {
					fmt.Fprintf(&b, "\x1b[38;5;%dm", r.IntN(256))
				}
				b.WriteString(words[r.IntN(len(words))])
				if colour && w == at+1 {
					b.WriteString("\x1b[0m")
				}
			}
			if colour && at == 13 {
				b.WriteString("\x1b[0m")
			}
			b.WriteString("\r\n")
		}
	}
	return b.Bytes()
}
