package vt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/vt/vttest"
)

// Inline-TUI ingest: the two real inline captures (Claude Code's cursor-up
// redraws, Codex's DECSTBM history insertion) repeated to benchSize,
// through a Screen (reprint filter included) and through tmux, next to the
// plain benchmark stream, in one run:
//
//	go test -run '^$' -bench IngestInline -benchtime 3x ./vt/
var inlineStream = sync.OnceValue(func() []byte {
	var one []byte
	for _, c := range inlineCaptures[:2] {
		data, err := os.ReadFile(filepath.Join("testdata", "captures", c.name+".bin"))
		if err != nil {
			panic(err)
		}
		one = append(one, data...)
	}
	return bytes.Repeat(one, benchSize/len(one)+1)[:benchSize]
})

func BenchmarkIngestInline(b *testing.B) {
	streams := []struct {
		name string
		data func() []byte
	}{{"inline", inlineStream}, {"plain", benchStream}}
	for _, st := range streams {
		b.Run("screen-"+st.name, func(b *testing.B) {
			data := st.data()
			b.SetBytes(int64(len(data)))
			rows := 0
			for b.Loop() {
				s := New(40, 100, Callbacks{Stable: func(r []string) { rows += len(r) }})
				feedChunks(func(p []byte) { s.Write(p) }, data, 4096)
			}
			_ = rows
		})
		b.Run("tmux-"+st.name, func(b *testing.B) {
			data := st.data()
			b.SetBytes(int64(len(data)))
			var total time.Duration
			for b.Loop() {
				d, err := vttest.TmuxIngest(data, 40, 100)
				if errors.Is(err, vttest.ErrNoTmux) {
					b.Skip(err)
				}
				if err != nil {
					b.Fatal(err)
				}
				total += d
			}
			b.ReportMetric(float64(len(data))*float64(b.N)/total.Seconds()/1e6, "tmux-MB/s")
		})
	}
}
