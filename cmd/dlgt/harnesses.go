package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newHarnessesCommand(e *env) *cobra.Command {
	var harness string
	cmd := &cobra.Command{
		Use:   "harnesses [--harness H]",
		Short: "List the supported harnesses, their binaries and capabilities",
		Example: `  dlgt harnesses --pretty
  dlgt harnesses -o text`,
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callAndPrintAs(e, cmd, rpc.MethodHarnessList, rpc.HarnessListParams{Harness: harness}, render.HarnessTable)
		},
	}
	cmd.Flags().StringVar(&harness, "harness", "", "only this harness")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}
