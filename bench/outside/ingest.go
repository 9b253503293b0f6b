package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dlgt-dev/dlgt/pty"
	"github.com/dlgt-dev/dlgt/vt/vttest"
)

// ingestSize is the stream of daemon/ingest_bench_test.go: 50 MiB of
// 14-word lines, SGR spans, CRLF, cursor-up rewrites and CR spinners.
const ingestSize = 50 << 20

// streamFile writes the ingest stream once per run.
func (b *bench) streamFile() (string, error) {
	if b.stream != "" {
		return b.stream, nil
	}
	path := filepath.Join(b.work, "stream.txt")
	if err := os.WriteFile(path, vttest.IngestStream(ingestSize), 0o600); err != nil {
		return "", err
	}
	b.stream = path
	return path, nil
}

// ingest pushes the stream through a raw PTY read (cat under a PTY, a
// bare read loop in this process: the limit), a tmux pane (cat in a new
// window until `tmux wait-for`) and a dlgt Session (the fake harness
// copies it to its terminal; done when its end marker is a stable row a
// client reads with scrollback.read), interleaved per round; CPU of the
// daemon and of the tmux server from /proc.
func (b *bench) ingest(c *conn) error {
	stream, err := b.streamFile()
	if err != nil {
		return err
	}
	st, err := os.Stat(stream)
	if err != nil {
		return err
	}
	mib := float64(st.Size()) / (1 << 20)
	fmt.Printf("ingest %.0f MiB, %d rounds of raw PTY, tmux, dlgt:\n", mib, b.opts.ingestRounds)
	s, err := b.startStreamer(c, "ingest", stream)
	if err != nil {
		return err
	}
	tm, err := startTmux(b.work, "ingest", "cat")
	if err != nil {
		return err
	}
	defer tm.kill()
	var raw, tmux, dlgt, rawCPU, tmuxCPU, dlgtCPU []float64 // MiB/s; CPU ms per MiB
	stopPerf := b.perf("ingest")
	defer stopPerf()
	for r := 0; r < b.opts.ingestRounds; r++ {
		// Raw PTY read.
		c0 := mustCPU(os.Getpid())
		start := time.Now()
		if err := rawRead(stream, st.Size()); err != nil {
			return err
		}
		raw = append(raw, mib/time.Since(start).Seconds())
		rawCPU = append(rawCPU, float64(mustCPU(os.Getpid())-c0)/float64(time.Millisecond)/mib)

		// tmux.
		ch := fmt.Sprintf("ingest-%d", r)
		c0 = mustCPU(tm.pid)
		start = time.Now()
		if err := tm.run("new-window", "-d", fmt.Sprintf("cat '%s'; tmux -L %s wait-for -S %s", stream, tm.sock, ch)); err != nil {
			return err
		}
		if err := tm.run("wait-for", ch); err != nil {
			return err
		}
		tmux = append(tmux, mib/time.Since(start).Seconds())
		tmuxCPU = append(tmuxCPU, float64(mustCPU(tm.pid)-c0)/float64(time.Millisecond)/mib)

		// dlgt.
		c0 = mustCPU(b.daemonPid)
		start = time.Now()
		n, err := s.stream()
		if err != nil {
			return err
		}
		if _, err := waitMarker(c, s.id, n, 2*time.Minute); err != nil {
			return err
		}
		dlgt = append(dlgt, mib/time.Since(start).Seconds())
		dlgtCPU = append(dlgtCPU, float64(mustCPU(b.daemonPid)-c0)/float64(time.Millisecond)/mib)
		fmt.Printf("  round %d: raw %.1f MiB/s (this process %.1f ms CPU/MiB), tmux %.1f MiB/s (server %.1f ms CPU/MiB), dlgt %.1f MiB/s (daemon %.1f ms CPU/MiB)\n",
			r, raw[r], rawCPU[r], tmux[r], tmuxCPU[r], dlgt[r], dlgtCPU[r])
	}
	stopPerf()
	fmt.Printf("  medians: raw %.1f, tmux %.1f, dlgt %.1f MiB/s; CPU per MiB raw read %.1f ms, tmux server %.1f ms, daemon %.1f ms\n",
		medianF(raw), medianF(tmux), medianF(dlgt), medianF(rawCPU), medianF(tmuxCPU), medianF(dlgtCPU))
	b.summarise(fmt.Sprintf("ingest %.0f MiB: throughput", mib), fmt.Sprintf("%.1f MiB/s", medianF(dlgt)),
		fmt.Sprintf("tmux %.1f MiB/s, raw PTY %.1f MiB/s", medianF(tmux), medianF(raw)),
		ratio(medianF(dlgt), medianF(tmux))+" tmux, "+ratio(medianF(dlgt), medianF(raw))+" raw", verdict(medianF(dlgt) >= 1.5*medianF(tmux), "≥ 1.5× tmux"))
	b.summarise(fmt.Sprintf("ingest %.0f MiB: CPU per MiB", mib), fmt.Sprintf("daemon %.1f ms", medianF(dlgtCPU)),
		fmt.Sprintf("tmux server %.1f ms (a bare PTY read loop %.1f ms)", medianF(tmuxCPU), medianF(rawCPU)), ratio(medianF(dlgtCPU), medianF(tmuxCPU)), verdict(medianF(dlgtCPU) <= 0.7*medianF(tmuxCPU), "≤ 0.7× tmux"))
	return b.stopSession(c, s.id)
}

// rawRead runs cat FILE under a PTY of 40×120 and reads it to the end.
func rawRead(file string, size int64) error {
	p, err := pty.Start(pty.Options{Argv: []string{"cat", file}, Env: []string{"PATH=" + os.Getenv("PATH")}, Rows: 40, Cols: 120})
	if err != nil {
		return err
	}
	defer p.Close()
	buf := make([]byte, 64<<10)
	var got int64
	for {
		n, err := p.Read(buf)
		got += int64(n)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			break
		}
	}
	p.Wait()
	if got < size {
		return fmt.Errorf("raw PTY read %d bytes, want ≥ %d", got, size)
	}
	return nil
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
