package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/statedir"
)

// `dlgt acp` serves the Agent Client Protocol agent of package acp on
// stdio, over a client.Client with this command's dial policy.

func newACPCommand(e *env) *cobra.Command {
	var (
		opts    cli.LaunchOptions
		harness string
	)
	cmd := &cobra.Command{
		Use:   "acp [--profile P | --harness H] [--model M] [--effort E] [--harness-option K=V]... [--no-auto-approve] [--worktree]",
		Short: "Serve dlgt to an editor as an Agent Client Protocol agent on stdio",
		Long: `Serve an Agent Client Protocol (v1) agent on stdin/stdout: the command an
editor (Zed, JetBrains, Neovim, Emacs, ...) runs to drive Claude Code, Codex or
Gemini CLI hosted by dlgt. Each editor thread is a dlgt Session, listed,
readable and attachable from the terminal, "dlgt ui", MCP leaders and scripts
at the same time, and it outlives the editor: closing the connection leaves
the Session (and a running turn) to the daemon; session/load picks it up again.

The flags choose the launch of the Sessions session/new makes, as for
"dlgt session create" (the editor gives the directory). session/new starts
the harness at once (a warm spare of that launch, which the first prompt's
session.create claims). See docs/acp.md for what each ACP method does and the
editor setups.`,
		Example: `  dlgt acp --harness claude
  dlgt acp --profile review
  dlgt acp --harness codex --no-auto-approve --host build-box`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.WorktreeFlag(cmd)
			if opts.Worktree != nil && opts.NoWorktree {
				return cli.UsageFailure(cmd, cli.Usagef("--worktree and --no-worktree exclude each other"))
			}
			c, err := e.Client()
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			spec := opts.Spec(harness, false)
			// The launch is checked now, so a bad flag fails the editor's
			// start instead of every thread.
			l, err := c.ResolveLaunch(spec)
			if err != nil {
				return cli.PrintFailure(cmd, cli.LaunchFlagError(err))
			}
			if l.Params.Harness == "" {
				return cli.UsageFailure(cmd, cli.Usagef("missing --harness (%s), or a --profile that sets one", cli.HarnessList(e.Registry())))
			}
			defer e.CleanupRemote()
			return acp.Serve(cmd.Context(), c, acp.Options{
				Launch: spec, Version: statedir.Version, Harnesses: e.Registry(), Stderr: e.Stderr,
			}, e.Stdin, e.Stdout)
		},
	}
	opts.RegisterLaunch(cmd)
	opts.RegisterWorktree(cmd)
	cmd.Flags().StringVar(&harness, "harness", "", "harness of the editor's Sessions: "+cli.HarnessList(e.Registry())+" (required unless --profile sets it)")
	return cmd
}
