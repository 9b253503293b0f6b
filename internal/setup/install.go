package setup

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Install writes s's entry into the user config of d (its MCP format's
// installer: InstallClaude, InstallCodex or InstallGemini).
func Install(d harness.Descriptor, s ServerSpec, configDir func(harness.ConfigDir) (string, error)) ([]File, error) {
	switch d.MCP {
	case harness.MCPClaudeJSON:
		return InstallClaude(d, s, configDir)
	case harness.MCPCodexTOML:
		return InstallCodex(d, s, configDir)
	case harness.MCPGeminiJSON:
		return InstallGemini(d, s, configDir)
	case harness.MCPCopilotJSON:
		return InstallCopilot(d, s, configDir)
	}
	return nil, rpc.Errorf(rpc.CodeInvalidArgument, "--harness %s: dlgt cannot add its MCP server to %s", d.Name, d.DisplayName)
}

// Args are the per-launch arguments that add s to one launch of d
// (ClaudeArgs, CodexArgs, CopilotArgs); nil for a harness that takes none.
func Args(d harness.Descriptor, s ServerSpec) []string {
	switch d.MCP {
	case harness.MCPClaudeJSON:
		return ClaudeArgs(s)
	case harness.MCPCodexTOML:
		return CodexArgs(s)
	case harness.MCPCopilotJSON:
		return CopilotArgs(s)
	}
	return nil
}

// InstallTarget says where Install writes d's entry, for a command's help.
func InstallTarget(d harness.Descriptor) string {
	switch d.MCP {
	case harness.MCPClaudeJSON:
		return fmt.Sprintf(`${%s:-~}/.claude.json, "mcpServers"."dlgt"
          (with --approve also "mcp__dlgt" in permissions.allow of
          %s/settings.json)`, d.Config.Env, d.Config.Describe())
	case harness.MCPCodexTOML:
		return d.Config.Describe() + "/config.toml, [mcp_servers.dlgt]"
	case harness.MCPGeminiJSON:
		return d.Config.Describe() + `/settings.json, "mcpServers"."dlgt"
          (with --approve "trust": true: no confirmation for its tools)`
	case harness.MCPCopilotJSON:
		return d.Config.Describe() + `/mcp-config.json, "mcpServers"."dlgt"
          (--approve adds nothing: allow its tools in Copilot itself)`
	}
	return ""
}

// InstallSkillError is the INVALID_ARGUMENT of InstallSkill failing with
// err on the last of targets, naming those written before it.
func InstallSkillError(targets []SkillTarget, err error) error {
	last := targets[len(targets)-1]
	s := ""
	for _, t := range targets[:len(targets)-1] {
		if t.Status == SkillWritten {
			s += "; already written: " + t.Path
		}
	}
	return rpc.Errorf(rpc.CodeInvalidArgument, "installing the %s skill: %v%s", last.Harness, err, s)
}

// NewServerSpec is the entry of d's leader for `exe [--host HOST] mcp
// EXTRA...` (exe made absolute; "" is dlgt on PATH). forward adds
// variables a Codex leader forwards by name to ForwardEnv(reg); for
// another harness, which passes its own environment, it must be empty.
// A bad forward is INVALID_ARGUMENT.
func NewServerSpec(reg []harness.Descriptor, d harness.Descriptor, exe, host string, extra []string, approve bool, forward []string) (ServerSpec, error) {
	if exe == "" {
		exe = "dlgt"
	} else if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	args := []string{"mcp"}
	if host != "" {
		args = []string{"--host", host, "mcp"}
	}
	spec := ServerSpec{Exe: exe, ServerArgs: append(args, extra...), Approve: approve}
	if d.MCP != harness.MCPCodexTOML {
		if len(forward) > 0 {
			codex := harness.Filter(reg, func(d harness.Descriptor) bool { return d.MCP == harness.MCPCodexTOML })
			return ServerSpec{}, rpc.Errorf(rpc.CodeInvalidArgument, "--forward-env is for --harness %s: %s passes its own environment to the server",
				harness.OrList(harness.Names(codex)), d.DisplayName)
		}
		return spec, nil
	}
	for _, name := range forward {
		if name == "" || strings.ContainsAny(name, "=\"\\\n") {
			return ServerSpec{}, rpc.Errorf(rpc.CodeInvalidArgument, "--forward-env %q is not a variable name", name)
		}
	}
	spec.Forward = append(ForwardEnv(reg), forward...)
	return spec, nil
}
