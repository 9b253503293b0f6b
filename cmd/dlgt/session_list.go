package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newSessionListCommand(e *env) *cobra.Command {
	var all, watch bool
	cmd := &cobra.Command{
		Use:   "list [--all]",
		Short: "List Sessions (terminal ones too with --all)",
		Long: `List Sessions (session.list): one JSON line by default; -o text prints an
aligned table (alias or id, state, harness, title, and how long ago each was
created and last changed).

--watch shows that table live, with each Session's last result, redrawn on
every event (event.subscribe) until Ctrl-C (exit status 130); on a terminal
it uses the alternate screen and restores the terminal on exit.`,
		Example: `  dlgt session list --all --pretty
  dlgt session list -o text
  dlgt session list --watch`,
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			if watch {
				return e.watchSessions(cmd, all)
			}
			if !text {
				return e.callAndPrint(cmd, rpc.MethodSessionList, rpc.SessionListParams{All: all})
			}
			raw, err := e.call(cmd.Context(), rpc.MethodSessionList, rpc.SessionListParams{All: all})
			if err != nil {
				return printFailure(cmd, err)
			}
			var res rpc.SessionListResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return printFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected session.list result: %v", err))
			}
			return writeSessionTable(cmd.OutOrStdout(), res.Sessions, time.Now(), nil)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include stopped and failed Sessions")
	cmd.Flags().BoolVar(&watch, "watch", false, "a live table of the Sessions, redrawn on events, until Ctrl-C")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}
