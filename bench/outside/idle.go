package main

import (
	"fmt"
	"time"
)

// idleSessions is the idle row's Session count.
const idleSessions = 16

// idle measures the daemon's CPU with 16 idle Sessions and a tmux
// server's with 16 idle panes (each running cat, which waits for input),
// over the same windows, after a settling pause.
func (b *bench) idle(c *conn) error {
	fmt.Printf("idle: %d Sessions against tmux with %d panes, %d windows of %v:\n", idleSessions, idleSessions, b.opts.idleRounds, b.opts.idleWindow)
	if err := b.fillPool(c, idleSessions); err != nil {
		return err
	}
	tm, err := startTmux(b.work, "idle", "cat")
	if err != nil {
		return err
	}
	defer tm.kill()
	for i := 1; i < idleSessions; i++ {
		if err := tm.run("new-window", "-d", "cat"); err != nil {
			return err
		}
	}
	time.Sleep(3 * time.Second) // settle: the last turn's writes, position batches
	var dlgt, tmux []float64    // % of a core
	stopPerf := b.perf("idle")
	defer stopPerf()
	for r := 0; r < b.opts.idleRounds; r++ {
		d0, t0, w0 := mustCPU(b.daemonPid), mustCPU(tm.pid), time.Now()
		time.Sleep(b.opts.idleWindow)
		d1, t1, w := mustCPU(b.daemonPid), mustCPU(tm.pid), time.Since(w0)
		dlgt = append(dlgt, 100*float64(d1-d0)/float64(w))
		tmux = append(tmux, 100*float64(t1-t0)/float64(w))
		fmt.Printf("  window %d: daemon %.4f%% of a core (%v CPU), tmux server %.4f%% (%v)\n", r, dlgt[r], d1-d0, tmux[r], t1-t0)
	}
	stopPerf()
	b.summarise(fmt.Sprintf("idle daemon, %d Sessions (CPU over %v windows)", idleSessions, b.opts.idleWindow),
		fmt.Sprintf("%.4f%% of a core", medianF(dlgt)), fmt.Sprintf("tmux server, %d panes: %.4f%%", idleSessions, medianF(tmux)),
		ratio(medianF(dlgt), medianF(tmux)), verdict(medianF(dlgt) <= 0.05, "≤ 0.05%"))
	return nil
}
