package mockapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
)

// These tests drive the real CLIs installed by .ci/install-harnesses (or
// named by DLGT_CLAUDE_BIN / DLGT_CODEX_BIN) against the mocks. They are
// skipped when the binaries are absent.

func claudeBin(t *testing.T) string { return pinned.Bin(t, "claude") }

func codexBin(t *testing.T) string { return pinned.Bin(t, "codex") }

// run runs bin with a minimal environment (no proxies, no user config) and
// returns its stdout.
func run(t *testing.T, bin, dir, stdin string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TERM=dumb"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || testing.Verbose() {
		t.Logf("%s %q: err=%v\nstderr:\n%s", filepath.Base(bin), args, err, tail(stderr.String(), 4000))
	}
	return stdout.String(), err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// bigPrompt is a ~100 KB multi-line prompt with tabs, quotes, backslashes
// and non-ASCII text, for byte-exact delivery checks.
func bigPrompt() string {
	var b strings.Builder
	b.WriteString("BIG-PROMPT\n")
	for i := 0; b.Len() < 100<<10; i++ {
		fmt.Fprintf(&b, "line %05d\t\"quoted\" back\\slash <tag> $HOME `tick` 你好 ●\n", i)
	}
	b.WriteString("END")
	return b.String()
}

// claudeEnv returns the environment that runs Claude Code offline against
// srv with a private HOME.
func claudeEnv(t *testing.T, srv *mockapi.Server) []string {
	return append([]string{
		"HOME=" + t.TempDir(),
		"ANTHROPIC_BASE_URL=" + srv.URL(),
		"ANTHROPIC_API_KEY=sk-ant-mock-key",
	}, mockapi.ClaudeOfflineEnv()...)
}

type claudeResult struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
}

func parseClaude(t *testing.T, out string) claudeResult {
	t.Helper()
	var r claudeResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("claude output is not JSON: %v\n%s", err, tail(out, 2000))
	}
	return r
}

