package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionReadCommand(e *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "read SESSION",
		Short: "Print a Session's snapshot and its latest retained result",
		Long: `Print a Session's snapshot and its latest retained result (session.read).

-o text prints them for people in one block: the Session and its state,
the result's status and timing, its error, what it cost (usage: input,
cache and output tokens and model requests, as the harness recorded them),
and its final text as it is.`,
		Example: `  dlgt session read review
  dlgt session read review -o text`,
		Args: JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callAndPrint(e, cmd, (*client.Client).SessionRead, rpc.SessionReadParams{Session: args[0]}, func(w io.Writer, res rpc.SessionReadResult) error {
				render.Read(w, res, time.Now())
				return nil
			})
		},
	}
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
