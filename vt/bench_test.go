package vt

import (
	"sync"
	"testing"

	"github.com/hinshun/vt10x"
)

const benchSize = 8 << 20

// benchStream is built on first use so plain test runs do not pay for it.
var benchStream = sync.OnceValue(func() []byte { return ingestStream(benchSize) })

func feedChunks(w func([]byte), p []byte, chunk int) {
	for len(p) > 0 {
		n := min(chunk, len(p))
		w(p[:n])
		p = p[n:]
	}
}

// BenchmarkIngest measures PTY→VT throughput at 120×40 with 4 KiB chunks,
// the shape of dlgt's PTY read loop. MB/s comes from b.SetBytes.
func BenchmarkIngest(b *testing.B) {
	b.Run("vt10x", func(b *testing.B) {
		b.SetBytes(int64(len(benchStream())))
		for b.Loop() {
			t := vt10x.New(vt10x.WithSize(120, 40))
			feedChunks(func(p []byte) { t.Write(p) }, benchStream(), 4096)
		}
	})
}

func BenchmarkIngestScreen(b *testing.B) {
	for _, fast := range []bool{true, false} {
		name := "screen"
		if !fast {
			name = "screen-nofast"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(benchStream())))
			rows := 0
			for b.Loop() {
				s := New(40, 120, Callbacks{Stable: func(r []string) { rows += len(r) }})
				s.emu.(*term).noFast = !fast
				feedChunks(func(p []byte) { s.Write(p) }, benchStream(), 4096)
			}
			_ = rows
		})
	}
}
