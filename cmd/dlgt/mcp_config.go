package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/mcp"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newMCPConfigCommand(e *env) *cobra.Command {
	var (
		approve bool
		waitMax time.Duration
		forward []string
		hf      *cli.HarnessFlags
	)
	cmd := &cobra.Command{
		Use:   "config --harness NAME [--approve]",
		Short: "Print the per-launch arguments that add dlgt's MCP server to a harness",
		Long: `Print the command-line arguments that register "dlgt mcp" with one launch of
the harness named with --harness (` + mcpHarnessList(e.Registry()) + `), one
argument per line, so a shell can pass them on unchanged:

  mapfile -t args < <(dlgt mcp config --harness claude) && claude "${args[@]}"
  mapfile -t args < <(dlgt mcp config --harness codex) && codex "${args[@]}"

Nothing is written anywhere. The read-only tools (wait, read, list) are
marked read-only, so Codex runs them without asking; the others ask for
approval unless --approve is given: it adds --allowedTools mcp__dlgt for
Claude, and default_tools_approval_mode="approve" for Codex. For Codex the
server is marked required (so its tools are in the first model request) and
the variables dlgt needs are forwarded by name (env_vars), never by value.`,
		Example: `  claude -p "..." $(dlgt mcp config --harness claude --approve | paste -sd' ')   # no spaces in paths
  mapfile -t args < <(dlgt mcp config --harness codex) && codex "${args[@]}"`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := fullEnv{e}.mcpHarness(hf)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			if d.MCP == harness.MCPGeminiJSON {
				return cli.PrintFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "--harness %s: %s takes MCP servers only from its settings files, not per launch: run `dlgt mcp install --harness %s`", d.Name, d.DisplayName, d.Name))
			}
			spec, err := fullEnv{e}.mcpServerSpec(cmd, d, approve, waitMax, forward)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			for _, a := range setup.Args(d, spec) {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	hf = e.AddHarnessFlags(cmd, false, "the harness to print arguments for: "+mcpHarnessList(e.Registry()))
	f := cmd.Flags()
	f.BoolVar(&approve, "approve", false, "let the leader call every dlgt tool without asking")
	f.DurationVar(&waitMax, "wait-max", mcp.WaitDefault, "bound of one wait call, passed to dlgt mcp")
	f.StringArrayVar(&forward, "forward-env", nil, "Codex: also forward this variable to the server (repeatable)")
	return cmd
}

// mcpHarnesses are the harnesses of reg that dlgt can add its MCP server to.
func mcpHarnesses(reg []harness.Descriptor, format harness.MCPFormat) []harness.Descriptor {
	var out []harness.Descriptor
	for _, d := range reg {
		if d.MCP != harness.MCPNone && (format == harness.MCPNone || d.MCP == format) {
			out = append(out, d)
		}
	}
	return out
}

func mcpHarnessList(reg []harness.Descriptor) string {
	return cli.HarnessList(mcpHarnesses(reg, harness.MCPNone))
}

// mcpHarness is the one harness mcp config or install is for.
func (e fullEnv) mcpHarness(hf *cli.HarnessFlags) (harness.Descriptor, error) {
	ds, err := hf.Selected(e.env)
	if err != nil {
		return harness.Descriptor{}, err
	}
	if len(ds) != 1 {
		return harness.Descriptor{}, cli.Usagef("give exactly one harness: --harness %s", mcpHarnessList(e.Registry()))
	}
	if ds[0].MCP == harness.MCPNone {
		return harness.Descriptor{}, cli.Usagef("--harness %s: dlgt cannot add its MCP server to %s (it can to %s)",
			ds[0].Name, ds[0].DisplayName, mcpHarnessList(e.Registry()))
	}
	return ds[0], nil
}

// mcpServerSpec checks the flags shared by mcp config and mcp install and
// builds the entry they describe for d.
func (e fullEnv) mcpServerSpec(cmd *cobra.Command, d harness.Descriptor, approve bool, waitMax time.Duration, forward []string) (setup.ServerSpec, error) {
	var extra []string
	if cmd.Flags().Changed("wait-max") {
		if waitMax < time.Second || waitMax > mcp.WaitCeiling {
			return setup.ServerSpec{}, cli.Usagef("--wait-max must be between 1s and %s", mcp.WaitCeiling)
		}
		extra = []string{"--wait-max", waitMax.String()}
	}
	spec, err := setup.NewServerSpec(e.Registry(), d, e.Exe, e.HostFlag, extra, approve, forward)
	if err != nil {
		return spec, cli.UsageError{Err: err}
	}
	return spec, nil
}
