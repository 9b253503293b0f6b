package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newEventsCommand(e *env) *cobra.Command {
	var (
		session string
		after   uint64
		follow  bool
	)
	cmd := &cobra.Command{
		Use:   "events [--session S] [--after N] [--follow]",
		Short: "Print lifecycle events as NDJSON, one event per line",
		Long: `Print lifecycle events as NDJSON: each line is one raw event object (not
wrapped in ok:true), for notification adapters.

Without --follow the retained events after --after (a global event seq) are
printed and the command exits (at most 1,000 per call: continue with the
last seq). With --follow the command subscribes and prints each event as it
arrives until interrupted (Ctrl-C: exit status 130). A failure is printed as the usual
{"ok":false,"error":{...}} line with its exit status. -o text prints one
readable line per event (local time printed, seq, type, Session, execution,
reason or result); events carry no time of their own.`,
		Example: `  dlgt events --session review --follow | my-notifier`,
		Args:    jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			emit := func(line []byte) error {
				if text {
					return writeEventText(out, line, time.Now())
				}
				_, err := out.Write(append(line, '\n'))
				return err
			}
			p := rpc.EventReadParams{Session: session}
			if cmd.Flags().Changed("after") {
				p.After = &after
			}
			ctx := cmd.Context()
			if !follow {
				raw, err := e.call(ctx, rpc.MethodEventRead, p)
				if err != nil {
					return printFailure(cmd, err)
				}
				var events []json.RawMessage
				if err := json.Unmarshal(raw, &events); err != nil {
					return printFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected event.read result: %v", err))
				}
				for _, ev := range events {
					line, err := rpc.Marshal(ev)
					if err != nil {
						return err
					}
					if err := emit(line); err != nil {
						return err
					}
				}
				return nil
			}
			c, err := e.connect(ctx)
			if err != nil {
				return printFailure(cmd, err)
			}
			defer c.Close()
			_, next, err := c.Subscribe(ctx, rpc.MethodEventSubscribe, p)
			if err != nil {
				return printFailure(cmd, err)
			}
			for {
				line, err := next()
				if err != nil {
					if ctx.Err() != nil {
						return nil // interrupted: the normal way out
					}
					return printFailure(cmd, err)
				}
				if err := emit(line); err != nil {
					return err
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&session, "session", "", "only this Session's events (id or alias)")
	f.Uint64Var(&after, "after", 0, "print events with a greater seq")
	f.BoolVar(&follow, "follow", false, "keep printing new events until interrupted")
	addOutputFlag(cmd)
	return cmd
}
