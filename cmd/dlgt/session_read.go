package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newSessionReadCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "read SESSION",
		Short:   "Print a Session's snapshot and its latest retained result",
		Example: `  dlgt session read review`,
		Args:    jsonArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callAndPrint(cmd, rpc.MethodSessionRead, rpc.SessionReadParams{Session: args[0]})
		},
	}
	addPretty(cmd)
	return cmd
}
