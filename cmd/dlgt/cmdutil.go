package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// usageError is an INVALID_ARGUMENT of the command line itself (a bad flag
// value, a missing or extra argument): printFailure reports it as any other
// failure and then prints the command's usage on stderr, as cobra's own
// flag errors are. An INVALID_ARGUMENT that is no fault of the command line
// (no terminal, an unusable HOME) is rpc.Errorf instead.
func usageError(format string, args ...any) error {
	return cliUsageError{rpc.Errorf(rpc.CodeInvalidArgument, format, args...)}
}

// flagErrorJSON marks cobra's flag-parsing errors as usage errors: run
// prints them as the JSON failure (exit status 1) with the usage on stderr.
func flagErrorJSON(cmd *cobra.Command, err error) error {
	return cliUsageError{err}
}

// usageFailure prints err as a usage error: the JSON failure (exit status
// 1), with the command's usage on stderr.
func usageFailure(cmd *cobra.Command, err error) error {
	if !isUsageError(err) {
		err = cliUsageError{err}
	}
	return printFailure(cmd, err)
}

// jsonArgs wraps a cobra positional-argument check so a violation is printed
// as the JSON failure (exit status 1), with the usage on stderr.
func jsonArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageFailure(cmd, usageError("%v", err))
		}
		return nil
	}
}

// call makes one request for the Session the command addresses,
// returning the raw result so fields this client does not know pass
// through unchanged.
func (e *env) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c, err := e.client()
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.Call(ctx, method, e.sessionRef, params, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// callAndPrint is the body of a control command: one request, then the
// ok:true line or the ok:false failure with its exit status.
func (e *env) callAndPrint(cmd *cobra.Command, method string, params any) error {
	raw, err := e.call(cmd.Context(), method, params)
	if err != nil {
		return printFailure(cmd, err)
	}
	return printOK(cmd, raw)
}

// clientEnvironment parses e.environ() into a map (later entries win;
// entries without '=' are skipped). For another machine it is empty: the
// remote proxy supplies that machine's own (remote.go).
func (e *env) clientEnvironment() map[string]string {
	m := map[string]string{}
	if e.remote() {
		return m
	}
	for _, kv := range e.environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		m[k] = v
	}
	return m
}

// durationMS converts a flag duration to whole milliseconds, rejecting
// negative values.
func durationMS(name string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, usageError("--%s must not be negative", name)
	}
	return d.Milliseconds(), nil
}

// absDir resolves a --cwd value against the client's working directory.
func absDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usageError("--cwd %q: %v", dir, err)
	}
	return abs, nil
}

// readPrompt returns the prompt from --stdin (byte-exact, trailing newline
// kept) or from the words after --; exactly one source must be given.
func readPrompt(cmd *cobra.Command, fromStdin bool, words []string) (string, error) {
	switch {
	case fromStdin && len(words) > 0:
		return "", usageError("give the prompt either after -- or with --stdin, not both")
	case fromStdin:
		data, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", rpc.Errorf(rpc.CodeInvalidArgument, "reading the prompt from stdin: %v", err)
		}
		return string(data), nil
	case len(words) == 0:
		return "", usageError("missing prompt: give it after -- or with --stdin")
	}
	return strings.Join(words, " "), nil
}

// launchOptions are the flags shared by session create and session send
// --resume.
type launchOptions struct {
	cwd, title, alias, model, effort, profile string
	harnessOptions                            []string
	noAutoApprove                             bool
	startupTimeout                            time.Duration
}

func (o *launchOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.cwd, "cwd", "", "working directory of the Session (relative paths are resolved by the client; default the current directory)")
	f.StringVar(&o.title, "title", "", "human-readable title")
	f.StringVar(&o.alias, "alias", "", "unique alias for addressing the Session")
	f.StringVar(&o.model, "model", "", "model id or alias")
	f.StringVar(&o.effort, "effort", "", "reasoning effort")
	f.StringArrayVar(&o.harnessOptions, "harness-option", nil, "harness CLI option KEY=VALUE (repeatable)")
	f.BoolVar(&o.noAutoApprove, "no-auto-approve", false, "keep the harness's own permission default: Codex may then ask for approval (the Session blocks); Claude Code's own default does not ask, add --harness-option permission-mode=default for its prompts")
	f.DurationVar(&o.startupTimeout, "startup-timeout", 0, "how long to wait for the harness to start (e.g. 90s)")
	f.StringVar(&o.profile, "profile", "", "launch profile from the profiles file")
}

// launchPlan is what the client resolved from flags, profile and
// environment: client environment < profile < explicit flags.
type launchPlan struct {
	harness, cwd, model, effort string
	harnessOptions              []string
	autoApprove                 *bool
	startupTimeoutMS            int64
	environment                 map[string]string
}

// resolve applies the precedence. harness is the --harness flag's value
// (empty when the command has none).
func (o *launchOptions) resolve(cmd *cobra.Command, e *env, harness string) (launchPlan, error) {
	changed := cmd.Flags().Changed
	plan := launchPlan{harness: harness, model: o.model, effort: o.effort, harnessOptions: o.harnessOptions, environment: e.clientEnvironment()}
	if o.profile != "" {
		profiles, err := e.loadProfiles()
		if err != nil {
			return plan, err
		}
		p, ok := profiles[o.profile]
		if !ok {
			path, _ := e.profilesPath()
			return plan, rpc.Errorf(rpc.CodeNotFound, "profile %q is not defined in %s", o.profile, path)
		}
		for k, v := range p.Environment {
			plan.environment[k] = v
		}
		if e.hostFlag == "" && p.Host != "" {
			if err := client.CheckHost(p.Host); err != nil {
				return plan, err
			}
			e.profileHost = p.Host
			plan.environment = map[string]string{}
			for k, v := range p.Environment {
				plan.environment[k] = v
			}
		}
		if !changed("harness") && p.Harness != "" {
			plan.harness = p.Harness
		}
		if !changed("model") && p.Model != "" {
			plan.model = p.Model
		}
		if !changed("effort") && p.Effort != "" {
			plan.effort = p.Effort
		}
		if !changed("harness-option") && len(p.HarnessOptions) > 0 {
			plan.harnessOptions = p.HarnessOptions
		}
	}
	for _, opt := range plan.harnessOptions {
		if k, _, ok := strings.Cut(opt, "="); !ok || k == "" {
			return plan, usageError("--harness-option %q is not KEY=VALUE", opt)
		}
	}
	if o.noAutoApprove {
		f := false
		plan.autoApprove = &f
	}
	ms, err := durationMS("startup-timeout", o.startupTimeout)
	if err != nil {
		return plan, err
	}
	plan.startupTimeoutMS = ms
	if e.remote() && o.cwd != "" && !filepath.IsAbs(o.cwd) {
		return plan, usageError("--cwd %q must be an absolute path on the remote host", o.cwd)
	}
	if e.remote() {
		plan.cwd = o.cwd // empty: the remote side's working directory
	} else if changed("cwd") || o.cwd != "" {
		if plan.cwd, err = absDir(o.cwd); err != nil {
			return plan, err
		}
	}
	return plan, nil
}

// workingDir is the client's current directory (the default --cwd).
func workingDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("current directory: %w", err)
	}
	return wd, nil
}
