package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionCancelCommand(e *Env) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "cancel SESSION [--timeout D]",
		Short: "Interrupt a Session's active execution",
		Long: `Interrupt a Session's active execution and wait for it to terminalize.

If --timeout expires first the command fails with CANCEL_TIMEOUT (exit
status 3); cancellation continues in the daemon. A Session with no active
execution has nothing to cancel: the command succeeds without a "result"
(with -o text: "nothing to cancel").`,
		Example: `  dlgt session cancel review --timeout 30s`,
		Args:    JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := rpc.SessionCancelParams{Session: args[0]}
			if cmd.Flags().Changed("timeout") {
				ms, err := durationMS("timeout", timeout)
				if err != nil {
					return PrintFailure(cmd, err)
				}
				p.TimeoutMS = &ms
			}
			return callAndPrint(e, cmd, (*client.Client).SessionCancel, p, render.Cancel)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long to wait for the execution to stop (daemon default if unset)")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
