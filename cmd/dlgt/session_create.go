package main

import (
	"github.com/spf13/cobra"

	"dlgt/rpc"
)

func newSessionCreateCommand(e *env) *cobra.Command {
	var (
		opts      launchOptions
		harness   string
		requestID string
		fromStdin bool
	)
	cmd := &cobra.Command{
		Use:   "create --harness claude|codex --cwd DIR --title T --request-id ID [flags] (-- PROMPT | --stdin)",
		Short: "Launch a harness in a new Session and submit the first prompt",
		Long: `Launch a harness in a new Session and submit the first prompt.

Required: --harness (unless --profile sets it), --title, --request-id, and
the prompt, either after -- or on stdin with --stdin. Missing any of them is
INVALID_ARGUMENT (exit 1) before the daemon is contacted.

Permissions: by default the harness runs without asking (Claude Code in
permission mode auto, Codex with approval_policy never). With
--no-auto-approve Codex may ask and the Session blocks until someone answers
(session attach); Claude Code's own default does not ask either, so add
--harness-option permission-mode=default to get its prompts.

The Session's environment is this client's environment, overlaid with the
profile's environment; the profile's harness, model, effort and
harness_options apply unless the flag is given explicitly (client environment
< profile < explicit flags). A relative --cwd is resolved by the client.
With --stdin the prompt is read from stdin byte for byte (a trailing newline
is kept). The receipt's cursor is where to start fetching.`,
		Example: `  dlgt session create --harness claude --cwd . --title "review" --request-id r1 -- "Review the diff on this branch"
  git diff | dlgt session create --profile review --cwd ~/src/app --title diff --request-id r2 --stdin`,
		Args: jsonArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := readPrompt(cmd, fromStdin, args)
			if err != nil {
				return printFailure(cmd, err)
			}
			plan, err := opts.resolve(cmd, e, harness)
			if err != nil {
				return printFailure(cmd, err)
			}
			if plan.harness == "" {
				return printFailure(cmd, usageError("--harness is required (claude or codex) unless the profile sets it"))
			}
			if opts.title == "" {
				return printFailure(cmd, usageError("--title is required"))
			}
			if requestID == "" {
				return printFailure(cmd, usageError("--request-id is required"))
			}
			if plan.cwd == "" && !e.remote() {
				wd, err := workingDir()
				if err != nil {
					return printFailure(cmd, err)
				}
				plan.cwd = wd
			}
			return callAndPrintAs(e, cmd, rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: opts.title, Alias: opts.alias, Harness: plan.harness, Cwd: plan.cwd,
				Model: plan.model, Effort: plan.effort, HarnessOptions: plan.harnessOptions,
				AutoApprove: plan.autoApprove, Prompt: prompt, RequestID: requestID,
				StartupTimeoutMS: plan.startupTimeoutMS, Environment: plan.environment,
			}, writeReceiptText)
		},
	}
	opts.register(cmd)
	cmd.Flags().StringVar(&harness, "harness", "", "harness to launch: claude or codex (required unless --profile sets it)")
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key, required: retrying with the same id and parameters replays the receipt")
	cmd.Flags().BoolVar(&fromStdin, "stdin", false, "read the prompt from stdin (byte-exact)")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}
