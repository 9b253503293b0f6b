package daemon

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Daemon CPU and wake-ups while 16 Sessions (fake Claude) sit idle after
// a turn each: the test process's CPU time and context switches (all its
// threads) over 5 s after a settle longer than the polls that follow a
// turn (the harnesses are processes of their own). The switches include
// the benchmark's own: a burst as it wakes and reads the counters of
// some 20 threads (about 30, so 6/s, on a daemon that sleeps throughout;
// strace shows nothing between). Run with:
//
//	go test -run '^$' -bench IdleSessions -benchtime 1x ./daemon/
//
// scripts/idle-cpu.sh measures the same from outside, on a real daemon
// next to a tmux server.
//
// BenchmarkIdleSessions/attached has a read-only attach stream open on
// each Session (a viewer watching an idle harness).
func BenchmarkIdleSessions(b *testing.B) {
	b.Run("detached", func(b *testing.B) { benchIdle(b, false) })
	b.Run("attached", func(b *testing.B) { benchIdle(b, true) })
}

func benchIdle(b *testing.B, attached bool) {
	td := startTestDaemon(b)
	if attached { // a stream holds its connection: 16 of them and the test's own
		td.startWithLimits(rpc.Limits{MaxConnections: 64})
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	for i := 0; i < 16; i++ {
		r := td.create(b, fmt.Sprintf("idle-%d", i), "hello")
		td.waitResult(b, r.Session.ID, r.Cursor)
		if !attached {
			continue
		}
		c, err := rpc.Dial(ctx, td.paths.Socket)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		_, next, err := c.Subscribe(ctx, rpc.MethodTerminalAttach, rpc.TerminalAttachParams{Session: r.Session.ID, Mode: rpc.AttachRead})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				if _, err := next(); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(2*transcriptIdlePoll + time.Second) // settle
	b.ResetTimer()
	var cpu time.Duration
	var switches int64
	for i := 0; i < b.N; i++ {
		var ru0, ru1 syscall.Rusage
		s0 := contextSwitches()
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		time.Sleep(5 * time.Second)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		switches += contextSwitches() - s0
		cpu += time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	}
	b.ReportMetric(float64(cpu)/float64(time.Duration(b.N)*5*time.Second)*100, "cpu-%")
	b.ReportMetric(float64(switches)/float64(b.N*5), "wakeups/s")
}

// contextSwitches sums the voluntary and involuntary context switches of
// this process's threads.
func contextSwitches() int64 {
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	var n int64
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
			if ok && bytes.HasSuffix(k, []byte("ctxt_switches")) {
				x, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
				n += x
			}
		}
	}
	return n
}
