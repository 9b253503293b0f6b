package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Usagef is an INVALID_ARGUMENT of the command line itself (a bad flag
// value, a missing or extra argument): printFailure reports it as any other
// failure and then prints the command's usage on stderr, as cobra's own
// flag errors are. An INVALID_ARGUMENT that is no fault of the command line
// (no terminal, an unusable HOME) is rpc.Errorf instead.
func Usagef(format string, args ...any) error {
	return UsageError{rpc.Errorf(rpc.CodeInvalidArgument, format, args...)}
}

// flagErrorJSON marks cobra's flag-parsing errors as usage errors: run
// prints them as the JSON failure (exit status 1) with the usage on stderr.
func flagErrorJSON(cmd *cobra.Command, err error) error {
	return UsageError{err}
}

// UsageFailure prints err as a usage error: the JSON failure (exit status
// 1), with the command's usage on stderr.
func UsageFailure(cmd *cobra.Command, err error) error {
	if !isUsageError(err) {
		err = UsageError{err}
	}
	return PrintFailure(cmd, err)
}

// JSONArgs wraps a cobra positional-argument check so a violation is printed
// as the JSON failure (exit status 1), with the usage on stderr.
func JSONArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return UsageFailure(cmd, Usagef("%v", err))
		}
		return nil
	}
}

// clientMethod is a typed method of the client, taken as a method
// expression: (*client.Client).SessionRead.
type clientMethod[P, R any] = func(*client.Client, context.Context, P) (R, error)

// call makes one typed call through the command's client, returning its
// result also as the daemon sent it, so members this client does not know
// pass through to the JSON line unchanged.
func call[P, R any](e *Env, ctx context.Context, m clientMethod[P, R], p P) (R, json.RawMessage, error) {
	var res R
	c, err := e.Client()
	if err != nil {
		return res, nil, err
	}
	var raw json.RawMessage
	res, err = m(c.KeepRaw(&raw), ctx, p)
	return res, raw, err
}

// callAndPrint is the body of a control command: one call, then the
// ok:true line, or with -o text the result written by write. A failure is
// the ok:false line (or its text) with its exit status.
func callAndPrint[P, R any](e *Env, cmd *cobra.Command, m clientMethod[P, R], p P, write func(io.Writer, R) error) error {
	text, err := TextOutput(cmd)
	if err != nil {
		return PrintFailure(cmd, err)
	}
	res, raw, err := call(e, cmd.Context(), m, p)
	if err != nil {
		return PrintFailure(cmd, err)
	}
	if !text {
		return PrintOK(cmd, raw)
	}
	return write(cmd.OutOrStdout(), res)
}

// clientEnvironment is the launch environment of this client
// (client.LaunchEnvironment: every variable here, none for another
// machine, whose proxy supplies its own).
func (e *Env) clientEnvironment() map[string]string {
	c, err := e.Client()
	if err != nil {
		return map[string]string{} // a malformed host: reported where it dials
	}
	return c.LaunchEnvironment()
}

// durationMS converts a flag duration to whole milliseconds, rejecting
// negative values.
func durationMS(name string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, Usagef("--%s must not be negative", name)
	}
	return d.Milliseconds(), nil
}

// readPrompt returns the prompt from --stdin (byte-exact, trailing newline
// kept) or from the words after --; exactly one source must be given.
func readPrompt(cmd *cobra.Command, fromStdin bool, words []string) (string, error) {
	switch {
	case fromStdin && len(words) > 0:
		return "", Usagef("give the prompt either after -- or with --stdin, not both")
	case fromStdin:
		data, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", rpc.Errorf(rpc.CodeInvalidArgument, "reading the prompt from stdin: %v", err)
		}
		return string(data), nil
	case len(words) == 0:
		return "", Usagef("missing prompt: give it after -- or with --stdin")
	}
	return strings.Join(words, " "), nil
}

// LaunchOptions are the flags shared by session create and session send
// --resume.
type LaunchOptions struct {
	cwd, title, alias, model, effort, profile string
	harnessOptions                            []string
	noAutoApprove                             bool
	startupTimeout                            time.Duration
	// Worktree and noWorktree: session create's --Worktree[=BRANCH] and
	// --no-Worktree (registerWorktree).
	Worktree   *rpc.WorktreeOption
	NoWorktree bool
}

// worktreeDefault is --worktree's value when given without one: a space,
// which no branch name has, stands for "derive it from the alias".
const worktreeDefault = " "

