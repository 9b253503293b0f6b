package follow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// watchMaxReads bounds the session.read calls one refresh of Watch makes
// for the LAST RESULT column; Sessions past it show "…".
const watchMaxReads = 64

// watchTick refreshes the relative times even when no event arrives.
const watchTick = 5 * time.Second

// WatchOptions configure Watch.
type WatchOptions struct {
	// All lists terminal Sessions too.
	All bool
	// TTY draws on the alternate screen with the cursor hidden (restored
	// on return); otherwise each refresh prints the table again after a
	// blank line.
	TTY bool
	// Width is how many columns the table may take, asked before every
	// frame (a resized terminal fits at the next).
	Width func() int
}

// Watch is `dlgt session list --watch`: a live table of the Sessions on
// out, redrawn on every event of event.subscribe (and every few seconds
// for the "ago" columns) until ctx ends, which returns nil. A failure to
// subscribe, to list, or a lost subscription is returned.
func Watch(ctx context.Context, c *client.Client, out io.Writer, opts WatchOptions) error {
	rc, err := c.Dial(ctx, "")
	if err != nil {
		return err
	}
	defer rc.Close()
	_, next, err := rc.Subscribe(ctx, rpc.EventSubscribe.Name, rpc.EventReadParams{})
	if err != nil {
		return err
	}
	// One pending wake-up at most: events that arrive during a redraw
	// coalesce into the next one.
	changed := make(chan struct{}, 1)
	subErr := make(chan error, 1)
	go func() {
		for {
			if _, err := next(); err != nil {
				subErr <- err
				return
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	if opts.TTY {
		io.WriteString(out, "\x1b[?1049h\x1b[?25l")
		defer io.WriteString(out, "\x1b[?25h\x1b[?1049l")
	}
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	for n := 0; ; n++ {
		frame, err := watchFrame(ctx, c, opts.All, opts.Width())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch {
		case opts.TTY:
			io.WriteString(out, "\x1b[H\x1b[2J")
		case n > 0:
			io.WriteString(out, "\n")
		}
		if _, err := out.Write(frame); err != nil {
			return &HandleError{Err: err}
		}
		select {
		case <-changed:
		case <-tick.C:
		case err := <-subErr:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// watchFrame renders one refresh of the table, width columns wide at most.
func watchFrame(ctx context.Context, c *client.Client, all bool, width int) ([]byte, error) {
	list, err := c.SessionList(ctx, rpc.SessionListParams{All: all})
	if err != nil {
		return nil, err
	}
	last := map[string]string{}
	for i, s := range list.Sessions {
		if i >= watchMaxReads {
			last[s.ID] = "…"
			continue
		}
		rd, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: s.ID})
		if err != nil {
			last[s.ID] = "?"
			continue
		}
		last[s.ID] = render.ResultSummary(rd.Result)
	}
	now := time.Now()
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "dlgt sessions at %s (Ctrl-C to quit)\n\n", now.Format("15:04:05"))
	err = render.SessionTable(&buf, list.Sessions, now, func(s rpc.Session) string { return last[s.ID] }, width)
	return buf.Bytes(), err
}
