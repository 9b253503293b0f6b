package cli

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/follow"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newEventsCommand(e *Env) *cobra.Command {
	var (
		session     string
		after       uint64
		following   bool
		stateFile   string
		execCmd     string
		execJobs    int
		execTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "events [--session S] [--after N | --state FILE] [--follow [--exec CMD]]",
		Short: "Print lifecycle events as NDJSON, one event per line",
		Long: `Print lifecycle events as NDJSON: each line is one raw event object (not
wrapped in ok:true), for notification adapters.

Without --follow the retained events after --after (a global event seq) are
printed and the command exits (at most 1,000 per call: continue with the
last seq). With --follow the command subscribes and prints each event as it
arrives until interrupted (Ctrl-C: exit status 130). A failure is printed as the usual
{"ok":false,"error":{...}} line with its exit status. -o text prints one
readable line per event (seq, type, Session as "alias (id)", execution,
reason or result);
events carry no time of their own, so with --follow each line starts with
the local time it was printed.

--follow survives daemon restarts: when the daemon goes away the command
says so on stderr, waits for it (it never starts one itself) and subscribes
again after the last seq it printed, so no event is lost or printed twice.
--state FILE makes the follower restartable itself: it starts after the seq
stored in FILE (unless --after is given; a missing FILE means from now, and
that seq is stored once subscribed) and stores the last seq it has handled
(printed, and its --exec command finished) after each event.

--exec CMD runs CMD with /bin/sh once per event, with the event JSON on stdin
and DLGT_EVENT_TYPE, DLGT_EVENT_SEQ, DLGT_SESSION_ID, DLGT_EXECUTION_SEQ and
DLGT_RESULT_STATUS set; at most --exec-jobs run at once (a slow CMD delays
the follower, it never loses events), each is killed after --exec-timeout,
their output goes to stderr, and a failing CMD is reported on stderr without
stopping the follow.`,
		Example: `  dlgt events --session review --follow | my-notifier
  dlgt events --follow --state ~/.dlgt-notify.seq --exec 'test "$DLGT_EVENT_TYPE" = session.idle && notify-send "dlgt" "$DLGT_SESSION_ID: $DLGT_RESULT_STATUS"'`,
		Args: JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			text, err := TextOutput(cmd)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			var aliases *follow.Aliases
			emit := func(line []byte) error {
				if text {
					var received time.Time
					if following {
						received = time.Now()
					}
					return render.Event(out, line, received, aliases.Of)
				}
				_, err := out.Write(append(line, '\n'))
				return err
			}
			p := rpc.EventReadParams{Session: session}
			if cmd.Flags().Changed("after") {
				p.After = &after
			} else if stateFile != "" {
				n, ok, err := follow.ReadState(stateFile)
				if err != nil {
					return PrintFailure(cmd, err)
				}
				if ok {
					p.After = &n
				}
			}
			if execCmd != "" && !following {
				return UsageFailure(cmd, Usagef("--exec needs --follow"))
			}
			if execJobs < 1 || execJobs > 64 {
				return UsageFailure(cmd, Usagef("--exec-jobs must be between 1 and 64"))
			}
			if execTimeout <= 0 {
				return UsageFailure(cmd, Usagef("--exec-timeout must be positive"))
			}
			c, err := e.Client()
			if err != nil {
				return PrintFailure(cmd, err)
			}
			ctx := cmd.Context()
			if text {
				aliases = follow.NewAliases(ctx, c)
			}
			opts := follow.Options{Params: p, StateFile: stateFile, Exec: execCmd, ExecJobs: execJobs,
				ExecTimeout: execTimeout, Stderr: cmd.ErrOrStderr(), Emit: emit}
			if !following {
				err = follow.Once(ctx, c, opts)
			} else {
				if session != "" && !strings.Contains(session, ":") {
					// An alias stops addressing the Session when it stops
					// (and after a daemon restart): follow it by its ID. (A
					// failed read leaves the alias: the subscription reports
					// the error itself.)
					if rd, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: session}); err == nil && rd.Session.ID != "" {
						opts.Params.Session = rd.Session.ID
					}
				}
				err = follow.Run(ctx, c, e.sessionRef, opts)
			}
			if err != nil && ctx.Err() == nil {
				var he *follow.HandleError
				if errors.As(err, &he) {
					return he.Err
				}
				return PrintFailure(cmd, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&session, "session", "", "only this Session's events (id or alias)")
	f.Uint64Var(&after, "after", 0, "print events with a greater seq")
	f.BoolVar(&following, "follow", false, "keep printing new events until interrupted, across daemon restarts")
	f.StringVar(&stateFile, "state", "", "start after the seq stored in this file and store the last one handled")
	f.StringVar(&execCmd, "exec", "", "with --follow: run this shell command once per event (event JSON on stdin)")
	f.IntVar(&execJobs, "exec-jobs", 4, "at most this many --exec commands at once")
	f.DurationVar(&execTimeout, "exec-timeout", time.Minute, "kill an --exec command after this long")
	AddOutputFlag(cmd)
	return cmd
}
