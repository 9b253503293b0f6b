package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newScrollbackCommand(e *Env) *cobra.Command {
	var (
		lines  int
		before string
	)
	cmd := &cobra.Command{
		Use:   "scrollback SESSION [--lines N] [--before C]",
		Short: "Print a page of a Session's rendered screen history",
		Long: `Print a page of a Session's VT-rendered screen and history as JSON lines of
text. Page backwards by passing the returned "before" to --before.

-o text prints the rows themselves, oldest first, one per line (pipe it
into less); the --before of the older page is named on stderr.`,
		Example: `  dlgt scrollback review --lines 200 --pretty
  dlgt scrollback review --lines 1000 -o text | less`,
		Args: JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lines < 0 {
				return PrintFailure(cmd, Usagef("--lines must not be negative"))
			}
			params := rpc.ScrollbackReadParams{Session: args[0], Lines: lines, Before: before}
			return callAndPrint(e, cmd, (*client.Client).ScrollbackRead, params, func(w io.Writer, page rpc.ScrollbackPage) error {
				return render.Scrollback(w, cmd.ErrOrStderr(), args[0], page)
			})
		},
	}
	cmd.Flags().IntVar(&lines, "lines", 0, "how many of the newest rows to return (default 100; the daemon clamps to 1..10,000)")
	cmd.Flags().StringVar(&before, "before", "", "page position returned by the previous call")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
