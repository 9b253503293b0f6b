package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionRespondCommand(e *Env) *cobra.Command {
	var (
		allow, deny           bool
		message, option, text string
		pending, requestID    string
	)
	cmd := &cobra.Command{
		Use:   "respond SESSION (--allow | --deny [--message M] | --option ID | --text T) [--pending ID] [--request-id ID]",
		Short: "Answer what a blocked Session asks (a tool permission), without a terminal",
		Long: `Answer the request a blocked Session waits on: allow or deny the tool call
it asks permission for (session read shows it as "pending"). A deny's
--message is what the harness's model receives as the reason.

--pending names the request to answer; without it the command reads the
Session and answers the request pending now, naming it, so a repeated
command can never answer a later request. --request-id defaults to one
made from the request and the answer: repeating the same command replays
the first answer. A request that was answered already, or withdrawn (a
person answered it in the terminal, the turn was canceled or ended),
fails with SESSION_UNAVAILABLE; a Session that is not blocked on a request
dlgt can answer fails the same way (attach to answer it in the terminal).

An answer allows or denies that one call only: it never widens the
Session's permissions. --option and --text answer questions, which no
harness reports to dlgt as answerable yet.`,
		Example: `  dlgt session respond review --allow
  dlgt session respond review --deny --message "not on main; use a branch"`,
		Args: JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := rpc.SessionRespondParams{Session: args[0], PendingID: pending, Message: message, Option: option, Text: text}
			n := 0
			for _, set := range []bool{allow, deny, option != "", text != ""} {
				if set {
					n++
				}
			}
			switch {
			case n != 1:
				return UsageFailure(cmd, Usagef("give exactly one of --allow, --deny, --option, --text"))
			case message != "" && !deny:
				return UsageFailure(cmd, Usagef("--message goes with --deny"))
			case allow:
				p.Decision = rpc.DecisionAllow
			case deny:
				p.Decision = rpc.DecisionDeny
			}
			if p.PendingID == "" {
				read, _, err := call(e, cmd.Context(), (*client.Client).SessionRead, rpc.SessionReadParams{Session: args[0]})
				if err != nil {
					return PrintFailure(cmd, err)
				}
				if read.Session.Pending == nil {
					return PrintFailure(cmd, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: read.Session.ID,
						Message: "the Session is " + read.Session.State + " with no pending request dlgt can answer"})
				}
				p.PendingID = read.Session.Pending.ID
			}
			p.RequestID = requestID
			if p.RequestID == "" {
				p.RequestID = "cli-" + p.PendingID + "-" + p.Decision + option
			}
			return callAndPrint(e, cmd, (*client.Client).SessionRespond, p, render.Respond)
		},
	}
	cmd.Flags().BoolVar(&allow, "allow", false, "allow the tool call this once")
	cmd.Flags().BoolVar(&deny, "deny", false, "deny the tool call (the model is told; see --message)")
	cmd.Flags().StringVar(&message, "message", "", "with --deny: the reason the model receives")
	cmd.Flags().StringVar(&option, "option", "", "answer a question with this option id")
	cmd.Flags().StringVar(&text, "text", "", "answer a question with this text")
	cmd.Flags().StringVar(&pending, "pending", "", "the pending request's id (default: the one pending now)")
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key (default: from the request and the answer)")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
