package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/mcp"
	"github.com/dlgt-dev/dlgt/rpc"
)

// mcpClient connects an MCP client to `dlgt mcp`'s server running on e
// (the tools themselves are tested in package mcp).
func mcpClient(t *testing.T, e *env, waitMax time.Duration) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	c, err := mcpDialer(e)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mcp.NewServer(c, mcpOptions(e, waitMax)).Run(ctx, st)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
		c.Close()
	})
	return cs
}

// callTool calls name with args and returns the result's first text block
// and the JSON document of its second. No structuredContent may be set: the
// CLIs would show it to the model in place of the text.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: structuredContent is set: %v", name, res.StructuredContent)
	}
	if len(res.Content) == 1 && res.IsError {
		// The SDK's own refusal of arguments that break the input schema
		// (a wrong type) carries no document.
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			return tc.Text, nil, true
		}
	}
	if len(res.Content) != 2 {
		t.Fatalf("%s: %d content blocks, want text and JSON", name, len(res.Content))
	}
	text, ok1 := res.Content[0].(*sdk.TextContent)
	doc, ok2 := res.Content[1].(*sdk.TextContent)
	if !ok1 || !ok2 {
		t.Fatalf("%s: content blocks %T %T, want two text blocks", name, res.Content[0], res.Content[1])
	}
	var structured map[string]any
	if err := json.Unmarshal([]byte(doc.Text), &structured); err != nil {
		t.Fatalf("%s: second block is not a JSON object: %v\n%s", name, err, doc.Text)
	}
	return text.Text, structured, res.IsError
}

// The command wires the CLI's texts into the server: the registry's
// harnesses in the descriptions and the CLI's words for token usage.
func TestMCPCommandTexts(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	sess := rpc.Session{ID: "claude:01", Harness: "claude", Title: "t", State: "idle"}
	d.Set(rpc.MethodSessionFetch, rpc.FetchDocument{Reason: rpc.ReasonResult, Cursor: "12", Sessions: []rpc.FetchSession{{Session: sess,
		Results: []rpc.Result{{ExecutionSeq: 2, Status: "completed", FinalText: strp("ok"),
			Usage: json.RawMessage(`{"input_tokens":10,"cache_read_input_tokens":1200,"output_tokens":3,"total_tokens":1213,"requests":1}`)}}}}})
	e, _, _ := cliEnv(t, d, nil, nil, "")
	cs := mcpClient(t, e, 5*time.Second)
	text, _, isErr := callTool(t, cs, "wait", map[string]any{"session": "claude:01"})
	if isErr || !strings.Contains(text, "\nUsage: 1,213 tokens in 1 model request (input 10, cache read 1,200, cache write 0, output 3)\n") {
		t.Errorf("wait: %v\n%s", isErr, text)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "delegate" && !strings.Contains(tool.Description, "(harness "+cli.HarnessList(e.Registry())+")") {
			t.Errorf("delegate description %q", tool.Description)
		}
	}
	text, _, isErr = callTool(t, cs, "delegate", map[string]any{"prompt": "x", "request_id": "r"})
	if !isErr || !strings.Contains(text, "harness: is required: "+cli.HarnessList(e.Registry())) {
		t.Errorf("delegate without a harness: %v\n%s", isErr, text)
	}
}

func strp(s string) *string { return &s }

func TestMCPConfigArgs(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	e.Exe = "/opt/dlgt/bin/dlgt"
	if code := run([]string{"mcp", "config", "--claude", "--approve"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 || lines[0] != "--mcp-config" || lines[2] != "--allowedTools" || lines[3] != "mcp__dlgt" {
		t.Fatalf("claude args %q", lines)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type, Command string
			Args          []string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &cfg); err != nil || cfg.MCPServers["dlgt"].Command != "/opt/dlgt/bin/dlgt" || cfg.MCPServers["dlgt"].Args[0] != "mcp" {
		t.Errorf("claude config %s (%v)", lines[1], err)
	}
	out.Reset()
	if code := run([]string{"mcp", "config", "--codex"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	got := out.String()
	if !strings.Contains(got, "-c\nmcp_servers.dlgt={command=\"/opt/dlgt/bin/dlgt\", args=[\"mcp\"], env_vars=[\"DLGT_HOME\"") ||
		!strings.Contains(got, "mcp_servers.dlgt.required=true") || strings.Contains(got, "approve") {
		t.Errorf("codex args without --approve:\n%s", got)
	}
	out.Reset()
	if code := run([]string{"mcp", "config"}, e); code != cli.ExitError {
		t.Errorf("neither harness: exit %d, out %q", code, out)
	}
}
