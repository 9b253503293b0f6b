package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newSessionStopCommand(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "stop SESSION [--force]",
		Short:   "Stop a Session's harness process",
		Example: `  dlgt session stop review --force`,
		Args:    jsonArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callAndPrint(cmd, rpc.MethodSessionStop, rpc.SessionStopParams{Session: args[0], Force: force})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "stop even while an execution is active")
	addPretty(cmd)
	return cmd
}
