package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newScrollbackCommand(e *env) *cobra.Command {
	var (
		lines  int
		before string
	)
	cmd := &cobra.Command{
		Use:   "scrollback SESSION [--lines N] [--before C]",
		Short: "Print a page of a Session's rendered screen history",
		Long: `Print a page of a Session's VT-rendered screen and history as JSON lines of
text. Page backwards by passing the returned "before" to --before.`,
		Example: `  dlgt scrollback review --lines 200 --pretty`,
		Args:    jsonArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lines < 0 {
				return printFailure(cmd, usageError("--lines must not be negative"))
			}
			return e.callAndPrint(cmd, rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: args[0], Lines: lines, Before: before})
		},
	}
	cmd.Flags().IntVar(&lines, "lines", 0, "how many of the newest rows to return (default 100; the daemon clamps to 1..10,000)")
	cmd.Flags().StringVar(&before, "before", "", "page position returned by the previous call")
	addPretty(cmd)
	return cmd
}
