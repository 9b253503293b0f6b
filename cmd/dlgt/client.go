package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// client is the command's daemon client (package client: the one dial
// policy of every front-end), built from the env on first use: --host
// (else DLGT_HOST; "local" for list --hosts' own machine), autostart with
// this executable, and, once a launch resolved to a profile's host, that
// host. Copies for other hosts share its ssh connection directory.
func (e *env) client() (*client.Client, error) {
	e.clientMu.Lock()
	defer e.clientMu.Unlock()
	if e.cl == nil {
		host := e.hostFlag
		if e.localOnly {
			host = "local"
		}
		c, err := client.New(client.Options{Getenv: e.getenv, Environ: e.environ, DaemonExe: e.exe,
			Host: host, Stderr: e.stderr, Harnesses: e.harnesses})
		if err != nil {
			return nil, err
		}
		e.cl = c
	}
	if e.profileHost != "" && e.hostFlag == "" && !e.localOnly {
		return e.cl.WithHost(e.profileHost)
	}
	return e.cl, nil
}

// cleanupRemote closes the command's client (the private directory of
// ssh's shared connection goes; its master exits by itself).
func (e *env) cleanupRemote() {
	e.clientMu.Lock()
	defer e.clientMu.Unlock()
	if e.cl != nil {
		e.cl.Close()
		e.cl = nil
	}
}

// connect dials the daemon of the command's client for the Session it
// addresses (e.sessionRef: a provider-qualified id is routed to the
// daemon that holds it).
func (e *env) connect(ctx context.Context) (*rpc.Client, error) {
	c, err := e.client()
	if err != nil {
		return nil, err
	}
	return c.Dial(ctx, e.sessionRef)
}

// progress is the one-line indicator a waiting `session fetch --wait`
// shows on a terminal stderr: state, elapsed time and the last screen
// line, refreshed every second from a second connection. It never writes
// to stdout and clears its line before the command prints anything.
type progress struct {
	w      io.Writer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// mu guards shown.
	mu    sync.Mutex
	shown bool
}

// progressEvery is the indicator's refresh interval.
var progressEvery = time.Second

func (e *env) startFetchProgress(cmd *cobra.Command, wait time.Duration) {
	if !e.terminal(e.stderr) || e.progress != nil {
		return
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	pr := &progress{w: e.stderr, cancel: cancel, done: make(chan struct{})}
	e.progress = pr
	cmd.SetOut(clearFirst{pr, cmd.OutOrStdout()})
	cmd.SetErr(clearFirst{pr, cmd.ErrOrStderr()})
	go pr.run(ctx, e, e.sessionRef, wait)
}

// clearFirst stops the indicator before passing output on.
type clearFirst struct {
	pr *progress
	w  io.Writer
}

func (c clearFirst) Write(p []byte) (int, error) {
	c.pr.stop()
	return c.w.Write(p)
}

func (pr *progress) run(ctx context.Context, e *env, ref string, wait time.Duration) {
	defer close(pr.done)
	start := time.Now()
	var c *rpc.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	state, last := "", ""
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ref != "" {
			if c == nil {
				c, _ = e.connect(ctx)
			}
			if c != nil {
				state, last = pollSession(ctx, c, ref)
			}
		}
		line := progressLine(ref, state, last, time.Since(start), wait, terminalWidth(pr.w))
		pr.mu.Lock()
		if ctx.Err() == nil {
			io.WriteString(pr.w, "\r\x1b[2K"+line)
			pr.shown = true
		}
		pr.mu.Unlock()
	}
}

// pollSession reads the Session's state and its last non-blank screen line.
func pollSession(ctx context.Context, c *rpc.Client, ref string) (state, last string) {
	if read, err := rpc.SessionRead.Call(ctx, c, rpc.SessionReadParams{Session: ref}); err == nil {
		state = read.Session.State
	}
	if page, err := rpc.ScrollbackRead.Call(ctx, c, rpc.ScrollbackReadParams{Session: ref, Lines: 5}); err == nil {
		for i := len(page.Lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(page.Lines[i]); l != "" {
				last = l
				break
			}
		}
	}
	return state, last
}

// progressLine renders the indicator, clipped to width-1 columns so it
// never wraps (a wrapped line could not be cleared with one CR).
func progressLine(ref, state, last string, elapsed, wait time.Duration, width int) string {
	parts := []string{"waiting"}
	if ref != "" {
		parts = append(parts, ref)
	} else {
		parts = append(parts, "all sessions")
	}
	if state != "" {
		parts = append(parts, state)
	}
	parts = append(parts, fmtElapsed(elapsed)+"/"+fmtElapsed(wait))
	if last != "" {
		parts = append(parts, last)
	}
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.Join(parts, " · "))
	if width < 10 {
		width = 80
	}
	rs := []rune(s)
	if len(rs) > width-1 {
		rs = append(rs[:width-2], '…')
	}
	return string(rs)
}

func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// stop ends the indicator and clears its line. Safe on nil and repeated.
func (pr *progress) stop() {
	if pr == nil {
		return
	}
	pr.once.Do(func() {
		pr.cancel()
		<-pr.done
		pr.mu.Lock()
		if pr.shown {
			io.WriteString(pr.w, "\r\x1b[2K")
		}
		pr.mu.Unlock()
	})
}
