package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/follow"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newEventsCommand(e *env) *cobra.Command {
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
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			var aliases *sessionAliases
			if text {
				aliases = &sessionAliases{e: e, ctx: cmd.Context()}
			}
			emit := func(line []byte) error {
				if text {
					var received time.Time
					if following {
						received = time.Now()
					}
					return render.Event(out, line, received, aliases.of)
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
					return printFailure(cmd, err)
				}
				if ok {
					p.After = &n
				}
			}
			if execCmd != "" && !following {
				return usageFailure(cmd, usageError("--exec needs --follow"))
			}
			if execJobs < 1 || execJobs > 64 {
				return usageFailure(cmd, usageError("--exec-jobs must be between 1 and 64"))
			}
			if execTimeout <= 0 {
				return usageFailure(cmd, usageError("--exec-timeout must be positive"))
			}
			ctx := cmd.Context()
			if !following {
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
					var f follow.Fields
					if stateFile != "" && json.Unmarshal(line, &f) == nil {
						if err := follow.WriteState(stateFile, f.Seq); err != nil {
							return printFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "--state %s: %v", stateFile, err))
						}
					}
				}
				return nil
			}
			if session != "" && !strings.Contains(session, ":") {
				// An alias stops addressing the Session when it stops (and
				// after a daemon restart): follow it by its ID.
				// (A failed read leaves the alias: the subscription reports
				// the error itself.)
				if raw, err := e.call(ctx, rpc.MethodSessionRead, rpc.SessionReadParams{Session: session}); err == nil {
					var rd rpc.SessionReadResult
					if json.Unmarshal(raw, &rd) == nil && rd.Session.ID != "" {
						p.Session = rd.Session.ID
					}
				}
			}
			c, err := e.client()
			if err != nil {
				return printFailure(cmd, err)
			}
			err = follow.Run(ctx, c, e.sessionRef, follow.Options{Params: p, StateFile: stateFile, Exec: execCmd, ExecJobs: execJobs,
				ExecTimeout: execTimeout, Stderr: cmd.ErrOrStderr(), Emit: emit})
			if err != nil && ctx.Err() == nil {
				var he *follow.HandleError
				if errors.As(err, &he) {
					return he.Err
				}
				return printFailure(cmd, err)
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
	addOutputFlag(cmd)
	return cmd
}

// sessionAliases gives -o text events their Sessions' aliases, from
// session.list all:true: listed once, and again when an event names a
// Session the last list lacked (a new one, during --follow). Bounded: an
// id still unknown after a fresh list is remembered as having none, and
// at most maxAliasIDs ids are kept.
type sessionAliases struct {
	e     *env
	ctx   context.Context
	names map[string]string
}

const maxAliasIDs = 4096

func (a *sessionAliases) of(id string) string {
	if name, ok := a.names[id]; ok {
		return name
	}
	if a.names == nil || len(a.names) >= maxAliasIDs {
		a.names = map[string]string{}
	}
	if raw, err := a.e.call(a.ctx, rpc.MethodSessionList, rpc.SessionListParams{All: true}); err == nil {
		var list rpc.SessionListResult
		if json.Unmarshal(raw, &list) == nil {
			for _, s := range list.Sessions {
				if len(a.names) < maxAliasIDs {
					a.names[s.ID] = s.Alias
				}
			}
		}
	}
	if _, ok := a.names[id]; !ok {
		a.names[id] = "" // a failed list, or a Session without an alias
	}
	return a.names[id]
}
