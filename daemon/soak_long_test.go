//go:build soak

package daemon

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// The long forms of the soak (go test -tags soak; scripts/soak.sh).
// DLGT_SOAK_DURATION (a Go duration, default 3m) sets the load soak's
// length and DLGT_SOAK_KILLS (default 40) the kill loop's kills.

func soakDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DLGT_SOAK_DURATION")); err == nil && d > 0 {
		return d
	}
	return 3 * time.Minute
}

// TestSoakLoadLong: 64 Sessions streaming output and completing turns,
// 200 long-poll fetchers, 8 followers (one slow, dropped by the default
// 1 MiB pending budget or 10 s write timeout).
func TestSoakLoadLong(t *testing.T) {
	runSoakLoad(t, soakLoadConfig{sessions: 64, fetchers: 200, followers: 8, duration: soakDuration(),
		prompt: "[[flood 60]] [[slow 500]]"})
}

// TestSoakKillLoopLong: at least 20 kill -9s while 8 Sessions turn.
func TestSoakKillLoopLong(t *testing.T) {
	kills := 40
	if n, err := strconv.Atoi(os.Getenv("DLGT_SOAK_KILLS")); err == nil && n > 0 {
		kills = n
	}
	runKillLoop(t, 8, kills, "[[flood 60]] [[slow 400]]", uint64(time.Now().UnixNano()))
}

// TestSoakScale measures the daemon (its own process only; the fake
// harness processes are separate and excluded) with 1, 16, 64 and 256
// idle Sessions, then with 2,500 → 10,000 stable rows retained in each of
// 16 Sessions, then with 0, 100 and 1,000 waiting long polls.
func TestSoakScale(t *testing.T) {
	sd := newSoakDaemon(t, "DLGT_SOAK_MAX_CONNS=4096")
	sd.start()
	pid := sd.pid()
	sample := func(label string) {
		time.Sleep(2 * time.Second) // settle
		c0 := procCPU(pid)
		time.Sleep(5 * time.Second)
		cpu := procCPU(pid) - c0
		rss, hwm := procMem(pid)
		t.Logf("scale: %-34s daemon RSS %6d KiB (peak %6d KiB), idle CPU %5.2f%% of a core over 5 s, %4d fds, bbolt %9d bytes",
			label, rss, hwm, 100*cpu.Seconds()/5, procFDs(pid), fileSize(sd.paths.DB))
	}
	sample("0 Sessions")
	var ids []string
	grow := func(n int) {
		sem := make(chan struct{}, 8)
		res := make(chan string, n)
		for i := len(ids); i < n; i++ {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				var r rpc.Receipt
				if err := sd.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: fmt.Sprintf("scale %d", i), Harness: "claude",
					Cwd: t.TempDir(), Prompt: "hi", RequestID: fmt.Sprintf("scale-%d", i), Environment: sd.env}, &r); err != nil {
					t.Errorf("create %d: %v", i, err)
					res <- ""
					return
				}
				var doc rpc.FetchDocument
				sd.call(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "cursor": r.Cursor, "until": "result", "wait_ms": 60000, "screen": false}, &doc)
				res <- r.Session.ID
			}()
		}
		for i := len(ids); i < n; i++ {
			if id := <-res; id != "" {
				ids = append(ids, id)
			}
		}
	}
	for _, n := range []int{1, 16, 64, 256} {
		grow(n)
		if t.Failed() {
			t.FailNow()
		}
		sample(fmt.Sprintf("%d idle Sessions", n))
	}

	// Stable rows: 2,500 more per round in each of the first 16 Sessions.
	for round := 1; round <= 4; round++ {
		var wg sync.WaitGroup
		for i, id := range ids[:16] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var r rpc.Receipt
				if err := sd.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "[[flood 2500]] rows",
					RequestID: fmt.Sprintf("rows-%d-%d", i, round)}, &r); err != nil {
					t.Errorf("send: %v", err)
					return
				}
				for {
					var doc rpc.FetchDocument
					if err := sd.call(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": r.Cursor, "until": "result", "wait_ms": 60000, "screen": false}, &doc); err != nil {
						t.Errorf("fetch: %v", err)
						return
					}
					if len(doc.Sessions[0].Results) > 0 {
						return
					}
					r.Cursor = doc.Cursor
				}
			}()
		}
		wg.Wait()
		sample(fmt.Sprintf("%d rows retained in 16 of %d", 2500*round, len(ids)))
	}

	// Waiting long polls, each on its own connection.
	for _, n := range []int{100, 1000} {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var ok atomic.Int64
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := rpc.Dial(ctx, sd.paths.Socket)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				defer c.Close()
				id := ids[i%len(ids)]
				var doc rpc.FetchDocument
				if err := c.Call(ctx, rpc.MethodSessionFetch, map[string]any{"session": id, "screen": false}, &doc); err != nil {
					t.Errorf("baseline: %v", err)
					return
				}
				ok.Add(1)
				c.Call(ctx, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": doc.Cursor, "wait_ms": 600000, "screen": false}, &doc)
			}()
		}
		for ok.Load() < int64(n) && !t.Failed() {
			time.Sleep(20 * time.Millisecond)
		}
		sample(fmt.Sprintf("%d waiting long polls, %d Sessions", n, len(ids)))
		cancel()
		wg.Wait()
	}
	sd.stop()
	checkStore(t, sd.paths.DB)
	t.Logf("scale: kernel.pty.max %s, ulimit -n %s", readTrim("/proc/sys/kernel/pty/max"), nofile())
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func nofile() string {
	var r syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	return fmt.Sprintf("%d soft / %d hard", r.Cur, r.Max)
}
