package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// bigLineSize is the noisy line of the neighbour row: 5 MB without a
// line break ([[bigline N]] of the fake harness).
const bigLineSize = 5_000_000

// bigLineTurns is how many 5 MB lines a phase prints, one after the
// other (one alone lasts too short for a p99 of the probes).
const bigLineTurns = 5

// quietLines is how many lines the quiet side prints during each phase.
const quietLines = 2000

// prober times a probe in a loop, in its own goroutine, until stopped.
type prober struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	lat  []time.Duration
	err  error
}

// startProber runs probe every 2 ms; probe returns its samples.
func startProber(probe func() ([]time.Duration, error)) *prober {
	p := &prober{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			d, err := probe()
			p.mu.Lock()
			p.lat = append(p.lat, d...)
			if err != nil && p.err == nil {
				p.err = err
			}
			p.mu.Unlock()
			if err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return p
}

func (p *prober) end() ([]time.Duration, error) {
	close(p.stop)
	p.wg.Wait()
	return p.lat, p.err
}

// timed runs f and returns its duration as a one-sample slice.
func timed(f func() error) ([]time.Duration, error) {
	t := time.Now()
	err := f()
	return []time.Duration{time.Since(t)}, err
}

// neighbour measures RPC latency on a quiet Session (daemon.status,
// session.list, session.read, each a sample) with nothing else running,
// while another Session prints a 5 MB line, and while it floods (the
// ingest stream at full speed); and tmux's peer: `tmux display -p` and
// `tmux list-panes` (whole client processes) on a quiet pane with nothing
// else running, while another pane cats the same 5 MB line, and while it
// cats the stream. Meanwhile the quiet side ingests too: the quiet
// Session takes a turn printing 2,000 lines, the quiet tmux side cats as
// many in a window of its own. Phases alternate dlgt / tmux per round.
func (b *bench) neighbour(c *conn) error {
	fmt.Printf("neighbour: RPC on a quiet Session while another prints a 5 MB line or floods, %d rounds:\n", b.opts.neighbourRounds)
	stream, err := b.streamFile()
	if err != nil {
		return err
	}
	big := filepath.Join(b.work, "bigline.txt")
	const text = "abcdefghijklmnopqrstuvwxyz0123456789"
	line := strings.Repeat(text, bigLineSize/len(text)+1)[:bigLineSize] + "\r\n"
	if err := os.WriteFile(big, []byte(line), 0o600); err != nil {
		return err
	}
	if err := b.fillPool(c, 1); err != nil {
		return err
	}
	quiet := b.pool[0]
	noisy, err := b.startStreamer(c, "noisy", stream)
	if err != nil {
		return err
	}
	tm, err := startTmux(b.work, "neighbour", "cat")
	if err != nil {
		return err
	}
	defer tm.kill()
	k, err := dialConn(b.socket)
	if err != nil {
		return err
	}
	defer k.close()
	dlgtProbe := func() ([]time.Duration, error) {
		var out []time.Duration
		for _, call := range []func() error{
			func() error { return k.call(rpc.MethodDaemonStatus, struct{}{}, nil) },
			func() error { return k.call(rpc.MethodSessionList, rpc.SessionListParams{All: true}, nil) },
			func() error { return k.call(rpc.MethodSessionRead, rpc.SessionReadParams{Session: quiet}, nil) },
		} {
			d, err := timed(call)
			out = append(out, d...)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	tmuxProbe := func() ([]time.Duration, error) {
		var out []time.Duration
		for _, args := range [][]string{{"display-message", "-p", "-t", "main", "#{pane_id}"}, {"list-panes", "-t", "main"}} {
			d, err := timed(func() error { return tm.run(args...) })
			out = append(out, d...)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	type phase struct {
		name string
		lat  []time.Duration
		wall []time.Duration // how long the noise took
		turn []time.Duration // the quiet side's own ingest during the noise
	}
	phases := map[string]*phase{}
	order := []string{"dlgt quiet", "dlgt 5 MB line", "dlgt flood", "tmux quiet", "tmux 5 MB line", "tmux flood"}
	for _, n := range order {
		phases[n] = &phase{name: n}
	}
	// The quiet side also ingests while the noise runs (100 ms into
	// it): the quiet Session takes a turn printing quietLines lines
	// (session.send to its result), the quiet tmux pane cats as many.
	q, err := dialConn(b.socket)
	if err != nil {
		return err
	}
	defer q.close()
	small := filepath.Join(b.work, "quiet.txt")
	var sb strings.Builder
	for i := 1; i <= quietLines; i++ {
		fmt.Fprintf(&sb, "QUIET %06d %s\n", i, strings.Repeat(".", 66))
	}
	if err := os.WriteFile(small, []byte(sb.String()), 0o600); err != nil {
		return err
	}
	turns := 0
	dlgtTurn := func() (time.Duration, error) {
		turns++
		t := time.Now()
		var rc rpc.Receipt
		if err := sendWhenIdle(q, rpc.SessionSendParams{
			Session: quiet, Prompt: fmt.Sprintf("[[flood %d]] quiet turn %d", quietLines, turns), RequestID: fmt.Sprintf("bench-quiet-%d-%d", os.Getpid(), turns),
		}, &rc); err != nil {
			return 0, err
		}
		_, err := waitResult(context.Background(), b.socket, quiet, rc.Cursor)
		return time.Since(t), err
	}
	tmuxTurn := func() (time.Duration, error) {
		turns++
		ch := fmt.Sprintf("quiet-%d", turns)
		t := time.Now()
		if err := tm.run("new-window", "-d", fmt.Sprintf("cat '%s'; tmux -L %s wait-for -S %s", small, tm.sock, ch)); err != nil {
			return 0, err
		}
		err := tm.run("wait-for", ch)
		return time.Since(t), err
	}
	run := func(name string, probe func() ([]time.Duration, error), noise func() error) error {
		turn := dlgtTurn
		if strings.HasPrefix(name, "tmux") {
			turn = tmuxTurn
		}
		p := startProber(probe)
		var (
			td   time.Duration
			terr error
			tw   sync.WaitGroup
		)
		tw.Add(1)
		go func() {
			defer tw.Done()
			time.Sleep(100 * time.Millisecond)
			td, terr = turn()
		}()
		t := time.Now()
		nerr := noise()
		wall := time.Since(t)
		tw.Wait()
		lat, err := p.end()
		if nerr != nil {
			return fmt.Errorf("%s: %w", name, nerr)
		}
		if err != nil {
			return fmt.Errorf("%s probe: %w", name, err)
		}
		if terr != nil {
			return fmt.Errorf("%s, the quiet side's turn: %w", name, terr)
		}
		phases[name].lat = append(phases[name].lat, lat...)
		phases[name].wall = append(phases[name].wall, wall)
		phases[name].turn = append(phases[name].turn, td)
		return nil
	}
	quietFor := func() error { time.Sleep(2 * time.Second); return nil }
	stopPerf := b.perf("neighbour")
	defer stopPerf()
	for r := 0; r < b.opts.neighbourRounds; r++ {
		if err := run("dlgt quiet", dlgtProbe, quietFor); err != nil {
			return err
		}
		if err := run("dlgt 5 MB line", dlgtProbe, func() error {
			for i := 0; i < bigLineTurns; i++ {
				b.seq++
				var rc rpc.Receipt
				if err := sendWhenIdle(c, rpc.SessionSendParams{
					Session: noisy.id, Prompt: fmt.Sprintf("[[bigline %d]] big %d", bigLineSize, r), RequestID: fmt.Sprintf("bench-big-%d-%d", os.Getpid(), b.seq),
				}, &rc); err != nil {
					return err
				}
				if _, err := waitResult(context.Background(), b.socket, noisy.id, rc.Cursor); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := run("dlgt flood", dlgtProbe, func() error {
			n, err := noisy.stream()
			if err != nil {
				return err
			}
			_, err = waitMarker(c, noisy.id, n, 2*time.Minute)
			return err
		}); err != nil {
			return err
		}
		if err := run("tmux quiet", tmuxProbe, quietFor); err != nil {
			return err
		}
		for _, f := range []struct{ name, file string }{{"tmux 5 MB line", big}, {"tmux flood", stream}} {
			ch := fmt.Sprintf("nb-%d-%d", r, len(f.name))
			times := 1
			if f.file == big {
				times = bigLineTurns
			}
			cmd := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("cat '%s'; ", f.file), times), " ")
			if err := run(f.name, tmuxProbe, func() error {
				if err := tm.run("new-window", "-d", fmt.Sprintf("%s tmux -L %s wait-for -S %s", cmd, tm.sock, ch)); err != nil {
					return err
				}
				return tm.run("wait-for", ch)
			}); err != nil {
				return err
			}
		}
	}
	stopPerf()
	for _, n := range order {
		p := phases[n]
		fmt.Printf("  %-15s %s   noise lasted %s per phase; the quiet side's %d lines took %s\n", n, stats(p.lat), medP99(p.wall), quietLines, medP99(p.turn))
	}
	turn := func(n string) float64 { return float64(median(phases[n].turn)) }
	p99 := func(n string) float64 { return float64(quantile(phases[n].lat, 0.99)) }
	b.summarise("RPC of a quiet Session (status, list, read), nothing else running", medP99(phases["dlgt quiet"].lat),
		"tmux display -p / list-panes "+medP99(phases["tmux quiet"].lat), ratio(p99("dlgt quiet"), p99("tmux quiet"))+" (p99)", "–")
	b.summarise("the same while another Session prints a 5 MB line", medP99(phases["dlgt 5 MB line"].lat),
		"tmux, a pane printing it "+medP99(phases["tmux 5 MB line"].lat), ratio(p99("dlgt 5 MB line"), p99("tmux 5 MB line"))+" (p99)", verdict(p99("dlgt 5 MB line") < float64(10*time.Millisecond), "p99 < 10 ms"))
	b.summarise("the same while another Session floods (the 50 MiB stream)", medP99(phases["dlgt flood"].lat),
		"tmux, a pane catting it "+medP99(phases["tmux flood"].lat), ratio(p99("dlgt flood"), p99("tmux flood"))+" (p99)", verdict(p99("dlgt flood") < float64(10*time.Millisecond), "p99 < 10 ms"))
	b.summarise(fmt.Sprintf("the quiet Session's own %d-line turn, nothing else running / during the 5 MB lines / during the flood", quietLines),
		fmt.Sprintf("%s / %s / %s", msf(median(phases["dlgt quiet"].turn)), msf(median(phases["dlgt 5 MB line"].turn)), msf(median(phases["dlgt flood"].turn))),
		fmt.Sprintf("tmux pane cat: %s / %s / %s", msf(median(phases["tmux quiet"].turn)), msf(median(phases["tmux 5 MB line"].turn)), msf(median(phases["tmux flood"].turn))),
		fmt.Sprintf("flood/quiet: dlgt %s, tmux %s", ratio(turn("dlgt flood"), turn("dlgt quiet")), ratio(turn("tmux flood"), turn("tmux quiet"))), "unaffected (compare with tmux)")
	return b.stopSession(c, noisy.id)
}

// sendWhenIdle is session.send, retried while the Session is still busy
// with the turn whose result was just read (its state follows the
// result).
func sendWhenIdle(c *conn, p rpc.SessionSendParams, rc *rpc.Receipt) error {
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := c.call(rpc.MethodSessionSend, p, rc)
		var re *rpc.Error
		if err == nil || !errors.As(err, &re) || re.Code != rpc.CodeSessionBusy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}
