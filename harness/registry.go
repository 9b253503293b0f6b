package harness

import (
	"fmt"
	"path/filepath"
	"strings"
)

// registry lists the harnesses dlgt knows, in the order every listing
// (completion, doctor, skill install, harness.list) shows them. What each
// one is lives in its own file (claude.go, codex.go); adding a harness is
// that file plus one line here.
var registry = []func() Descriptor{
	claudeDescriptor,
	codexDescriptor,
	geminiDescriptor,
	copilotDescriptor,
}

// Descriptor is what the rest of dlgt knows about one harness: everything
// outside this package that differs between harnesses is derived from it.
type Descriptor struct {
	// Name is the wire name (session.create's harness, the prefix of
	// provider-qualified ids, --harness NAME).
	Name string
	// DisplayName is the product's name, for people ("Claude Code").
	DisplayName string
	// Harness is the adapter the daemon launches it with.
	Harness Harness
	// BinEnv is the variable that names its executable (DLGT_CLAUDE_BIN);
	// BinName the executable looked up on PATH without it.
	BinEnv  string
	BinName string
	// Install is the command that installs the tested version (doctor's
	// hint).
	Install string
	// Config is the harness's user configuration directory.
	Config ConfigDir
	// SkillsDir is where, under Config, it loads user skills from ("skills");
	// empty: it loads none, and dlgt skill install skips it.
	SkillsDir string
	// MCP is how a dlgt MCP server entry is given to it (dlgt mcp config,
	// dlgt mcp install); MCPNone: not supported.
	MCP MCPFormat
	// ProviderEnv are the variables its launches read from the client
	// environment (credentials, endpoints) that a Session started by an
	// MCP server under a filtering leader still needs.
	ProviderEnv []string
	// LegacyFlag keeps the --NAME flag that commands accepted before
	// --harness NAME, as a hidden deprecated alias.
	LegacyFlag bool
}

// ConfigDir is a user configuration directory: $Env (joined with EnvSub,
// when the variable names a home rather than the directory itself) when
// set (it must be absolute), else $HOME/Home.
type ConfigDir struct {
	Env    string // "CLAUDE_CONFIG_DIR"
	EnvSub string // "" (Gemini: ".gemini", GEMINI_CLI_HOME stands for the home)
	Home   string // ".claude"
}

// Resolve finds the directory with getenv, or says which variable to fix.
func (c ConfigDir) Resolve(getenv func(string) string) (string, error) {
	if dir := getenv(c.Env); dir != "" {
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("%s is %q, not an absolute path", c.Env, dir)
		}
		return filepath.Join(dir, c.EnvSub), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("HOME is %q, not an absolute path, and %s is not set", home, c.Env)
	}
	return filepath.Join(home, c.Home), nil
}

// Describe is Config.Env's default for people: "${CLAUDE_CONFIG_DIR:-~/.claude}".
// With EnvSub: "${GEMINI_CLI_HOME:-~}/.gemini".
func (c ConfigDir) Describe() string {
	if c.EnvSub != "" && c.EnvSub == c.Home {
		return "${" + c.Env + ":-~}/" + c.EnvSub
	}
	return "${" + c.Env + ":-~/" + c.Home + "}"
}

// MCPServerName is the name a leader harness's configuration registers
// dlgt's MCP server under: its model sees mcp__dlgt__<tool>.
const MCPServerName = "dlgt"

// MCPFormat is how a harness takes an MCP server entry.
type MCPFormat int

// MCP formats.
const (
	MCPNone MCPFormat = iota
	// MCPClaudeJSON: a --mcp-config JSON argument per launch; the user
	// config's "mcpServers" in .claude.json.
	MCPClaudeJSON
	// MCPCodexTOML: -c mcp_servers.NAME TOML overrides per launch; the
	// user config's [mcp_servers.NAME] in config.toml.
	MCPCodexTOML
	// MCPGeminiJSON: the user settings' "mcpServers" in settings.json;
	// there is no per-launch form (Gemini CLI has no flag for it).
	MCPGeminiJSON
	// MCPCopilotJSON: an --additional-mcp-config JSON argument per
	// launch; the user config's "mcpServers" in mcp-config.json.
	MCPCopilotJSON
)

// All returns the registered harnesses in registry order; each call
// returns a fresh slice.
func All() []Descriptor {
	out := make([]Descriptor, len(registry))
	for i, d := range registry {
		out[i] = d()
	}
	return out
}

// Names lists names in order.
func Names(ds []Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// Find returns the descriptor of name among ds, or an *UnknownError.
func Find(ds []Descriptor, name string) (Descriptor, error) {
	for _, d := range ds {
		if d.Name == name {
			return d, nil
		}
	}
	return Descriptor{}, &UnknownError{Name: name, Known: Names(ds)}
}

// Lookup is Find among All.
func Lookup(name string) (Descriptor, error) { return Find(All(), name) }

// UnknownError is a harness name that is not registered.
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	name := e.Name
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return fmt.Sprintf("unknown harness %q (known: %s)", name, strings.Join(e.Known, ", "))
}

// BinEnv collects the binary variables of ds that getenv sets (the daemon
// passes its own to launches whose client names none).
func BinEnv(ds []Descriptor, getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, d := range ds {
		if v := getenv(d.BinEnv); v != "" {
			out[d.BinEnv] = v
		}
	}
	return out
}
