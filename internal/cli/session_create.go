package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionCreateCommand(e *Env) *cobra.Command {
	var (
		opts      LaunchOptions
		harness   string
		requestID string
		fromStdin bool
		wait      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create --harness NAME [--cwd DIR] [--title T] [--request-id ID] [--wait D] [flags] (-- PROMPT | --stdin)",
		Short: "Launch a harness in a new Session and submit the first prompt",
		Long: `Launch a harness in a new Session and submit the first prompt.

Required: --harness (unless --profile sets it) and the prompt, either
after -- or on stdin with --stdin. Missing either is INVALID_ARGUMENT (exit
1) naming every one that is missing, before the daemon is contacted.

Without --title the title is the prompt's first line (at most 60
characters). Without --request-id the command makes one (cli-<24 hex
digits>) and shows it: the receipt carries it as request_id (-o text: a
"request" line; with --wait it goes to stderr). Retrying a create with that
id replays it instead of starting a second Session; a script that may retry
chooses its own id up front.

With --wait D the command also waits up to D for this execution's result,
as "session fetch SESSION --cursor <receipt cursor> --until result --wait D"
does, and prints what that fetch prints instead of the receipt (with -o
text, the fetch's text form: the result and its final_text). A create that
fails prints its own error and exits non-zero, so

  dlgt session create --harness claude --title t --request-id r1 --wait 10m -- "..."

is the whole round trip in one command.

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
is kept). The receipt's cursor is where to start fetching.

With --worktree the daemon makes a git worktree of the repository holding
--cwd on a new branch from its HEAD (--worktree=BRANCH names it; the
default is dlgt/<alias>), under its state directory, and launches the
harness there (in the same subdirectory). Outside a repository, or with a
branch that exists, the create is refused (INVALID_ARGUMENT) and nothing
is made. See "dlgt session diff" and "dlgt session stop --remove-worktree".`,
		Example: `  dlgt session create --harness claude -o text -- "Review the diff on this branch"
  dlgt session create --harness claude --cwd . --title "review" --request-id r1 -- "Review the diff on this branch"
  dlgt session create --harness claude --title review --request-id r3 --wait 10m -o text -- "Review the last commit"
  dlgt session create --harness codex --worktree --title "fix flaky test" --request-id r4 -- "Fix TestFoo"
  git diff | dlgt session create --profile review --cwd ~/src/app --title diff --request-id r2 --stdin`,
		Args: JSONArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			noPrompt := !fromStdin && len(args) == 0
			var prompt string
			if !noPrompt {
				p, err := readPrompt(cmd, fromStdin, args)
				if err != nil {
					return UsageFailure(cmd, err)
				}
				prompt = p
			}
			opts.WorktreeFlag(cmd)
			if opts.Worktree != nil && opts.NoWorktree {
				return UsageFailure(cmd, Usagef("--worktree and --no-worktree exclude each other"))
			}
			params, err := opts.resolve(cmd, e, harness, false)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			// Every missing required input in one error.
			var missing []string
			if params.Harness == "" {
				missing = append(missing, "--harness ("+HarnessList(e.Registry())+", unless the profile sets it)")
			}
			if noPrompt {
				missing = append(missing, "the prompt (after -- or with --stdin)")
			}
			if len(missing) > 0 {
				return UsageFailure(cmd, Usagef("missing required %s", strings.Join(missing, ", ")))
			}
			waitMS, err := durationMS("wait", wait)
			if err != nil {
				return UsageFailure(cmd, err)
			}
			// A person at a shell need not invent identifiers: the title
			// comes from the prompt, and a request id is made and shown.
			if params.Title == "" {
				params.Title = client.TitleFrom(prompt)
			}
			var generated string
			if requestID == "" {
				requestID = client.NewRequestID("cli")
				generated = requestID
			}
			params.Prompt, params.RequestID = prompt, requestID
			if !cmd.Flags().Changed("wait") {
				if generated == "" {
					return callAndPrint(e, cmd, (*client.Client).SessionCreate, params, render.Receipt)
				}
				return e.createShowingID(cmd, params)
			}
			if generated != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "dlgt: request id %s (made for this create: retry it with --request-id %s, never without)\n", generated, generated)
			}
			return e.createAndWait(cmd, params, wait, waitMS)
		},
	}
	opts.register(cmd)
	opts.RegisterWorktree(cmd)
	cmd.Flags().StringVar(&harness, "harness", "", "harness to launch: "+HarnessList(e.Registry())+" (required unless --profile sets it)")
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: retrying with the same id and parameters replays the receipt (default: one made and shown)")
	cmd.Flags().BoolVar(&fromStdin, "stdin", false, "read the prompt from stdin (byte-exact)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "then wait up to this long (e.g. 10m) for the execution's result and print it as session fetch --until result does")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}

// create makes the session.create call of params and decodes its
// receipt; a failure comes back printed (printFailure's status).
func (e *Env) create(cmd *cobra.Command, params rpc.SessionCreateParams) (text bool, raw json.RawMessage, r rpc.Receipt, err error) {
	if text, err = TextOutput(cmd); err != nil {
		return text, nil, r, PrintFailure(cmd, err)
	}
	if r, raw, err = call(e, cmd.Context(), (*client.Client).SessionCreate, params); err != nil {
		return text, nil, r, PrintFailure(cmd, err)
	}
	if r.Session.ID == "" || r.Cursor == "" {
		return text, nil, r, PrintFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected %s result (no session id or cursor): %.200s", rpc.MethodSessionCreate, raw))
	}
	return text, raw, r, nil
}

// createShowingID is session create with a request id it made
// (params.RequestID): the receipt, carrying that id as request_id, so a
// retry can repeat it.
func (e *Env) createShowingID(cmd *cobra.Command, params rpc.SessionCreateParams) error {
	text, raw, r, err := e.create(cmd, params)
	if err != nil {
		return err
	}
	if !text {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return PrintFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected %s result: %v", rpc.MethodSessionCreate, err))
		}
		fields["request_id"], _ = json.Marshal(params.RequestID)
		return PrintOK(cmd, fields)
	}
	w := cmd.OutOrStdout()
	render.Receipt(w, r)
	fmt.Fprintf(w, "request %s (made for this create: to retry it, give --request-id %s)\n", params.RequestID, params.RequestID)
	return nil
}

// createAndWait is session create --wait: the create, then the fetch that
// waits for this execution's result from the receipt's cursor, printed as
// session fetch prints it. A failed create prints its own error.
func (e *Env) createAndWait(cmd *cobra.Command, params rpc.SessionCreateParams, wait time.Duration, waitMS int64) error {
	text, _, r, err := e.create(cmd, params)
	if err != nil {
		return err
	}
	cursor, _ := json.Marshal(r.Cursor)
	// The create's connection already chose this daemon; the indicator
	// follows the new Session.
	e.sessionRef = r.Session.ID
	if wait > 0 {
		e.startFetchProgress(cmd, wait)
	}
	return e.printFetch(cmd, rpc.SessionFetchParams{Session: r.Session.ID, Cursor: cursor, WaitMS: waitMS, Until: "result"}, text)
}
