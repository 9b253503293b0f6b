package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
)

func newSessionWarmCommand(e *Env) *cobra.Command {
	var (
		opts    LaunchOptions
		harness string
		spares  int
		idle    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "warm [--profile P | --harness H] [--spares N] [--idle 10m]",
		Short: "Keep harness processes started ahead, so new Sessions skip the harness's start",
		Long: `Ask the daemon to keep N warm spares of one launch (session.warm): harness
processes started ahead, each ready for its first prompt and invisible to
session list, events and fetch. A session create of exactly the same launch
(harness, directory, model, effort, harness options, auto-approve, terminal
size and this shell's environment; no --worktree) takes one instead of
starting its harness, and the daemon starts another in its place.

--spares defaults to the profile's "warm" (else 1); --spares 0 stops them.
Spares unused for --idle (default 10m) stop; at most 4 per launch and 8 in
all. They stop with the daemon and never survive it. Profiles with
"warm = N" get their spares from dlgt mcp when a leader starts it.`,
		Example: `  dlgt session warm --harness codex --cwd ~/src/app
  dlgt session warm --profile review --spares 2 --idle 30m
  dlgt session warm --profile review --spares 0`,
		Args: JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.Client()
			if err != nil {
				return PrintFailure(cmd, err)
			}
			l, err := c.ResolveLaunch(client.LaunchSpec{
				Profile: opts.profile, Harness: harness, Model: opts.model, Effort: opts.effort,
				HarnessOptions: opts.harnessOptions, Cwd: opts.cwd, NoAutoApprove: opts.noAutoApprove,
				NoWorktree: true,
			})
			if err != nil {
				return PrintFailure(cmd, LaunchFlagError(err))
			}
			if l.Host != "" {
				return UsageFailure(cmd, Usagef("warm spares are kept for launches on this machine; the profile runs on %s", l.Host))
			}
			n := l.Warm
			if cmd.Flags().Changed("spares") || n == 0 {
				n = spares
			}
			params, _ := l.WarmParams(n)
			if params.IdleMS, err = durationMS("idle", idle); err != nil {
				return UsageFailure(cmd, err)
			}
			return callAndPrint(e, cmd, (*client.Client).SessionWarm, params, render.Warm)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.profile, "profile", "", "launch profile from the profiles file")
	f.StringVar(&harness, "harness", "", "harness to keep warm: "+HarnessList(e.Registry())+" (required unless --profile sets it)")
	f.StringVar(&opts.cwd, "cwd", "", "working directory of the Sessions (default the current directory)")
	f.StringVar(&opts.model, "model", "", "model id or alias")
	f.StringVar(&opts.effort, "effort", "", "reasoning effort")
	f.StringArrayVar(&opts.harnessOptions, "harness-option", nil, "harness CLI option KEY=VALUE (repeatable)")
	f.BoolVar(&opts.noAutoApprove, "no-auto-approve", false, "the launch keeps the harness's own permission default")
	f.IntVar(&spares, "spares", 1, "how many spares to keep (0 stops them; at most 4)")
	f.DurationVar(&idle, "idle", 0, "stop the spares after this long unused (default 10m, at most 24h)")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
