package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newSessionCommand(e *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Create, drive and inspect delegated Sessions",
		Long: `Create, drive and inspect delegated Sessions.

Each subcommand prints one compact JSON line: {"ok":true,...} with the
method's result fields, or {"ok":false,"error":{...}} with the exit status of
the error code (see dlgt --help). With -o text it prints its result for a
person instead: a table, or a few labelled lines. Two print something else:
diff prints the unified diff itself (-o text its stat, -o json the JSON
line), and attach hands the terminal over to the Session and prints its JSON
line once you detach (Ctrl-]).`,
		Example: `  dlgt session create --harness claude --cwd . --title review --request-id r1 -- "Review the diff"
  dlgt session fetch review --wait 15m --until result`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(
		newSessionCreateCommand(e),
		newSessionSendCommand(e),
		newSessionFetchCommand(e),
		newSessionReadCommand(e),
		newSessionResultsCommand(e),
		newSessionListCommand(e),
		newSessionCancelCommand(e),
		newSessionRespondCommand(e),
		newSessionStopCommand(e),
		newSessionDiffCommand(e),
		newSessionWarmCommand(e),
		newSessionRestartCommand(e),
	)
	return cmd
}
