package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newModelsCommand(e *env) *cobra.Command {
	var (
		harness       string
		includeHidden bool
	)
	cmd := &cobra.Command{
		Use:     "models --harness claude|codex [--include-hidden]",
		Short:   "List the models a harness offers",
		Example: `  dlgt models --harness codex --pretty`,
		Args:    jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if harness == "" {
				return printFailure(cmd, usageError("--harness is required (claude or codex)"))
			}
			return e.callAndPrint(cmd, rpc.MethodModelList, rpc.ModelListParams{Harness: harness, IncludeHidden: includeHidden})
		},
	}
	cmd.Flags().StringVar(&harness, "harness", "", "claude or codex")
	cmd.Flags().BoolVar(&includeHidden, "include-hidden", false, "include hidden models")
	addPretty(cmd)
	return cmd
}