func TestRealClaude(t *testing.T) {
	bin := claudeBin(t)
	t.Parallel()
	srv := mockapi.NewAnthropic(t, mockapi.Script{
		mockapi.Prefix("USE-TOOL", mockapi.Reply{Tool: "echo probe > probe.txt", Text: "MOCK-AFTER-TOOL"}),
		mockapi.Prefix("FAIL-400", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
		mockapi.Prefix("FAIL-500", mockapi.Reply{Status: 500, ErrorMessage: "mock server error"}),
		mockapi.Prefix("OVERLOADED-ONCE", mockapi.Reply{Status: 529, Failures: 1, Text: "MOCK-RECOVERED"}),
	})
	cwd := t.TempDir()

	t.Run("hello", func(t *testing.T) {
		out, err := run(t, bin, cwd, "", claudeEnv(t, srv), "-p", "hello", "--output-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		if r := parseClaude(t, out); r.IsError || r.Result != "MOCK-REPLY: hello" {
			t.Fatalf("result = %+v", r)
		}
	})

	t.Run("big prompt on stdin", func(t *testing.T) {
		p := bigPrompt()
		out, err := run(t, bin, cwd, p, claudeEnv(t, srv), "-p", "--output-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		if r := parseClaude(t, out); r.Result != mockapi.DefaultText(p) {
			t.Fatalf("result = %+v", r)
		}
		if !containsPrompt(srv.Prompts(), p) {
			t.Fatalf("the %d-byte prompt did not arrive byte-exact", len(p))
		}
	})

	t.Run("tool call", func(t *testing.T) {
		// Headless, the default permission mode denies the Bash call (the
		// tool_result is then an error); --allowedTools lets it run.
		out, err := run(t, bin, cwd, "", claudeEnv(t, srv),
			"-p", "USE-TOOL please", "--output-format", "json", "--allowedTools", "Bash")
		if err != nil {
			t.Fatal(err)
		}
		if r := parseClaude(t, out); r.Result != "MOCK-AFTER-TOOL" {
			t.Fatalf("result = %+v", r)
		}
		if b, err := os.ReadFile(filepath.Join(cwd, "probe.txt")); err != nil || string(b) != "probe\n" {
			t.Fatalf("probe.txt = %q, %v", b, err)
		}
		if !hasKind(srv.Requests(), mockapi.KindToolResult, "USE-TOOL please") {
			t.Fatal("no tool_result request recorded")
		}
	})

	t.Run("http 400", func(t *testing.T) {
		out, _ := run(t, bin, cwd, "", claudeEnv(t, srv), "-p", "FAIL-400", "--output-format", "json")
		if r := parseClaude(t, out); !r.IsError || !strings.Contains(r.Result, "mock bad request") {
			t.Fatalf("result = %+v", r)
		}
	})

	t.Run("http 500 without retries", func(t *testing.T) {
		env := append(claudeEnv(t, srv), "CLAUDE_CODE_MAX_RETRIES=0")
		out, _ := run(t, bin, cwd, "", env, "-p", "FAIL-500", "--output-format", "json")
		if r := parseClaude(t, out); !r.IsError || !strings.Contains(r.Result, "mock server error") {
			t.Fatalf("result = %+v", r)
		}
	})

	t.Run("http 529 then retried", func(t *testing.T) {
		out, err := run(t, bin, cwd, "", claudeEnv(t, srv), "-p", "OVERLOADED-ONCE", "--output-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		if r := parseClaude(t, out); r.IsError || r.Result != "MOCK-RECOVERED" {
			t.Fatalf("result = %+v", r)
		}
	})
}

// codexHome writes a CODEX_HOME pointing Codex at srv with cwd trusted.
func codexHome(t *testing.T, srv *mockapi.Server, cwd string) string {
	home := t.TempDir()
	cfg := mockapi.CodexConfig(srv.URL()) + mockapi.CodexTrust(cwd)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func codexEnv(t *testing.T, srv *mockapi.Server, cwd string) []string {
	return []string{
		"HOME=" + t.TempDir(),
		"CODEX_HOME=" + codexHome(t, srv, cwd),
		"MOCK_API_KEY=mock-key",
	}
}

// codexMessages returns the agent_message texts and error messages in
// `codex exec --json` output.
func codexMessages(t *testing.T, out string) (msgs, errs []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Error   struct {
				Message string `json:"message"`
			} `json:"error"`
			Item struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Message string `json:"message"`
			} `json:"item"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue
		}
		switch {
		case ev.Type == "item.completed" && ev.Item.Type == "agent_message":
			msgs = append(msgs, ev.Item.Text)
		case ev.Type == "error":
			errs = append(errs, ev.Message)
		case ev.Type == "turn.failed":
			errs = append(errs, ev.Error.Message)
		}
	}
	return msgs, errs
}

func TestRealCodex(t *testing.T) {
	bin := codexBin(t)
	t.Parallel()
	srv := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Prefix("USE-TOOL", mockapi.Reply{Tool: "echo probe > probe.txt", Text: "MOCK-AFTER-TOOL"}),
		mockapi.Prefix("FAIL-400", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
	})
	cwd := t.TempDir()
	exec := func(t *testing.T, stdin string, args ...string) (string, error) {
		args = append([]string{"exec", "--skip-git-repo-check", "--json"}, args...)
		return run(t, bin, cwd, stdin, codexEnv(t, srv, cwd), args...)
	}

	t.Run("hello", func(t *testing.T) {
		out, err := exec(t, "", "hello")
		if err != nil {
			t.Fatal(err)
		}
		if msgs, _ := codexMessages(t, out); len(msgs) != 1 || msgs[0] != "MOCK-REPLY: hello" {
			t.Fatalf("agent messages = %q\n%s", msgs, out)
		}
	})

	t.Run("big prompt on stdin", func(t *testing.T) {
		p := bigPrompt()
		out, err := exec(t, p, "-")
		if err != nil {
			t.Fatal(err)
		}
		if msgs, _ := codexMessages(t, out); len(msgs) != 1 || msgs[0] != mockapi.DefaultText(p) {
			t.Fatalf("agent messages = %q", msgs)
		}
		if !containsPrompt(srv.Prompts(), p) {
			t.Fatalf("the %d-byte prompt did not arrive byte-exact", len(p))
		}
	})

	t.Run("tool call", func(t *testing.T) {
		out, err := exec(t, "", "--dangerously-bypass-approvals-and-sandbox", "USE-TOOL please")
		if err != nil {
			t.Fatal(err)
		}
		if msgs, _ := codexMessages(t, out); len(msgs) == 0 || msgs[len(msgs)-1] != "MOCK-AFTER-TOOL" {
			t.Fatalf("agent messages = %q\n%s", msgs, out)
		}
		if b, err := os.ReadFile(filepath.Join(cwd, "probe.txt")); err != nil || string(b) != "probe\n" {
			t.Fatalf("probe.txt = %q, %v", b, err)
		}
		if !hasKind(srv.Requests(), mockapi.KindToolResult, "USE-TOOL please") {
			t.Fatal("no tool_result request recorded")
		}
	})

	t.Run("http 400", func(t *testing.T) {
		out, err := exec(t, "", "FAIL-400")
		if err == nil {
			t.Fatalf("codex exec succeeded against a 400:\n%s", out)
		}
		if _, errs := codexMessages(t, out); !strings.Contains(strings.Join(errs, "\n"), "mock bad request") {
			t.Fatalf("errors = %q\n%s", errs, out)
		}
	})
}

func containsPrompt(prompts []string, p string) bool {
	for _, q := range prompts {
		if q == p {
			return true
		}
	}
	return false
}

func hasKind(reqs []mockapi.Request, kind mockapi.RequestKind, prompt string) bool {
	for _, r := range reqs {
		if r.Kind == kind && r.Prompt == prompt {
			return true
		}
	}
	return false
}

func geminiBin(t *testing.T) string { return pinned.Bin(t, "gemini") }

// Gemini CLI 0.61.0 headless against the mock: a reply streamed in many
// chunks comes out whole, a shell tool call runs (yolo) and its output
// goes back to the model, a call a BeforeTool hook denies reaches the mock
// as a refusal (Refused), and the requests carry the key and the prompt
// byte-exact.
func TestRealGeminiHeadless(t *testing.T) {
	bin := geminiBin(t)
	text := mockapi.Lines("gemini chunked line", 12)
	srv := mockapi.NewGemini(t, mockapi.Script{
		mockapi.Prefix("CHUNKS", mockapi.Reply{Text: text, Chunk: 7}),
		mockapi.Prefix("TOOL", mockapi.Reply{Tool: "printf 'SHELL-%s\\n' 42", Text: "TOOL-DONE", Refused: "TOOL-REFUSED"}),
	})
	home, work := t.TempDir(), t.TempDir()
	if err := mockapi.WriteGeminiHome(home, work); err != nil {
		t.Fatal(err)
	}
	env := append(mockapi.GeminiEnv(srv.URL()), "HOME="+home, "GEMINI_CLI_HOME="+home)
	out, err := run(t, bin, work, "", env, "-p", "CHUNKS please", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Response string `json:"response"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Response != text {
		t.Errorf("response %q, want %q", res.Response, text)
	}
	out, err = run(t, bin, work, "", env, "-p", "TOOL run", "--approval-mode", "yolo", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "TOOL-DONE") {
		t.Errorf("tool turn output: %s", out)
	}
	var sawResult bool
	for _, r := range srv.Requests() {
		if r.Header.Get("x-goog-api-key") != "mock-gemini-key" && r.Kind != mockapi.KindOther {
			t.Errorf("%s without the key: %v", r.Path, r.Header)
		}
		if r.Kind == mockapi.KindToolResult && len(r.ToolResults) == 1 && strings.Contains(r.ToolResults[0], "SHELL-42") {
			sawResult = true
		}
	}
	if !sawResult {
		for _, r := range srv.Requests() {
			t.Logf("%s %s %q", r.Kind, r.Path, r.ToolResults)
		}
		t.Errorf("no request carried the command's output")
	}
	if p := srv.Prompts(); len(p) != 2 || p[0] != "CHUNKS please" || p[1] != "TOOL run" {
		t.Errorf("prompts %q", p)
	}

	// A BeforeTool hook that denies the call, as dlgt's does for
	// session respond --deny: the model gets Gemini's "Tool execution
	// blocked: <reason>", which the mock reads as a refusal.
	settingsPath := filepath.Join(home, ".gemini", "settings.json")
	var settings map[string]any
	b, err := os.ReadFile(settingsPath)
	if err != nil || json.Unmarshal(b, &settings) != nil {
		t.Fatalf("settings.json: %v %s", err, b)
	}
	settings["hooks"] = map[string]any{"BeforeTool": []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{
		"type": "command", "command": `echo '{"decision":"deny","reason":"NOT-HERE"}'`, "timeout": 30000}}}}}
	b, _ = json.Marshal(settings)
	if err := os.WriteFile(settingsPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, bin, work, "", env, "-p", "TOOL denied", "--approval-mode", "yolo", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "TOOL-REFUSED: NOT-HERE") {
		for _, r := range srv.Requests() {
			t.Logf("%s %s %q refused %v", r.Kind, r.Path, r.ToolResults, r.Refused)
		}
		t.Errorf("denied tool turn output: %s", out)
	}
}
