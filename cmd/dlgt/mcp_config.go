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
			spec, err := e.mcpServerSpec(cmd, claude, codex, approve, waitMax, forward)
			if err != nil {
				return printFailure(cmd, err)
			}
			var out []string
			if claude {
				out = claudeMCPArgs(spec)
			} else {
				out = codexMCPArgs(spec)
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

// mcpSpec is the server entry one harness gets, per launch (mcp config)
// or in its user config (mcp install): both are rendered from it.
type mcpSpec struct {
	exe        string
	serverArgs []string
	approve    bool
	forward    []string // Codex: the variables forwarded by name
}

// mcpServerSpec checks the flags shared by mcp config and mcp install and
// builds the entry they describe.
func (e *env) mcpServerSpec(cmd *cobra.Command, claude, codex, approve bool, waitMax time.Duration, forward []string) (mcpSpec, error) {
	if claude == codex {
		return mcpSpec{}, usageError("give exactly one of --claude or --codex")
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
			return mcpSpec{}, usageError("--wait-max must be between 1s and %s", mcpWaitCeiling)
		}
		serverArgs = append(serverArgs, "--wait-max", waitMax.String())
	}
	spec := mcpSpec{exe: exe, serverArgs: serverArgs, approve: approve}
	if codex {
		for _, name := range forward {
			if name == "" || strings.ContainsAny(name, "=\"\\\n") {
				return mcpSpec{}, usageError("--forward-env %q is not a variable name", name)
			}
		}
		spec.forward = append(append([]string{}, mcpForwardEnv...), forward...)
	} else if len(forward) > 0 {
		return mcpSpec{}, usageError("--forward-env is for --codex: Claude Code passes its own environment to the server")
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
	cfg := map[string]any{"mcpServers": map[string]any{mcpServerName: claudeMCPServer(s)}}
	b, _ := json.Marshal(cfg)
	out := []string{"--mcp-config", string(b)}
	if s.approve {
		out = append(out, "--allowedTools", "mcp__"+mcpServerName)
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
	out := []string{"-c", "mcp_servers." + mcpServerName + "={" + strings.Join(inline, ", ") + "}"}
	for _, kv := range fields[3:] {
		out = append(out, "-c", "mcp_servers."+mcpServerName+"."+kv[0]+"="+kv[1])
	}
	return out
}

// tomlString quotes s as a TOML basic string: JSON's string escapes are
// all valid TOML escapes.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
