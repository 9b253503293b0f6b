package vt

import (
	"strings"
	"testing"
)

// A Write larger than MaxWriteHold is parsed piece by piece (one lock
// hold each): each piece delivers its own stable rows, and the result is
// the same as feeding the stream in small writes.
func TestWriteLargeInPieces(t *testing.T) {
	line := strings.Repeat("0123456789", 8) // 80 columns: one row per line
	var stream strings.Builder
	for i := 0; stream.Len() < 5*MaxWriteHold; i++ {
		stream.WriteString(line[:70])
		stream.WriteString(strings.Repeat("x", i%10))
		stream.WriteString("\r\n")
	}
	data := []byte(stream.String())

	var calls int
	var big []string
	s := New(24, 80, Callbacks{Stable: func(rows []string) {
		calls++
		big = append(big, rows...)
	}})
	s.Write(data)
	if want := (len(data) + MaxWriteHold - 1) / MaxWriteHold; calls != want {
		t.Fatalf("Stable called %d times for a %d-byte Write, want once per piece (%d)", calls, len(data), want)
	}

	var small []string
	ref := New(24, 80, Callbacks{Stable: func(rows []string) { small = append(small, rows...) }})
	for off := 0; off < len(data); off += 1000 {
		ref.Write(data[off:min(len(data), off+1000)])
	}
	if len(big) != len(small) {
		t.Fatalf("%d rows from one Write, %d from small writes", len(big), len(small))
	}
	for i := range big {
		if big[i] != small[i] {
			t.Fatalf("row %d: %q vs %q", i, big[i], small[i])
		}
	}
	if got, want := strings.Join(s.Live(), "\n"), strings.Join(ref.Live(), "\n"); got != want {
		t.Fatalf("live grid differs:\n%s\nvs\n%s", got, want)
	}
}
