package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// mcpForwardEnv names the variables a Codex leader forwards to the MCP
// server (Codex gives MCP servers a filtered environment; Claude Code passes
// its own). Names only: values are read from the leader's environment when
// it starts the server, never written into a snippet.
var mcpForwardEnv = []string{
	"DLGT_HOME", "DLGT_SOCKET", "DLGT_PROFILES", "DLGT_CLAUDE_BIN", "DLGT_CODEX_BIN",
	"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENAI_API_KEY",
	// A server pointed at another machine (--host, DLGT_HOST) needs ssh's.
	"DLGT_HOST", "DLGT_SSH_COMMAND", "DLGT_REMOTE_BIN", "SSH_AUTH_SOCK",
}

func newMCPConfigCommand(e *env) *cobra.Command {
	var (
		claude, codex, approve bool
		waitMax                time.Duration
		forward                []string
	)
	cmd := &cobra.Command{
		Use:   "config (--claude | --codex) [--approve]",
		Short: "Print the per-launch arguments that add dlgt's MCP server to a harness",
		Long: `Print the command-line arguments that register "dlgt mcp" with one launch of
Claude Code (--claude) or Codex (--codex), one argument per line, so a shell
can pass them on unchanged:

  mapfile -t args < <(dlgt mcp config --claude) && claude "${args[@]}"
  mapfile -t args < <(dlgt mcp config --codex) && codex "${args[@]}"

Nothing is written anywhere. The read-only tools (wait, read, list) are
marked read-only, so Codex runs them without asking; the others ask for
approval unless --approve is given: it adds --allowedTools mcp__dlgt for
Claude, and default_tools_approval_mode="approve" for Codex. For Codex the
server is marked required (so its tools are in the first model request) and
the variables dlgt needs are forwarded by name (env_vars), never by value.`,
		Example: `  claude -p "..." $(dlgt mcp config --claude --approve | paste -sd' ')   # no spaces in paths
  mapfile -t args < <(dlgt mcp config --codex) && codex "${args[@]}"`,
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if claude == codex {
				return printFailure(cmd, usageError("give exactly one of --claude or --codex"))
			}
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
				if waitMax < time.Second || waitMax > mcpWaitCeiling {
					return printFailure(cmd, usageError("--wait-max must be between 1s and %s", mcpWaitCeiling))
				}
				serverArgs = append(serverArgs, "--wait-max", waitMax.String())
			}
			var out []string
			if claude {
				out = claudeMCPArgs(exe, serverArgs, approve)
			} else {
				for _, name := range forward {
					if name == "" || strings.ContainsAny(name, "=\"\\\n") {
						return printFailure(cmd, usageError("--forward-env %q is not a variable name", name))
					}
				}
				out = codexMCPArgs(exe, serverArgs, approve, append(append([]string{}, mcpForwardEnv...), forward...))
			}
			for _, a := range out {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&claude, "claude", false, "arguments for Claude Code (--mcp-config JSON)")
	f.BoolVar(&codex, "codex", false, "arguments for Codex (-c mcp_servers.dlgt...)")
	f.BoolVar(&approve, "approve", false, "let the leader call every dlgt tool without asking")
	f.DurationVar(&waitMax, "wait-max", mcpWaitDefault, "bound of one wait call, passed to dlgt mcp")
	f.StringArrayVar(&forward, "forward-env", nil, "Codex: also forward this variable to the server (repeatable)")
	return cmd
}

// claudeMCPArgs: --mcp-config with the server, --strict-mcp-config is left
// to the user (it would drop their other servers).
func claudeMCPArgs(exe string, serverArgs []string, approve bool) []string {
	cfg := map[string]any{"mcpServers": map[string]any{
		mcpServerName: map[string]any{"type": "stdio", "command": exe, "args": serverArgs},
	}}
	b, _ := json.Marshal(cfg)
	out := []string{"--mcp-config", string(b)}
	if approve {
		out = append(out, "--allowedTools", "mcp__"+mcpServerName)
	}
	return out
}

// codexMCPArgs: -c overrides in TOML, one per value.
func codexMCPArgs(exe string, serverArgs []string, approve bool, forward []string) []string {
	quoted := make([]string, len(serverArgs))
	for i, a := range serverArgs {
		quoted[i] = tomlString(a)
	}
	names := make([]string, len(forward))
	for i, n := range forward {
		names[i] = tomlString(n)
	}
	server := fmt.Sprintf("mcp_servers.%s={command=%s, args=[%s], env_vars=[%s]}",
		mcpServerName, tomlString(exe), strings.Join(quoted, ", "), strings.Join(names, ", "))
	out := []string{"-c", server, "-c", "mcp_servers." + mcpServerName + ".required=true"}
	if approve {
		out = append(out, "-c", "mcp_servers."+mcpServerName+`.default_tools_approval_mode="approve"`)
	}
	return out
}

// tomlString quotes s as a TOML basic string: JSON's string escapes are
// all valid TOML escapes.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
