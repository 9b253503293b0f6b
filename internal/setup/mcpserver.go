package setup

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dlgt-dev/dlgt/harness"
)

// ForwardEnv names the variables a Codex leader forwards to the MCP
// server (Codex gives MCP servers a filtered environment; Claude Code passes
// its own): dlgt's, every harness's binary, config and provider variables
// (registry), and ssh's for a server pointed at another machine (--host,
// DLGT_HOST). Names only: values are read from the leader's environment
// when it starts the server, never written into a snippet.
func ForwardEnv(reg []harness.Descriptor) []string {
	out := []string{"DLGT_HOME", "DLGT_SOCKET", "DLGT_PROFILES"}
	var rest []string
	for _, d := range reg {
		out = append(out, d.BinEnv)
		rest = append(append(rest, d.Config.Env), d.ProviderEnv...)
	}
	sort.Strings(rest)
	out = append(out, slices.Compact(rest)...)
	return append(out, "DLGT_HOST", "DLGT_SSH_COMMAND", "DLGT_REMOTE_BIN", "SSH_AUTH_SOCK")
}

// ServerSpec is the server entry one harness gets, per launch (mcp
// config) or in its user config (mcp install): both are rendered from it.
type ServerSpec struct {
	// Exe is the dlgt executable the harness starts.
	Exe string
	// ServerArgs are its arguments ("mcp", with --host and --wait-max).
	ServerArgs []string
	// Approve lets the leader call every tool without asking.
	Approve bool
	// Forward are the variables a Codex leader forwards by name.
	Forward []string
}

// claudeServer is the server's entry under "mcpServers", in the order
// Claude Code writes its keys.
type claudeServer struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func claudeMCPServer(s ServerSpec) claudeServer {
	return claudeServer{Type: "stdio", Command: s.Exe, Args: s.ServerArgs}
}

// ClaudeArgs is --mcp-config with the server, --strict-mcp-config is left
// to the user (it would drop their other servers).
func ClaudeArgs(s ServerSpec) []string {
	cfg := map[string]any{"mcpServers": map[string]any{harness.MCPServerName: claudeMCPServer(s)}}
	b, _ := json.Marshal(cfg)
	out := []string{"--mcp-config", string(b)}
	if s.Approve {
		out = append(out, "--allowedTools", "mcp__"+harness.MCPServerName)
	}
	return out
}

// codexMCPFields are the keys of the server's table, as TOML key and
// value: the first three make the -c inline table, the others a -c each.
func codexMCPFields(s ServerSpec) [][2]string {
	quoted := make([]string, len(s.ServerArgs))
	for i, a := range s.ServerArgs {
		quoted[i] = tomlString(a)
	}
	names := make([]string, len(s.Forward))
	for i, n := range s.Forward {
		names[i] = tomlString(n)
	}
	out := [][2]string{
		{"command", tomlString(s.Exe)},
		{"args", "[" + strings.Join(quoted, ", ") + "]"},
		{"env_vars", "[" + strings.Join(names, ", ") + "]"},
		{"required", "true"},
	}
	if s.Approve {
		out = append(out, [2]string{"default_tools_approval_mode", `"approve"`})
	}
	return out
}

// CodexArgs is -c overrides in TOML, one per value.
func CodexArgs(s ServerSpec) []string {
	fields := codexMCPFields(s)
	inline := make([]string, 3)
	for i, kv := range fields[:3] {
		inline[i] = kv[0] + "=" + kv[1]
	}
	out := []string{"-c", "mcp_servers." + harness.MCPServerName + "={" + strings.Join(inline, ", ") + "}"}
	for _, kv := range fields[3:] {
		out = append(out, "-c", "mcp_servers."+harness.MCPServerName+"."+kv[0]+"="+kv[1])
	}
	return out
}

// tomlString quotes s as a TOML basic string: JSON's string escapes are
// all valid TOML escapes.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// InstallCodex writes [mcp_servers.dlgt] into Codex's config.toml.
func InstallCodex(d harness.Descriptor, s ServerSpec, configDir func(harness.ConfigDir) (string, error)) ([]File, error) {
	dir, err := configDir(d.Config)
	if err != nil {
		return nil, err
	}
	f, err := EditFile(filepath.Join(dir, "config.toml"), func(old []byte) ([]byte, error) {
		return codexConfigWithServer(old, codexMCPTable(s))
	})
	if err != nil {
		return nil, err
	}
	return []File{f}, nil
}

// geminiServer is the server's entry under Gemini CLI's "mcpServers"
// (what `gemini mcp add --trust` writes): trust skips the confirmation
// of its tools.
type geminiServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Trust   bool     `json:"trust,omitempty"`
}

// InstallGemini writes "mcpServers"."dlgt" into Gemini CLI's user
// settings.json (a Session dlgt hosts carries it too: its settings are
// the user's).
func InstallGemini(d harness.Descriptor, s ServerSpec, configDir func(harness.ConfigDir) (string, error)) ([]File, error) {
	dir, err := configDir(d.Config)
	if err != nil {
		return nil, err
	}
	entry := geminiServer{Command: s.Exe, Args: s.ServerArgs, Trust: s.Approve}
	f, err := EditFile(filepath.Join(dir, "settings.json"), func(old []byte) ([]byte, error) {
		return jsonWithMember(old, []string{"mcpServers", harness.MCPServerName}, entry)
	})
	if err != nil {
		return nil, err
	}
	return []File{f}, nil
}

// InstallClaude writes "mcpServers"."dlgt" into Claude Code's
// .claude.json and, with approve, the permission rule into settings.json.
func InstallClaude(d harness.Descriptor, s ServerSpec, configDir func(harness.ConfigDir) (string, error)) ([]File, error) {
	// Claude Code keeps .claude.json in $CLAUDE_CONFIG_DIR when set, else
	// in HOME (checked with the pinned CLI's `claude mcp add --scope user`).
	stateDir, err := configDir(harness.ConfigDir{Env: d.Config.Env})
	if err != nil {
		return nil, err
	}
	settingsDir, err := configDir(d.Config)
	if err != nil {
		return nil, err
	}
	entry := claudeMCPServer(s)
	f, err := EditFile(filepath.Join(stateDir, ".claude.json"), func(old []byte) ([]byte, error) {
		return jsonWithMember(old, []string{"mcpServers", harness.MCPServerName}, entry)
	})
	if err != nil {
		return nil, err
	}
	files := []File{f}
	if s.Approve {
		rule := "mcp__" + harness.MCPServerName
		f, err := EditFile(filepath.Join(settingsDir, "settings.json"), func(old []byte) ([]byte, error) {
			return jsonWithAllowRule(old, rule)
		})
		if err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}
