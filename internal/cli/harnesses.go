package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newHarnessesCommand(e *Env) *cobra.Command {
	var harness string
	cmd := &cobra.Command{
		Use:   "harnesses [--harness H]",
		Short: "List the supported harnesses, their binaries and capabilities",
		Long: `List the supported harnesses (harness.list): each one's binary, whether it
is available, its version, the tested version and its capabilities.

Binaries are located as a session create from this shell would locate them:
with this shell's PATH and DLGT_*_BIN variables (sent as the environment),
not the daemon's, which may have been started from another shell. The
answer's "environment" says so ("caller").`,
		Example: `  dlgt harnesses --pretty
  dlgt harnesses -o text`,
		Args: JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Listed as a session create from this shell would find
			// them (the client sends this environment): the daemon may
			// have been started from another.
			p := rpc.HarnessListParams{Harness: harness}
			return callAndPrint(e, cmd, (*client.Client).HarnessList, p, render.HarnessTable)
		},
	}
	cmd.Flags().StringVar(&harness, "harness", "", "only this harness")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
