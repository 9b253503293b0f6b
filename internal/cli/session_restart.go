package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionRestartCommand(e *Env) *cobra.Command {
	var startupTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "restart SESSION [--startup-timeout D]",
		Short: "Relaunch a Session's harness with this client's environment",
		Long: `Relaunch a Session's harness with its original launch options and this
client's current environment.`,
		Example: `  dlgt session restart review`,
		Args:    JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ms, err := durationMS("startup-timeout", startupTimeout)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			return callAndPrint(e, cmd, (*client.Client).SessionRestart, rpc.SessionRestartParams{
				Session: args[0], StartupTimeoutMS: ms, Environment: e.clientEnvironment(),
			}, render.SessionResult)
		},
	}
	cmd.Flags().DurationVar(&startupTimeout, "startup-timeout", 0, "how long to wait for the harness to start")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
