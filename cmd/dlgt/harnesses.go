package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newHarnessesCommand(e *env) *cobra.Command {
	var harness string
	cmd := &cobra.Command{
		Use:     "harnesses [--harness H]",
		Short:   "List the supported harnesses, their binaries and capabilities",
		Example: `  dlgt harnesses --pretty`,
		Args:    jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callAndPrint(cmd, rpc.MethodHarnessList, rpc.HarnessListParams{Harness: harness})
		},
	}
	cmd.Flags().StringVar(&harness, "harness", "", "only this harness")
	addPretty(cmd)
	return cmd
}
