package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/mcp"
)

// `dlgt mcp` serves the MCP server of package mcp on stdio, over a
// client.Client with this command's dial policy.

func newMCPCommand(e *env) *cobra.Command {
	var waitMax time.Duration
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve dlgt to a leader agent as an MCP server on stdio",
		Long: `Serve dlgt's delegation methods as MCP tools on stdin/stdout.

A leader agent's harness starts this command (see "dlgt mcp config" and
"dlgt mcp install"). Tools:
delegate (session.create), send (session.send), wait (session.fetch until a
result, bounded by --wait-max), read (session.read), list (session.list),
cancel (session.cancel), respond (session.respond: allow or deny what a
blocked Session asks), stop (session.stop), diff (session.diff: what a
worktree Session changed). wait, read, list and diff are marked read-only.
The daemon is started when none runs, as for every client command.
Profiles with "warm = N" get N warm spares (session.warm) when the server
starts, so a delegate naming one skips the counterpart harness's start.

--wait-max bounds one wait call; keep it under the leader harness's own tool
limits (Claude Code backgrounds a call still running after 120 s; Codex cuts
one at 300 s).`,
		Example: `  mapfile -t args < <(dlgt mcp config --harness claude --approve) && claude "${args[@]}"
  dlgt mcp --wait-max 60s   # what the leader's harness runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if waitMax < time.Second || waitMax > mcp.WaitCeiling {
				return fmt.Errorf("--wait-max must be between 1s and %s", mcp.WaitCeiling)
			}
			c, err := mcpDialer(e)
			if err != nil {
				return err
			}
			defer c.Close()
			// Profiles with warm spares get them now, while the leader
			// starts: its first delegate then finds the harness up.
			go mcp.WarmProfiles(cmd.Context(), c, e.Stderr)
			return mcp.Serve(cmd.Context(), c, mcpOptions(e, waitMax), e.Stdin, e.Stdout)
		},
	}
	cmd.Flags().DurationVar(&waitMax, "wait-max", mcp.WaitDefault, "longest a single wait call blocks before returning the cursor to continue")
	cmd.AddCommand(newMCPConfigCommand(e), newMCPInstallCommand(e))
	return cmd
}

// mcpDialer is the client the MCP tools call: the environment, --host and
// autostart of every dlgt command.
func mcpDialer(e *env) (*client.Client, error) {
	return client.New(client.Options{Getenv: e.Getenv, Environ: e.Environ, DaemonExe: e.Exe, Host: e.HostFlag, Stderr: e.Stderr})
}

// mcpOptions are the server's texts that come from the command line: the
// registry's harnesses and the CLI's words for token usage.
func mcpOptions(e *env, waitMax time.Duration) mcp.Options {
	return mcp.Options{WaitMax: waitMax, Harnesses: e.Registry()}
}
