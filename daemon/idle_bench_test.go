package daemon

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// Daemon CPU while 32 Sessions (fake Claude) sit idle after a turn each:
// the test process's CPU time over 5 s (the harnesses are processes of
// their own). Run with:
//
//	go test -run '^$' -bench IdleSessions -benchtime 1x ./daemon/
func BenchmarkIdleSessions(b *testing.B) {
	td := startTestDaemon(b)
	for i := 0; i < 32; i++ {
		r := td.create(b, fmt.Sprintf("idle-%d", i), "hello")
		td.waitResult(b, r.Session.ID, r.Cursor)
	}
	time.Sleep(2 * time.Second) // settle
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		time.Sleep(5 * time.Second)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu += time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	}
	b.ReportMetric(float64(cpu)/float64(time.Duration(b.N)*5*time.Second)*100, "cpu-%")
}
