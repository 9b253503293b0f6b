package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/ui"
	"github.com/dlgt-dev/dlgt/rpc"
)

const uiLong = `A full-screen view of every Session of the daemon, for a person to watch,
steer and answer them from one place.

The list shows each Session's state (! blocked, ✗ failed, ● busy, ○ idle,
· stopped), harness, name, title, age, last result (its status and first
line) and tokens, sorted with what needs a person first: blocked, failed,
then busy, then idle and stopped. It follows the daemon's events
(event.subscribe) and re-reads only the Session an event is about; when the
daemon goes away the header says "reconnecting…" until it is back. Below
it, the selected Session's screen (its newest rows) and, for a blocked
Session, the request it waits on in full.

Keys: ↑/↓ select, a attach (Ctrl-] comes back), y/n allow/deny a pending
permission (n takes an optional reason for the model), 1-9 answer a
pending question, s send a follow-up, c cancel, x stop and r restart (each
asks y/N), o open the last result in $PAGER, N new delegation, ? help, q
or Ctrl-C quit. Every key counts, however fast they come; a paste moves
the selection only. Each key says what it did on the bottom line. NO_COLOR
turns colors off. Needs a terminal.`

func newUICommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "A full-screen terminal view of every Session, with keys to act on them",
		Long:  uiLong,
		Example: `  dlgt ui
  NO_COLOR=1 dlgt ui`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !e.Terminal(e.Stdin) || !e.Terminal(e.Stdout) {
				return cli.PrintFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "dlgt ui needs a terminal on stdin and stdout"))
			}
			c, err := e.Client()
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			var pre []string
			if e.HostFlag != "" {
				pre = []string{"--host", e.HostFlag}
			}
			err = ui.Run(cmd.Context(), ui.Options{Client: c, Exe: e.Exe, ExeArgs: pre, NoColor: e.Getenv("NO_COLOR") != ""})
			if err != nil {
				return cli.PrintFailure(cmd, rpc.Errorf(rpc.CodeInternal, "dlgt ui: %v", err))
			}
			return nil
		},
	}
	return cmd
}
