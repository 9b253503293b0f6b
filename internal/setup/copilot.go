package setup

import (
	"encoding/json"
	"path/filepath"

	"github.com/dlgt-dev/dlgt/harness"
)

// copilotServer is the server's entry under GitHub Copilot CLI's
// "mcpServers" (mcp-config.json), in the order `copilot mcp add` 1.0.102
// writes its keys: every tool of the server offered to the model.
type copilotServer struct {
	Tools   []string `json:"tools"`
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func copilotMCPServer(s ServerSpec) copilotServer {
	return copilotServer{Tools: []string{"*"}, Type: "local", Command: s.Exe, Args: s.ServerArgs}
}

// CopilotArgs is --additional-mcp-config with the server (Copilot CLI's
// per-launch form, added to the user's servers) and, with Approve,
// --allow-tool for the whole server (Copilot's documented form for an
// MCP server's tools).
func CopilotArgs(s ServerSpec) []string {
	cfg := map[string]any{"mcpServers": map[string]any{harness.MCPServerName: copilotMCPServer(s)}}
	b, _ := json.Marshal(cfg)
	out := []string{"--additional-mcp-config", string(b)}
	if s.Approve {
		out = append(out, "--allow-tool", harness.MCPServerName)
	}
	return out
}

// InstallCopilot writes "mcpServers"."dlgt" into Copilot CLI's user
// mcp-config.json (a Session dlgt hosts carries it too: its home links
// the user's).
func InstallCopilot(d harness.Descriptor, s ServerSpec, configDir func(harness.ConfigDir) (string, error)) ([]File, error) {
	dir, err := configDir(d.Config)
	if err != nil {
		return nil, err
	}
	f, err := EditFile(filepath.Join(dir, "mcp-config.json"), func(old []byte) ([]byte, error) {
		return jsonWithMember(old, []string{"mcpServers", harness.MCPServerName}, copilotMCPServer(s))
	})
	if err != nil {
		return nil, err
	}
	return []File{f}, nil
}
