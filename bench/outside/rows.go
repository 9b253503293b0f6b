package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// allRows are the rows of issue 16's table, in the order they run.
var allRows = []string{"create", "send", "hook", "waiters", "ingest", "idle", "poll", "neighbour"}

// parseRows reads -rows: a comma-separated subset of allRows, or "all".
func parseRows(s string) (map[string]bool, error) {
	sel := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		switch {
		case r == "":
		case r == "all":
			for _, a := range allRows {
				sel[a] = true
			}
		case contains(allRows, r):
			sel[r] = true
		default:
			return nil, fmt.Errorf("unknown row %q (rows: %s)", r, strings.Join(allRows, ","))
		}
	}
	if len(sel) == 0 {
		return nil, errors.New("-rows selects no row")
	}
	return sel, nil
}

// parseCounts reads an ascending comma-separated list of positive counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("counts %q: want ascending positive numbers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// summaryRow is one line of the closing table.
type summaryRow struct {
	row, dlgt, peer, ratio, goal string
}

func (b *bench) summarise(row, dlgt, peer, ratio, goal string) {
	b.summary = append(b.summary, summaryRow{row, dlgt, peer, ratio, goal})
}

func (b *bench) printSummary() {
	fmt.Println("Summary (medians, p99 in brackets; ratio = dlgt / peer unless said otherwise):")
	fmt.Println()
	fmt.Println("| row | dlgt | peer | ratio | goal |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range b.summary {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.row, r.dlgt, r.peer, r.ratio, r.goal)
	}
	fmt.Println()
}

// verdict is the goal with whether this run met it.
func verdict(ok bool, goal string) string {
	if ok {
		return goal + ": met"
	}
	return goal + ": missed"
}

// msf formats a duration in ms without padding.
func msf(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms >= 0.1:
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

// medP99 is "median [p99]".
func medP99(d []time.Duration) string {
	return fmt.Sprintf("%s [%s]", msf(median(d)), msf(quantile(d, 0.99)))
}

func ratio(a, b float64) string {
	if b == 0 {
		return "– (peer 0)"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// create starts a Session of the fake harness with extra environment,
// and waits for its first result.
func (b *bench) create(c *conn, title string, extra map[string]string) (string, error) {
	cwd := filepath.Join(b.work, "cwd")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		return "", err
	}
	env := map[string]string{}
	for k, v := range b.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	b.seq++
	var rc rpc.Receipt
	err := c.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: title, Harness: "claude", Cwd: cwd, Prompt: title,
		RequestID: fmt.Sprintf("bench-%s-%d-%d", title, os.Getpid(), b.seq), Environment: env,
	}, &rc)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", title, err)
	}
	if _, err := waitResult(context.Background(), b.socket, rc.Session.ID, rc.Cursor); err != nil {
		return "", err
	}
	return rc.Session.ID, nil
}

// stopSession stops a Session, its harness killed.
func (b *bench) stopSession(c *conn, id string) error {
	var res rpc.SessionResult
	if err := c.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: true}, &res); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	return nil
}

// fillPool creates Sessions until n are in the pool (Sessions kept
// running, idle, for the idle, poll and neighbour rows).
func (b *bench) fillPool(c *conn, n int) error {
	for len(b.pool) < n {
		id, err := b.create(c, fmt.Sprintf("pool-%d", len(b.pool)), nil)
		if err != nil {
			return err
		}
		b.pool = append(b.pool, id)
	}
	return nil
}

// streamer is a Session whose harness prints the stream file on SIGUSR1
// (harnesstest/benchclaude).
type streamer struct {
	id  string
	pid int
	n   int // signals sent
}

func (b *bench) startStreamer(c *conn, title, stream string) (*streamer, error) {
	pidfile := filepath.Join(b.work, title+".pid")
	os.Remove(pidfile)
	id, err := b.create(c, title, map[string]string{"DLGT_BENCH_INGEST": stream, "DLGT_BENCH_PIDFILE": pidfile})
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		return nil, fmt.Errorf("the streaming harness wrote no pid: %w", err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		return nil, fmt.Errorf("pid file %q", data)
	}
	return &streamer{id: id, pid: pid}, nil
}

// stream signals the harness to print the stream and returns the number
// its end marker will carry.
func (s *streamer) stream() (int, error) {
	s.n++
	return s.n, syscall.Kill(s.pid, syscall.SIGUSR1)
}

// waitMarker polls scrollback.read (every 5 ms, so its own cost stays a
// small part of the daemon's CPU) until "BENCH-INGEST-DONE n" is a stable
// row, and returns when it was seen.
func waitMarker(c *conn, id string, n int, timeout time.Duration) (time.Time, error) {
	want := fmt.Sprintf("BENCH-INGEST-DONE %d", n)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var page rpc.ScrollbackPage
		if err := c.call(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: id, Lines: 100}, &page); err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		for _, l := range page.Lines {
			if strings.Contains(l, want) {
				return at, nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%q not in %s's scrollback after %v", want, id, timeout)
}
