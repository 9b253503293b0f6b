// Package progress is the indicator of a waiting fetch on a terminal:
// the Session's state, the time waited and its last screen line, on one
// line that never wraps and is cleared before anything else is printed.
package progress

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Indicator is the one-line indicator a waiting `session fetch --wait`
// shows on a terminal stderr: state, elapsed time and the last screen
// line, refreshed every second from a second connection. The front-end
// stops it before it prints anything.
type Indicator struct {
	w      io.Writer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// mu guards shown.
	mu    sync.Mutex
	shown bool
}

// Every is the indicator's refresh interval.
var Every = time.Second

// Start shows the indicator on w for the Session ref ("" for all of
// them), polled through c, the wait being wait; width is w's width in
// columns. Stop ends it.
func Start(ctx context.Context, c *client.Client, ref string, w io.Writer, width func() int, wait time.Duration) *Indicator {
	ctx, cancel := context.WithCancel(ctx)
	pr := &Indicator{w: w, cancel: cancel, done: make(chan struct{})}
	go pr.run(ctx, c, ref, width, wait)
	return pr
}

func (pr *Indicator) run(ctx context.Context, cl *client.Client, ref string, width func() int, wait time.Duration) {
	defer close(pr.done)
	start := time.Now()
	var c *rpc.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	state, last := "", ""
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ref != "" {
			if c == nil {
				c, _ = cl.Dial(ctx, ref)
			}
			if c != nil {
				state, last = pollSession(ctx, c, ref)
			}
		}
		line := Line(ref, state, last, time.Since(start), wait, width())
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

// Line renders the indicator, clipped to width-1 columns so it
// never wraps (a wrapped line could not be cleared with one CR).
func Line(ref, state, last string, elapsed, wait time.Duration, width int) string {
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

// Stop ends the indicator and clears its line. Safe on nil and repeated.
func (pr *Indicator) Stop() {
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
