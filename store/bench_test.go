package store

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var row100 = strings.Repeat("x", 100)

// BenchmarkRowAppend measures rows/sec through Append and commit (one
// session, 100-byte rows, default options, fsync on). The final Flush is
// inside the timed region, so every appended row is committed.
func BenchmarkRowAppend(b *testing.B) {
	db := openTestDB(b)
	l := mustRows(b, db, "bench")
	b.SetBytes(100)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		l.Append(1, row100)
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkRowAppendParallel is the same with one session per goroutine.
func BenchmarkRowAppendParallel(b *testing.B) {
	db := openTestDB(b)
	var n atomic.Int64
	b.SetBytes(100)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		l := mustRows(b, db, fmt.Sprintf("bench%d", n.Add(1)))
		for pb.Next() {
			l.Append(1, row100)
		}
		if err := l.Flush(); err != nil {
			b.Error(err)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkRowAppendBuffered measures Append alone: the buffer is large
// enough that it never blocks, and commits happen outside the timed region.
func BenchmarkRowAppendBuffered(b *testing.B) {
	db := openTestDBOpts(b, Options{FlushInterval: time.Hour, FlushRows: 1 << 30, FlushBytes: 1 << 40, MaxPendingBytes: 1 << 40})
	l := mustRows(b, db, "bench")
	b.ResetTimer()
	for i := range b.N {
		l.Append(1, row100)
		if i%100_000 == 99_999 {
			b.StopTimer()
			if err := l.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}
