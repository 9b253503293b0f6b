package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/setup"
)

// dlgt mcp install --harness copilot writes "mcpServers"."dlgt" into the
// user's mcp-config.json in the form `copilot mcp add` writes, keeps their
// other servers, changes nothing the second time, and the pinned CLI
// lists it; mcp config prints the per-launch --additional-mcp-config.
func TestMCPInstallCopilot(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".copilot")
	os.MkdirAll(dir, 0o700)
	user := "{\n  \"mcpServers\": {\n    \"other\": {\"type\": \"local\", \"command\": \"other-server\", \"args\": [], \"tools\": [\"*\"]}\n  }\n}\n"
	os.WriteFile(filepath.Join(dir, "mcp-config.json"), []byte(user), 0o600)
	vars := map[string]string{"HOME": home}
	code, d := runInstall(t, vars, "--harness", "copilot")
	if code != cli.ExitOK || len(d.Files) != 1 || d.Files[0].Status != setup.Written || d.Files[0].Path != filepath.Join(dir, "mcp-config.json") || d.Files[0].Backup == "" {
		t.Fatalf("install: exit %d %+v", code, d)
	}
	var got struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "mcp-config.json"))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	want := map[string]any{"tools": []any{"*"}, "type": "local", "command": "/opt/dlgt/bin/dlgt", "args": []any{"mcp"}}
	if !reflect.DeepEqual(got.MCPServers["dlgt"], want) || got.MCPServers["other"] == nil {
		t.Fatalf("mcp-config.json:\n%s", data)
	}
	if code, d := runInstall(t, vars, "--harness", "copilot"); code != cli.ExitOK || d.Files[0].Status != setup.Unchanged {
		t.Fatalf("second install: exit %d %+v", code, d)
	}
	// COPILOT_HOME names the directory itself.
	alt := t.TempDir()
	if code, d := runInstall(t, map[string]string{"HOME": home, "COPILOT_HOME": alt}, "--harness", "copilot"); code != cli.ExitOK || d.Files[0].Path != filepath.Join(alt, "mcp-config.json") {
		t.Fatalf("with COPILOT_HOME: exit %d %+v", code, d)
	}
	code, out := runMCP(t, vars, "config", "--harness", "copilot")
	if code != cli.ExitOK || !strings.HasPrefix(out, "--additional-mcp-config\n{\"mcpServers\":{\"dlgt\":{\"tools\":[\"*\"],\"type\":\"local\",\"command\":\"/opt/dlgt/bin/dlgt\",\"args\":[\"mcp\"]}}}\n") {
		t.Fatalf("mcp config --harness copilot: exit %d %q", code, out)
	}

	bin := pinnedCLI(t, "DLGT_COPILOT_BIN", "..", "copilot", "node_modules", "@github", "copilot-linux-x64", "copilot")
	cmd := exec.Command(bin, "mcp", "list")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "COPILOT_OFFLINE=true"}
	listed, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(listed), "dlgt (local)") || !strings.Contains(string(listed), "other (local)") {
		t.Errorf("copilot mcp list: %v\n%s", err, listed)
	}
}
