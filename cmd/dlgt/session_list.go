package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newSessionListCommand(e *env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "list [--all]",
		Short:   "List Sessions (terminal ones too with --all)",
		Example: `  dlgt session list --all --pretty`,
		Args:    jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callAndPrint(cmd, rpc.MethodSessionList, rpc.SessionListParams{All: all})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include stopped and failed Sessions")
	addPretty(cmd)
	return cmd
}
