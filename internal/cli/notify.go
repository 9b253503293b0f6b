package cli

import (
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/notify"
)

func newNotifyCommand(e *Env) *cobra.Command {
	var (
		on          string
		stateFile   string
		execCmd     string
		execTimeout time.Duration
		desktop     bool
		bell        bool
	)
	cmd := &cobra.Command{
		Use:   "notify [--on blocked,failed,idle] [--state FILE] [--exec CMD] [--desktop] [--bell]",
		Short: "Tell a person when a Session waits for an answer (or fails, or finishes)",
		Long: `Follow the events and tell a person, one line each, which Session waits
and what it asks:

  review (claude) is waiting: Bash rm -rf build …

On session.blocked the Session is read (session.read) for its pending
request; without one, the tool and command of the event are named, or just
"is blocked". --on chooses the events: blocked, failed, idle (default
blocked,failed). Each notification is printed on stdout (with --bell, a
terminal bell too); --desktop also sends it with notify-send (said on stderr
when notify-send is not on PATH); --exec CMD also runs /bin/sh -c CMD with
the event JSON on stdin and DLGT_SESSION, DLGT_ALIAS, DLGT_HARNESS,
DLGT_EVENT, DLGT_EVENT_SEQ and DLGT_MESSAGE set, one at a time, killed after
--exec-timeout, its output (the first 16 KiB) on stderr.

It runs until interrupted, survives daemon restarts and waits for a daemon
not running yet (it never starts one). --state FILE (default $DLGT_HOME/notify.seq) stores the last
event told, so a restarted dlgt notify neither repeats a notification nor
loses one that happened while it was down. See docs/cli.md for running it at
login.`,
		Example: `  dlgt notify
  dlgt notify --desktop --bell --on blocked,failed,idle
  dlgt notify --exec 'printf "%s\n" "$DLGT_MESSAGE" | mail -s "dlgt: $DLGT_EVENT" me'`,
		Args: JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			kinds, err := notify.ParseOn(on)
			if err != nil {
				return UsageFailure(cmd, err)
			}
			if execTimeout <= 0 {
				return UsageFailure(cmd, Usagef("--exec-timeout must be positive"))
			}
			c, err := e.Client()
			if err != nil {
				return PrintFailure(cmd, err)
			}
			if stateFile == "" {
				p, err := c.Paths()
				if err != nil {
					return PrintFailure(cmd, err)
				}
				stateFile = filepath.Join(p.Home, "notify.seq")
			}
			ctx := cmd.Context()
			err = notify.Run(ctx, c, notify.Options{
				On: kinds, Ref: e.sessionRef, StateFile: stateFile, Exec: execCmd, ExecTimeout: execTimeout,
				Desktop: desktop, Bell: bell, Out: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			})
			if err != nil && ctx.Err() == nil {
				return PrintFailure(cmd, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&on, "on", "blocked,failed", "the events to tell: blocked, failed, idle (comma-separated)")
	f.StringVar(&stateFile, "state", "", "store the last event told in this file (default $DLGT_HOME/notify.seq)")
	f.StringVar(&execCmd, "exec", "", "also run this shell command per notification (event JSON on stdin, DLGT_* variables)")
	f.DurationVar(&execTimeout, "exec-timeout", 30*time.Second, "kill an --exec command after this long")
	f.BoolVar(&desktop, "desktop", false, "also send a desktop notification with notify-send")
	f.BoolVar(&bell, "bell", false, "end each printed line with a terminal bell")
	return cmd
}
