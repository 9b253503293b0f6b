package mockapi_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

// roleEnv selects what the test binary does when a CLI starts it: with
// roleEnv=mcp-echo it is a tiny stdio MCP server instead of running tests.
const roleEnv = "MOCKAPI_TEST_ROLE"

// logEnv names a file the MCP server appends every request's method to,
// one per line.
const logEnv = "MOCKAPI_TEST_MCP_LOG"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "mcp-echo" {
		os.Exit(serveMCPEcho(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// serveMCPEcho is a minimal MCP server: newline-delimited JSON-RPC 2.0 on
// in/out with one tool, echo {text} -> "ECHO:<text> ID:<random hex>".
// initialize echoes the client's protocolVersion; tools/list, tools/call and
// ping are answered; any other request (Claude's first server/discover
// included) gets -32601; notifications are ignored. Calls run in their own
// goroutine so the read loop stays free.
func serveMCPEcho(in io.Reader, out io.Writer) int {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(m rpcMsg) {
		m.JSONRPC = "2.0"
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(m)
	}
	var log io.Writer = io.Discard
	if p := os.Getenv(logEnv); p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			defer f.Close()
			log = f
		}
	}
	var wg sync.WaitGroup
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var req rpcMsg
		if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 || req.Method == "" {
			continue // not a request: a notification or garbage
		}
		fmt.Fprintln(log, req.Method)
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &p)
			send(rpcMsg{ID: req.ID, Result: map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "mockapi-echo", "version": "1.0.0"},
			}})
		case "ping":
			send(rpcMsg{ID: req.ID, Result: map[string]any{}})
		case "tools/list":
			send(rpcMsg{ID: req.ID, Result: map[string]any{"tools": []any{map[string]any{
				"name":        "echo",
				"description": "Echo the text back with a fresh ID.",
				"inputSchema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"text": map[string]any{"type": "string"}},
					"required":   []string{"text"},
				},
			}}}})
		case "tools/call":
			wg.Add(1)
			go func(req rpcMsg) {
				defer wg.Done()
				var p struct {
					Name      string `json:"name"`
					Arguments struct {
						Text *string `json:"text"`
					} `json:"arguments"`
				}
				_ = json.Unmarshal(req.Params, &p)
				var text string
				isErr := false
				switch {
				case p.Name != "echo":
					text, isErr = "unknown tool "+p.Name, true
				case p.Arguments.Text == nil:
					text, isErr = "missing argument: text", true
				default:
					b := make([]byte, 6)
					_, _ = rand.Read(b)
					text = "ECHO:" + *p.Arguments.Text + " ID:" + hex.EncodeToString(b)
				}
				send(rpcMsg{ID: req.ID, Result: map[string]any{
					"content": []any{map[string]any{"type": "text", "text": text}},
					"isError": isErr,
				}})
			}(req)
		default:
			send(rpcMsg{ID: req.ID, Error: &rpcError{Code: -32601, Message: "method not found: " + req.Method}})
		}
	}
	wg.Wait()
	return 0
}

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// mcpMethods returns the requests the MCP server logged, in order.
func mcpMethods(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// checkMethods checks that the server was initialized, listed and called
// twice.
func checkMethods(t *testing.T, methods []string) {
	t.Helper()
	t.Logf("MCP requests: %q", methods)
	i := slices.Index(methods, "initialize")
	if i < 0 || !slices.Contains(methods[i:], "tools/list") {
		t.Fatalf("MCP requests %q: no initialize then tools/list", methods)
	}
	calls := 0
	for _, m := range methods {
		if m == "tools/call" {
			calls++
		}
	}
	if calls != 2 {
		t.Fatalf("MCP requests %q: %d tools/call, want 2", methods, calls)
	}
}

// checkEchoRun checks what the mock recorded of an echoAgent turn and the
// final text the CLI printed.
func checkEchoRun(t *testing.T, srv *mockapi.Server, final string) {
	t.Helper()
	var last *mockapi.Request
	for _, r := range srv.Requests() {
		if r.Kind == mockapi.KindToolResult && r.Prompt == "LEAD go" {
			last = &r
		}
	}
	if last == nil || len(last.ToolResults) != 3 {
		t.Fatalf("no request with the three tool results; last = %+v", last)
	}
	res := last.ToolResults
	if testing.Verbose() {
		t.Logf("tool results: %q", res)
	}
	m := echoID.FindStringSubmatch(res[0])
	if !strings.Contains(res[0], "ECHO:first ID:") || m == nil {
		t.Fatalf("first result %q", res[0])
	}
	if !strings.Contains(res[1], "ECHO:again "+m[1]+" ID:") {
		t.Fatalf("second result %q does not carry the first ID %s", res[1], m[1])
	}
	if !strings.Contains(res[2], "SHELL-42") {
		t.Fatalf("shell result %q", res[2])
	}
	if want := "FINAL id=" + m[1] + " second=true SHELL-42"; final != want {
		t.Fatalf("final text %q, want %q", final, want)
	}
}

func TestRealClaudeAgent(t *testing.T) {
	bin := claudeBin(t)
	t.Parallel()
	srv := mockapi.NewAnthropic(t, mockapi.Script{mockapi.Prefix("LEAD", mockapi.Reply{Agent: echoAgent})})
	mcpLog := filepath.Join(t.TempDir(), "mcp.log")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"echo": map[string]any{
		"type": "stdio", "command": testExe(t), "args": []string{"-test.run=^$"},
		"env": map[string]string{roleEnv: "mcp-echo", logEnv: mcpLog},
	}}})
	out, err := run(t, bin, t.TempDir(), "", claudeEnv(t, srv),
		"-p", "LEAD go", "--output-format", "json",
		"--mcp-config", string(cfg), "--strict-mcp-config", "--allowedTools", "mcp__echo,Bash")
	if err != nil {
		t.Fatal(err)
	}
	r := parseClaude(t, out)
	if r.IsError {
		t.Fatalf("result = %+v", r)
	}
	checkEchoRun(t, srv, r.Result)
	checkMethods(t, mcpMethods(t, mcpLog))
}

func TestRealCodexAgent(t *testing.T) {
	bin := codexBin(t)
	t.Parallel()
	srv := mockapi.NewResponses(t, mockapi.Script{mockapi.Prefix("LEAD", mockapi.Reply{Agent: echoAgent})})
	cwd := t.TempDir()
	mcpLog := filepath.Join(t.TempDir(), "mcp.log")
	server := fmt.Sprintf(`mcp_servers.echo={command=%q, args=["-test.run=^$"], env={%s="mcp-echo", %s=%q}}`,
		testExe(t), roleEnv, logEnv, mcpLog)
	// Codex's default sandbox (workspace-write) runs the shell call.
	out, err := run(t, bin, cwd, "", codexEnv(t, srv, cwd),
		"exec", "--json", "--skip-git-repo-check",
		"-c", server,
		"-c", `mcp_servers.echo.default_tools_approval_mode="approve"`,
		"-c", "mcp_servers.echo.required=true",
		"LEAD go")
	if err != nil {
		t.Fatal(err)
	}
	msgs, errs := codexMessages(t, out)
	if len(msgs) == 0 {
		t.Fatalf("no agent message; errors %q\n%s", errs, tail(out, 4000))
	}
	checkEchoRun(t, srv, msgs[len(msgs)-1])
	checkMethods(t, mcpMethods(t, mcpLog))
}
