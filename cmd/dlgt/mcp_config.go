package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/mcp"
)

// mcpForwardEnv names the variables a Codex leader forwards to the MCP
// server (Codex gives MCP servers a filtered environment; Claude Code passes
// its own): dlgt's, every harness's binary, config and provider variables
// (registry), and ssh's for a server pointed at another machine (--host,
// DLGT_HOST). Names only: values are read from the leader's environment
// when it starts the server, never written into a snippet.
func (e *env) mcpForwardEnv() []string {
	out := []string{"DLGT_HOME", "DLGT_SOCKET", "DLGT_PROFILES"}
	var rest []string
	for _, d := range e.registry() {
		out = append(out, d.BinEnv)
		rest = append(append(rest, d.Config.Env), d.ProviderEnv...)
	}
	sort.Strings(rest)
	out = append(out, slices.Compact(rest)...)
	return append(out, "DLGT_HOST", "DLGT_SSH_COMMAND", "DLGT_REMOTE_BIN", "SSH_AUTH_SOCK")
}

func newMCPConfigCommand(e *env) *cobra.Command {
	var (
		approve bool
		waitMax time.Duration
		forward []string
		hf      *harnessFlags
	)
	cmd := &cobra.Command{
		Use:   "config --harness NAME [--approve]",
		Short: "Print the per-launch arguments that add dlgt's MCP server to a harness",
		Long: `Print the command-line arguments that register "dlgt mcp" with one launch of
the harness named with --harness (` + mcpHarnessList(e.registry()) + `), one
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
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := e.mcpHarness(hf)
			if err != nil {
				return printFailure(cmd, err)
			}
			spec, err := e.mcpServerSpec(cmd, d, approve, waitMax, forward)
			if err != nil {
				return printFailure(cmd, err)
			}
			var out []string
			switch d.MCP {
			case harness.MCPClaudeJSON:
				out = claudeMCPArgs(spec)
			case harness.MCPCodexTOML:
				out = codexMCPArgs(spec)
			}
			for _, a := range out {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	hf = e.addHarnessFlags(cmd, false, "the harness to print arguments for: "+mcpHarnessList(e.registry()))
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
	return harnessList(mcpHarnesses(reg, harness.MCPNone))
}

// mcpHarness is the one harness mcp config or install is for.
func (e *env) mcpHarness(hf *harnessFlags) (harness.Descriptor, error) {
	ds, err := hf.selected(e)
	if err != nil {
		return harness.Descriptor{}, err
	}
	if len(ds) != 1 {
		return harness.Descriptor{}, usageError("give exactly one harness: --harness %s", mcpHarnessList(e.registry()))
	}
	if ds[0].MCP == harness.MCPNone {
		return harness.Descriptor{}, usageError("--harness %s: dlgt cannot add its MCP server to %s (it can to %s)",
			ds[0].Name, ds[0].DisplayName, mcpHarnessList(e.registry()))
	}
	return ds[0], nil
}

// mcpSpec is the server entry one harness gets, per launch (mcp config)
// or in its user config (mcp install): both are rendered from it.
type mcpSpec struct {
	exe        string
	serverArgs []string
	approve    bool
	forward    []string // Codex: the variables forwarded by name
}

// mcpServerSpec checks the flags shared by mcp config and mcp install and
// builds the entry they describe for d.
func (e *env) mcpServerSpec(cmd *cobra.Command, d harness.Descriptor, approve bool, waitMax time.Duration, forward []string) (mcpSpec, error) {
	exe := e.exe
	if exe == "" {
		exe = "dlgt"
	} else if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	serverArgs := []string{"mcp"}
	if e.hostFlag != "" {
		// The server delegates to that machine's daemon.
		serverArgs = []string{"--host", e.hostFlag, "mcp"}
	}
	if cmd.Flags().Changed("wait-max") {
		if waitMax < time.Second || waitMax > mcp.WaitCeiling {
			return mcpSpec{}, usageError("--wait-max must be between 1s and %s", mcp.WaitCeiling)
		}
		serverArgs = append(serverArgs, "--wait-max", waitMax.String())
	}
	spec := mcpSpec{exe: exe, serverArgs: serverArgs, approve: approve}
	if d.MCP == harness.MCPCodexTOML {
		for _, name := range forward {
			if name == "" || strings.ContainsAny(name, "=\"\\\n") {
				return mcpSpec{}, usageError("--forward-env %q is not a variable name", name)
			}
		}
		spec.forward = append(e.mcpForwardEnv(), forward...)
	} else if len(forward) > 0 {
		return mcpSpec{}, usageError("--forward-env is for --harness %s: %s passes its own environment to the server",
			harnessList(mcpHarnesses(e.registry(), harness.MCPCodexTOML)), d.DisplayName)
	}
	return spec, nil
}

// claudeServer is the server's entry under "mcpServers", in the order
// Claude Code writes its keys.
type claudeServer struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func claudeMCPServer(s mcpSpec) claudeServer {
	return claudeServer{Type: "stdio", Command: s.exe, Args: s.serverArgs}
}

// claudeMCPArgs: --mcp-config with the server, --strict-mcp-config is left
// to the user (it would drop their other servers).
func claudeMCPArgs(s mcpSpec) []string {
	cfg := map[string]any{"mcpServers": map[string]any{mcp.ServerName: claudeMCPServer(s)}}
	b, _ := json.Marshal(cfg)
	out := []string{"--mcp-config", string(b)}
	if s.approve {
		out = append(out, "--allowedTools", "mcp__"+mcp.ServerName)
	}
	return out
}

// codexMCPFields are the keys of the server's table, as TOML key and
// value: the first three make the -c inline table, the others a -c each.
func codexMCPFields(s mcpSpec) [][2]string {
	quoted := make([]string, len(s.serverArgs))
	for i, a := range s.serverArgs {
		quoted[i] = tomlString(a)
	}
	names := make([]string, len(s.forward))
	for i, n := range s.forward {
		names[i] = tomlString(n)
	}
	out := [][2]string{
		{"command", tomlString(s.exe)},
		{"args", "[" + strings.Join(quoted, ", ") + "]"},
		{"env_vars", "[" + strings.Join(names, ", ") + "]"},
		{"required", "true"},
	}
	if s.approve {
		out = append(out, [2]string{"default_tools_approval_mode", `"approve"`})
	}
	return out
}

// codexMCPArgs: -c overrides in TOML, one per value.
func codexMCPArgs(s mcpSpec) []string {
	fields := codexMCPFields(s)
	inline := make([]string, 3)
	for i, kv := range fields[:3] {
		inline[i] = kv[0] + "=" + kv[1]
	}
	out := []string{"-c", "mcp_servers." + mcp.ServerName + "={" + strings.Join(inline, ", ") + "}"}
	for _, kv := range fields[3:] {
		out = append(out, "-c", "mcp_servers."+mcp.ServerName+"."+kv[0]+"="+kv[1])
	}
	return out
}

// tomlString quotes s as a TOML basic string: JSON's string escapes are
// all valid TOML escapes.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
