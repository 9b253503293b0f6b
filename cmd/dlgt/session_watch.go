package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// watchMaxReads bounds the session.read calls one refresh of --watch makes
// for the LAST RESULT column; Sessions past it show "…".
const watchMaxReads = 64

// watchTick refreshes the relative times even when no event arrives.
const watchTick = 5 * time.Second

// watchSessions is `session list --watch`: a live table of the Sessions,
// redrawn on every event of event.subscribe (and every few seconds for the
// "ago" columns) until interrupted. On a terminal it draws on the
// alternate screen with the cursor hidden and restores both on exit;
// otherwise each refresh prints the table again after a blank line.
func (e *env) watchSessions(cmd *cobra.Command, all bool) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	c, err := e.connect(ctx)
	if err != nil {
		return printFailure(cmd, err)
	}
	defer c.Close()
	_, next, err := c.Subscribe(ctx, rpc.MethodEventSubscribe, rpc.EventReadParams{})
	if err != nil {
		return printFailure(cmd, err)
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
	tty := e.terminal(out)
	if tty {
		io.WriteString(out, "\x1b[?1049h\x1b[?25l")
		defer io.WriteString(out, "\x1b[?25h\x1b[?1049l")
	}
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	for n := 0; ; n++ {
		frame, err := e.watchFrame(ctx, all, e.tableWidth(out))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return printFailure(cmd, err)
		}
		switch {
		case tty:
			io.WriteString(out, "\x1b[H\x1b[2J")
		case n > 0:
			io.WriteString(out, "\n")
		}
		if _, err := out.Write(frame); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-tick.C:
		case err := <-subErr:
			if ctx.Err() != nil {
				return nil
			}
			return printFailure(cmd, err)
		case <-ctx.Done():
			return nil
		}
	}
}

// watchFrame renders one refresh of the table, width columns wide at most
// (taken again for every frame, so a resized terminal fits at the next).
func (e *env) watchFrame(ctx context.Context, all bool, width int) ([]byte, error) {
	raw, err := e.call(ctx, rpc.MethodSessionList, rpc.SessionListParams{All: all})
	if err != nil {
		return nil, err
	}
	var list rpc.SessionListResult
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, rpc.Errorf(rpc.CodeInternal, "unexpected session.list result: %v", err)
	}
	last := map[string]string{}
	for i, s := range list.Sessions {
		if i >= watchMaxReads {
			last[s.ID] = "…"
			continue
		}
		raw, err := e.call(ctx, rpc.MethodSessionRead, rpc.SessionReadParams{Session: s.ID})
		if err != nil {
			last[s.ID] = "?"
			continue
		}
		var rd rpc.SessionReadResult
		if json.Unmarshal(raw, &rd) == nil {
			last[s.ID] = render.ResultSummary(rd.Result)
		}
	}
	now := time.Now()
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "dlgt sessions at %s (Ctrl-C to quit)\n\n", now.Format("15:04:05"))
	err = render.SessionTable(&buf, list.Sessions, now, func(s rpc.Session) string { return last[s.ID] }, width)
	return buf.Bytes(), err
}
