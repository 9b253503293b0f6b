package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The editor's MCP servers become harness options each harness accepts.
func TestMCPOptions(t *testing.T) {
	servers := []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "Files Server", Command: "/bin/fs", Args: []string{"--root", "/a b"}, Env: []sdk.EnvVariable{{Name: "K", Value: `v"1`}}}},
		{Http: &sdk.McpServerHttpInline{Name: "web", Type: "http", Url: "http://127.0.0.1:9/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer x"}}}},
		{Sse: &sdk.McpServerSseInline{Name: "old", Type: "sse", Url: "http://127.0.0.1:9/sse"}},
	}
	opts, skipped := mcpOptions(harness.MCPClaudeJSON, servers)
	if len(opts) != 1 || len(skipped) != 0 || !strings.HasPrefix(opts[0], "mcp-config=") {
		t.Fatalf("claude: %q, skipped %q", opts, skipped)
	}
	var cfg struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(opts[0], "mcp-config=")), &cfg); err != nil {
		t.Fatal(err)
	}
	if s := cfg.MCPServers["Files Server"]; s["command"] != "/bin/fs" || s["type"] != "stdio" || s["env"].(map[string]any)["K"] != `v"1` {
		t.Errorf("claude stdio server: %v", s)
	}
	if s := cfg.MCPServers["web"]; s["url"] != "http://127.0.0.1:9/mcp" || s["type"] != "http" {
		t.Errorf("claude http server: %v", s)
	}
	if err := (harness.Claude{}).ValidateOptions(opts); err != nil {
		t.Errorf("Claude Code refuses %q: %v", opts, err)
	}

	opts, skipped = mcpOptions(harness.MCPCodexTOML, servers)
	want := []string{
		`mcp_servers.files_server={command="/bin/fs", args=["--root", "/a b"], env={"K"="v\"1"}}`,
		`mcp_servers.web={url="http://127.0.0.1:9/mcp", http_headers={"Authorization"="Bearer x"}}`,
	}
	if strings.Join(opts, "\n") != strings.Join(want, "\n") || len(skipped) != 1 || skipped[0] != "old" {
		t.Errorf("codex: %q, skipped %q; want %q", opts, skipped, want)
	}
	if err := (harness.Codex{}).ValidateOptions(opts); err != nil {
		t.Errorf("Codex refuses %q: %v", opts, err)
	}

	// Copilot CLI: one --additional-mcp-config of every server, in the
	// shape `copilot mcp add --json` prints (1.0.102): type local for a
	// command, http or sse for a URL, every tool enabled.
	opts, skipped = mcpOptions(harness.MCPCopilotJSON, servers)
	if len(opts) != 1 || len(skipped) != 0 || !strings.HasPrefix(opts[0], "additional-mcp-config=") {
		t.Fatalf("copilot: %q, skipped %q", opts, skipped)
	}
	cfg.MCPServers = nil
	if err := json.Unmarshal([]byte(strings.TrimPrefix(opts[0], "additional-mcp-config=")), &cfg); err != nil {
		t.Fatal(err)
	}
	allTools := func(s map[string]any) bool {
		tools, _ := s["tools"].([]any)
		return len(tools) == 1 && tools[0] == "*"
	}
	if s := cfg.MCPServers["Files Server"]; s["command"] != "/bin/fs" || s["type"] != "local" || s["env"].(map[string]any)["K"] != `v"1` || !allTools(s) {
		t.Errorf("copilot local server: %v", s)
	}
	if s := cfg.MCPServers["web"]; s["url"] != "http://127.0.0.1:9/mcp" || s["type"] != "http" || s["headers"].(map[string]any)["Authorization"] != "Bearer x" || !allTools(s) {
		t.Errorf("copilot http server: %v", s)
	}
	if s := cfg.MCPServers["old"]; s["url"] != "http://127.0.0.1:9/sse" || s["type"] != "sse" || !allTools(s) {
		t.Errorf("copilot sse server: %v", s)
	}
	if err := (harness.Copilot{}).ValidateOptions(opts); err != nil {
		t.Errorf("Copilot refuses %q: %v", opts, err)
	}

	opts, skipped = mcpOptions(harness.MCPGeminiJSON, servers)
	if len(opts) != 0 || len(skipped) != 3 {
		t.Errorf("gemini: %q, skipped %q; want none passed", opts, skipped)
	}
}

// A result's stop_reason becomes the prompt's stopReason whatever its
// status; a cancel wins; a failed result without one is an error.
func TestStopReasonOfResult(t *testing.T) {
	cases := []struct {
		status, stop string
		cancelled    bool
		want         sdk.StopReason
		ok           bool
	}{
		{rpc.StatusCompleted, "", false, sdk.StopReasonEndTurn, true},
		{rpc.StatusCompleted, "", true, sdk.StopReasonCancelled, true},
		{rpc.StatusCanceled, "", false, sdk.StopReasonCancelled, true},
		{rpc.StatusCanceled, rpc.StopMaxTokens, false, sdk.StopReasonCancelled, true},
		{rpc.StatusCompleted, rpc.StopMaxTokens, false, sdk.StopReasonMaxTokens, true},
		{rpc.StatusFailed, rpc.StopMaxTokens, false, sdk.StopReasonMaxTokens, true},
		{rpc.StatusFailed, rpc.StopRefusal, false, sdk.StopReasonRefusal, true},
		{rpc.StatusCompleted, "pause_turn", false, sdk.StopReasonEndTurn, true},
		{rpc.StatusFailed, "", false, "", false},
		{rpc.StatusInterrupted, "", false, "", false},
	}
	for _, c := range cases {
		got, ok := stopReason(rpc.Result{Status: c.status, StopReason: c.stop}, c.cancelled)
		if got != c.want || ok != c.ok {
			t.Errorf("%s/%q/cancelled %v: %q %v, want %q %v", c.status, c.stop, c.cancelled, got, ok, c.want, c.ok)
		}
	}
}
