package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// launchFlagNames are the create flags session send accepts only with --resume.
var launchFlagNames = []string{"cwd", "title", "alias", "model", "effort", "harness-option", "no-auto-approve", "startup-timeout", "profile"}

func newSessionSendCommand(e *Env) *cobra.Command {
	var (
		opts      LaunchOptions
		requestID string
		resume    bool
		fromStdin bool
		steer     bool
		queue     bool
	)
	cmd := &cobra.Command{
		Use:   "send SESSION --request-id ID [--steer | --queue | --resume [launch flags]] (-- PROMPT | --stdin)",
		Short: "Submit a prompt to an idle Session, or steer or queue behind a busy one",
		Long: `Submit a prompt to an idle Session (by id or alias). A busy Session
refuses a plain send (SESSION_BUSY, exit 5); two flags reach it anyway:

  --steer  types the prompt into the running execution, which takes it at
           its next model request (Claude Code, Codex: capabilities.steering
           in dlgt harnesses); the receipt (steered:true) names that
           execution, whose result is the one to wait for. The running
           execution_seq is read first; if it ended meanwhile, or the
           harness cannot steer (Gemini CLI), the steer is refused
           (INVALID_ARGUMENT, exit 1) and nothing is typed.
  --queue  holds the prompt and runs it as the next execution once the
           running one ends (at most 4 queued per Session; session cancel
           clears them). The receipt (queued:true) names that execution and
           its cursor waits for its result. On an idle Session it is a plain
           send.

With --resume, a Session this daemon does not hold is relaunched first; the
client's environment is sent and the launch flags of session create (--cwd,
--title, --alias, --model, --effort, --harness-option, --no-auto-approve,
--startup-timeout, --profile) are accepted. Without --resume those flags are
a usage error. With --stdin the prompt is read from stdin byte for byte.`,
		Example: `  dlgt session send review --request-id r3 -- "Now fix the failing test"
  dlgt session send 0199a4c2-... --resume --cwd . --request-id r4 -- "Continue"
  dlgt session send review --steer --request-id r5 -- "Use the v2 API, not v1"
  dlgt session send review --queue --request-id r6 -- "Then update the changelog"`,
		Args: JSONArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() == 0 {
				return PrintFailure(cmd, Usagef("SESSION must come before --"))
			}
			prompt, err := readPrompt(cmd, fromStdin, args[1:])
			if err != nil {
				return PrintFailure(cmd, err)
			}
			if requestID == "" {
				return PrintFailure(cmd, Usagef("--request-id is required"))
			}
			params := rpc.SessionSendParams{Session: args[0], Prompt: prompt, RequestID: requestID, Queue: queue}
			switch {
			case steer && queue:
				return PrintFailure(cmd, Usagef("--steer and --queue exclude each other"))
			case (steer || queue) && resume:
				return PrintFailure(cmd, Usagef("--resume cannot steer or queue"))
			case steer:
				c, err := e.Client()
				if err != nil {
					return PrintFailure(cmd, err)
				}
				rd, err := c.SessionRead(cmd.Context(), rpc.SessionReadParams{Session: args[0]})
				if err != nil {
					return PrintFailure(cmd, err)
				}
				params = client.SteerParams(args[0], rd, prompt, requestID)
			}
			if !resume {
				for _, name := range launchFlagNames {
					if cmd.Flags().Changed(name) {
						return PrintFailure(cmd, Usagef("--%s needs --resume", name))
					}
				}
			} else {
				launch, err := opts.resolve(cmd, e, "", true)
				if err != nil {
					return PrintFailure(cmd, err)
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
	cmd.Flags().BoolVar(&steer, "steer", false, "type the prompt into the running execution (harnesses with capabilities.steering)")
	cmd.Flags().BoolVar(&queue, "queue", false, "run the prompt as the next execution once the running one ends")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
