package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/statedir"
)

func newVersionCommand(e *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print dlgt's version as JSON",
		Example: `  dlgt version
  {"ok":true,"version":"0.1.0-dev","commit":"unknown"}
  dlgt version -o text
  dlgt 0.1.0-dev (commit unknown)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := TextOutput(cmd)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			if text {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "dlgt %s (commit %s)\n", statedir.Version, statedir.CommitID())
				return err
			}
			return PrintOK(cmd, struct {
				Version string `json:"version"`
				Commit  string `json:"commit"`
			}{statedir.Version, statedir.CommitID()})
		},
	}
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
