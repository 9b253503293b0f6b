package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// launchFlagNames are the create flags session send accepts only with --resume.
var launchFlagNames = []string{"cwd", "title", "alias", "model", "effort", "harness-option", "no-auto-approve", "startup-timeout", "profile"}

func newSessionSendCommand(e *env) *cobra.Command {
	var (
		opts      launchOptions
		requestID string
		resume    bool
		fromStdin bool
	)
	cmd := &cobra.Command{
		Use:   "send SESSION --request-id ID [--resume [launch flags]] (-- PROMPT | --stdin)",
		Short: "Submit a prompt to an idle Session",
		Long: `Submit a prompt to an idle Session (by id or alias).

With --resume, a Session this daemon does not hold is relaunched first; the
client's environment is sent and the launch flags of session create (--cwd,
--title, --alias, --model, --effort, --harness-option, --no-auto-approve,
--startup-timeout, --profile) are accepted. Without --resume those flags are
a usage error. With --stdin the prompt is read from stdin byte for byte.`,
		Example: `  dlgt session send review --request-id r3 -- "Now fix the failing test"
  dlgt session send 0199a4c2-... --resume --cwd . --request-id r4 -- "Continue"`,
		Args: jsonArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() == 0 {
				return printFailure(cmd, usageError("SESSION must come before --"))
			}
			prompt, err := readPrompt(cmd, fromStdin, args[1:])
			if err != nil {
				return printFailure(cmd, err)
			}
			if requestID == "" {
				return printFailure(cmd, usageError("--request-id is required"))
			}
			params := rpc.SessionSendParams{Session: args[0], Prompt: prompt, RequestID: requestID}
			if !resume {
				for _, name := range launchFlagNames {
					if cmd.Flags().Changed(name) {
						return printFailure(cmd, usageError("--%s needs --resume", name))
					}
				}
			} else {
				launch, err := opts.resolve(cmd, e, "", true)
				if err != nil {
					return printFailure(cmd, err)
				}
				launch.Prompt, launch.RequestID = prompt, requestID
				params = client.Launch{Params: launch}.ResumeParams(args[0])
			}
			return callAndPrint(e, cmd, (*client.Client).SessionSend, params, render.Receipt)
		},
	}
	opts.register(cmd)
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: retrying with the same id and parameters replays the receipt")
	cmd.Flags().BoolVar(&resume, "resume", false, "relaunch the Session if this daemon does not hold it")
	cmd.Flags().BoolVar(&fromStdin, "stdin", false, "read the prompt from stdin (byte-exact)")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}
