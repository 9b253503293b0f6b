package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newModelsCommand(e *Env) *cobra.Command {
	var (
		harness       string
		includeHidden bool
	)
	cmd := &cobra.Command{
		Use:   "models --harness NAME [--include-hidden]",
		Short: "List the models a harness offers",
		Example: `  dlgt models --harness codex --pretty
  dlgt models --harness claude -o text`,
		Args: JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if harness == "" {
				return PrintFailure(cmd, Usagef("--harness is required (%s)", HarnessList(e.Registry())))
			}
			return callAndPrint(e, cmd, (*client.Client).ModelList, rpc.ModelListParams{Harness: harness, IncludeHidden: includeHidden}, render.ModelTable)
		},
	}
	cmd.Flags().StringVar(&harness, "harness", "", HarnessList(e.Registry()))
	cmd.Flags().BoolVar(&includeHidden, "include-hidden", false, "include hidden models")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