// RegisterWorktree adds session create's worktree flags.
func (o *LaunchOptions) RegisterWorktree(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("worktree", "", "run the Session in a new git worktree of cwd's repository on a new branch: --worktree (branch dlgt/<alias>) or --worktree=BRANCH")
	f.Lookup("worktree").NoOptDefVal = worktreeDefault
	f.BoolVar(&o.NoWorktree, "no-worktree", false, "run in cwd itself even when the profile sets worktree = true")
}

// WorktreeFlag reads --worktree into o.worktree.
func (o *LaunchOptions) WorktreeFlag(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("worktree"); f != nil && f.Changed {
		o.Worktree = &rpc.WorktreeOption{Branch: strings.TrimSpace(f.Value.String())}
	}
}

func (o *LaunchOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.cwd, "cwd", "", "working directory of the Session (relative paths are resolved by the client; default the current directory)")
	f.StringVar(&o.title, "title", "", "human-readable title")
	f.StringVar(&o.alias, "alias", "", "unique alias for addressing the Session")
	o.RegisterLaunch(cmd)
}

// RegisterLaunch adds the flags of a launch's shape (model, effort,
// harness options, approvals, startup timeout, profile): a front-end
// whose Sessions get their directory and names elsewhere (dlgt acp).
func (o *LaunchOptions) RegisterLaunch(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "model id or alias")
	f.StringVar(&o.effort, "effort", "", "reasoning effort")
	f.StringArrayVar(&o.harnessOptions, "harness-option", nil, "harness CLI option KEY=VALUE (repeatable)")
	f.BoolVar(&o.noAutoApprove, "no-auto-approve", false, "keep the harness's own permission default: Codex may then ask for approval (the Session blocks); Claude Code's own default does not ask, add --harness-option permission-mode=default for its prompts")
	f.DurationVar(&o.startupTimeout, "startup-timeout", 0, "how long to wait for the harness to start (e.g. 90s)")
	f.StringVar(&o.profile, "profile", "", "launch profile from the profiles file")
}

// resolve is the client's launch resolution of these flags
// (client.ResolveLaunch: client environment < profile < explicit flags),
// for session create (harness is --harness) or send --resume; a missing
// harness is left to the caller. A profile's host becomes the command's.
func (o *LaunchOptions) resolve(cmd *cobra.Command, e *Env, harness string, resume bool) (rpc.SessionCreateParams, error) {
	c, err := e.Client()
	if err != nil {
		return rpc.SessionCreateParams{}, err
	}
	l, err := c.ResolveLaunch(o.Spec(harness, resume))
	if err != nil {
		return l.Params, LaunchFlagError(err)
	}
	// A flag given empty is an explicit choice: the profile's does not
	// fill it.
	for flag, v := range map[string]*string{"harness": &l.Params.Harness, "model": &l.Params.Model, "effort": &l.Params.Effort} {
		if f := cmd.Flags().Lookup(flag); f != nil && f.Changed && f.Value.String() == "" {
			*v = ""
		}
	}
	if l.Host != c.Host() {
		e.profileHost = l.Host
		if l.Host == "" {
			e.profileHost = "local"
		}
	}
	return l.Params, nil
}

// Spec is the launch these flags ask for (harness is --harness).
func (o *LaunchOptions) Spec(harness string, resume bool) client.LaunchSpec {
	return client.LaunchSpec{
		Profile: o.profile, Harness: harness, Model: o.model, Effort: o.effort, HarnessOptions: o.harnessOptions,
		Cwd: o.cwd, NoAutoApprove: o.noAutoApprove, StartupTimeout: o.startupTimeout, Resume: resume,
		HarnessOptional: true, Title: o.title, Alias: o.alias,
		Worktree: o.Worktree, NoWorktree: o.NoWorktree,
	}
}

// launchFields are the flags of ResolveLaunch's fields.
var launchFields = map[string]string{"harness_options": "--harness-option", "cwd": "--cwd", "startup_timeout_ms": "--startup-timeout"}

// LaunchFlagError says a launch field's INVALID_ARGUMENT as the usage
// error of its flag ("--cwd ... must be an absolute path on the remote
// host"); other errors pass.
func LaunchFlagError(err error) error {
	var re *rpc.Error
	if errors.As(err, &re) && re.Code == rpc.CodeInvalidArgument {
		if flag, ok := launchFields[re.Field]; ok {
			return Usagef("%s %s", flag, strings.TrimPrefix(re.Message, re.Field+": "))
		}
	}
	return err
}
