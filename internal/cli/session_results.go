package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/render"
)

func newSessionResultsCommand(e *Env) *cobra.Command {
	var after uint64
	cmd := &cobra.Command{
		Use:   "results SESSION [--after N]",
		Short: "Print every retained result of a Session, oldest first",
		Long: `Print every result the daemon retains for a Session (the newest 128, or
16 MiB of them), oldest first, including those of earlier daemon lifetimes:
session.fetch with after_execution, then its cursor while has_more, with each
chunked final_text joined. --after N starts after execution N.

JSON prints {"ok":true,"session":ID,"results":[...],"cursor":C}: C is a
position after the last result returned, to fetch from for later ones.
-o text prints each result for a person.`,
		Example: `  dlgt session results review
  dlgt session results review --after 3 -o text`,
		Args: JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := TextOutput(cmd)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			c, err := e.Client()
			if err != nil {
				return PrintFailure(cmd, err)
			}
			out, err := c.Results(cmd.Context(), args[0], after)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			if text {
				render.Results(cmd.OutOrStdout(), out.Session, out.Results, time.Now())
				return nil
			}
			return PrintOK(cmd, out)
		},
	}
	cmd.Flags().Uint64Var(&after, "after", 0, "start after this execution_seq")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
