package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The pinned real CLIs behind `dlgt acp`, each against its loopback mock
// model: a prompt's answer arrives as chunks equal to the result's
// final_text, with end_turn; where the harness asks (Claude Code in its
// default permission mode, Codex without auto-approval), the editor's
// allow runs the tool. Skipped only when a CLI is not installed (CI
// installs them).

// pinned is the pinned binary at rel under .cache/harnesses (or the
// variable), skipping when it is absent.
func pinned(t *testing.T, override string, rel ...string) string {
	t.Helper()
	p := os.Getenv(override)
	if p == "" {
		p = filepath.Join(append([]string{"..", ".cache", "harnesses"}, rel...)...)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		t.Skipf("%s is not installed (.ci/install-harnesses, or set %s)", abs, override)
	}
	return abs
}

const realClaudeKey = "sk-ant-mock-acp-0123456789abcdefghij"

// realRow is one real CLI's environment and launch.
type realRow struct {
	name  string
	setup func(t *testing.T, env map[string]string, script mockapi.Script) *mockapi.Server
	// spec asks, when asks is true, for the harness's approvals.
	spec func(asks bool) client.LaunchSpec
	// asks: the harness makes the tool call pending for the editor.
	asks bool
}

var realRows = []realRow{
	{
		name: "claude",
		setup: func(t *testing.T, env map[string]string, script mockapi.Script) *mockapi.Server {
			bin := pinned(t, "DLGT_CLAUDE_BIN", "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
			mock := mockapi.NewAnthropic(t, script)
			home := t.TempDir()
			state, _ := json.Marshal(map[string]any{
				"hasCompletedOnboarding": true, "hasSeenAutoDefaultNotice": true, "bypassPermissionsModeAccepted": true,
				"customApiKeyResponses": map[string]any{"approved": []string{realClaudeKey[len(realClaudeKey)-20:]}, "rejected": []string{}},
			})
			if err := os.WriteFile(filepath.Join(home, ".claude.json"), state, 0o600); err != nil {
				t.Fatal(err)
			}
			env["HOME"], env["DLGT_CLAUDE_BIN"] = home, bin
			env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"] = mock.URL(), realClaudeKey
			for _, kv := range mockapi.ClaudeOfflineEnv() {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			return mock
		},
		spec: func(asks bool) client.LaunchSpec {
			if !asks {
				return client.LaunchSpec{Harness: "claude"}
			}
			return client.LaunchSpec{Harness: "claude", NoAutoApprove: true, HarnessOptions: []string{"permission-mode=default"}}
		},
		asks: true,
	},
	{
		name: "codex",
		setup: func(t *testing.T, env map[string]string, script mockapi.Script) *mockapi.Server {
			bin := pinned(t, "DLGT_CODEX_BIN", "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
			mock := mockapi.NewResponses(t, script)
			codexHome := t.TempDir()
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(mockapi.CodexConfig(mock.URL())), 0o600); err != nil {
				t.Fatal(err)
			}
			env["HOME"], env["CODEX_HOME"], env["MOCK_API_KEY"], env["DLGT_CODEX_BIN"] = t.TempDir(), codexHome, "mock-key", bin
			return mock
		},
		spec: func(asks bool) client.LaunchSpec {
			return client.LaunchSpec{Harness: "codex", NoAutoApprove: asks}
		},
		asks: true,
	},
	{
		name: "gemini",
		setup: func(t *testing.T, env map[string]string, script mockapi.Script) *mockapi.Server {
			bin := pinned(t, "DLGT_GEMINI_BIN", "gemini", "node_modules", ".bin", "gemini")
			if _, err := exec.LookPath("node"); err != nil {
				t.Skip("node is not on PATH (Gemini CLI is a Node script)")
			}
			mock := mockapi.NewGemini(t, script)
			home := t.TempDir()
			if err := mockapi.WriteGeminiHome(home); err != nil {
				t.Fatal(err)
			}
			env["HOME"], env["DLGT_GEMINI_BIN"] = home, bin
			for _, kv := range mockapi.GeminiEnv(mock.URL()) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			return mock
		},
		spec: func(bool) client.LaunchSpec { return client.LaunchSpec{Harness: "gemini"} },
	},
	{
		name: "copilot",
		setup: func(t *testing.T, env map[string]string, script mockapi.Script) *mockapi.Server {
			bin := pinned(t, "DLGT_COPILOT_BIN", "copilot", "node_modules", "@github", "copilot-linux-x64", "copilot")
			mock := mockapi.NewAnthropic(t, script)
			// The user's Copilot directory: signed in through BYOK
			// variables, trusting the temporary directory the world's
			// folders are made in (dlgt never trusts one itself).
			home := t.TempDir()
			dir := filepath.Join(home, ".copilot")
			cfg, _ := json.Marshal(map[string]any{"firstLaunchAt": "2026-01-01T00:00:00.000Z", "appTipShown": true, "trustedFolders": []string{os.TempDir()}})
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			env["HOME"], env["DLGT_COPILOT_BIN"] = home, bin
			env["COPILOT_PROVIDER_TYPE"], env["COPILOT_PROVIDER_BASE_URL"], env["COPILOT_PROVIDER_API_KEY"] = "anthropic", mock.URL(), "mock-key"
			env["COPILOT_MODEL"], env["COPILOT_OFFLINE"] = "claude-sonnet-4.5", "true"
			return mock
		},
		spec: func(asks bool) client.LaunchSpec {
			return client.LaunchSpec{Harness: "copilot", NoAutoApprove: asks}
		},
		asks: true,
	},
}

// realWorld is a daemon and client whose launches run row's pinned CLI
// against its mock, scripted by script, with a context bounding the test.
// The mock is made before the daemon, so the daemon's cleanup (which
// stops the CLIs) runs first.
func realWorld(t *testing.T, row realRow, script mockapi.Script) (*world, context.Context) {
	t.Helper()
	env := map[string]string{"PATH": os.Getenv("PATH"), "TERM": "xterm-256color", "GORACE": "atexit_sleep_ms=0"}
	row.setup(t, env, script)
	w := newWorldEnv(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 4*60e9)
	t.Cleanup(cancel)
	return w, ctx
}

func TestRealCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLIs")
	}
	for _, row := range realRows {
		t.Run(row.name, func(t *testing.T) {
			script := mockapi.Script{
				mockapi.Prefix("ACP-TOOL", mockapi.Reply{Tool: "touch acp-marker", Text: "AFTER-TOOL", Escalated: true}),
				mockapi.Prefix("ACP-RUN", mockapi.Reply{Tool: "touch acp-marker", Text: "AFTER-RUN"}),
			}
			w, ctx := realWorld(t, row, script)

			e := w.connectWith(acp.Options{Launch: row.spec(false), Version: "test"})
			e.initialize(ctx)
			id := e.newSession(ctx, w.cwd)
			prompt := "ACP-HELLO from the editor"
			r, err := e.prompt(ctx, id, prompt)
			if err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %+v, %v", r, err)
			}
			rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
			if err != nil || rd.Result == nil || rd.Result.FinalText == nil {
				t.Fatalf("session.read: %+v, %v", rd, err)
			}
			if got := e.agentText(id); got != *rd.Result.FinalText || got != mockapi.DefaultText(prompt) {
				t.Errorf("agent text %q, final_text %q, want %q", got, *rd.Result.FinalText, mockapi.DefaultText(prompt))
			}
			// A tool the harness runs without asking: its hooks' start and
			// end, as a tool_call and its completion, before the answer.
			r, err = e.prompt(ctx, id, "ACP-RUN it")
			if err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("tool prompt: %+v, %v", r, err)
			}
			if _, err := os.Stat(filepath.Join(w.cwd, "acp-marker")); err != nil {
				t.Errorf("the command did not run: %v", err)
			}
			checkRealToolCall(t, e.toolUpdates(id))
			os.Remove(filepath.Join(w.cwd, "acp-marker"))
			if !row.asks {
				return
			}
			e2 := w.connectWith(acp.Options{Launch: row.spec(true), Version: "test"})
			e2.stub.answer = func(_ context.Context, p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
				return sdk.NewRequestPermissionOutcomeSelected("allow")
			}
			e2.initialize(ctx)
			id2 := e2.newSession(ctx, w.cwd)
			r, err = e2.prompt(ctx, id2, "ACP-TOOL please")
			if err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("tool prompt: %+v, %v", r, err)
			}
			if _, err := os.Stat(filepath.Join(w.cwd, "acp-marker")); err != nil {
				t.Errorf("the allowed command did not run: %v", err)
			}
			if got := e2.agentText(id2); got != "AFTER-TOOL" {
				t.Errorf("answer %q, want AFTER-TOOL", got)
			}
			e2.stub.mu.Lock()
			asked := len(e2.stub.asked)
			e2.stub.mu.Unlock()
			if asked != 1 {
				t.Errorf("%d permission requests, want 1", asked)
			}
			// The request and the call's hooks are one tool call.
			checkRealToolCall(t, e2.toolUpdates(id2))
		})
	}
}

// checkRealToolCall checks the tool updates of a turn that ran `touch
// acp-marker`: one call, started as an execute tool with that command,
// completed last.
func checkRealToolCall(t *testing.T, ups []toolUpdate) {
	t.Helper()
	ids := map[string]bool{}
	for _, u := range ups {
		ids[u.id] = true
	}
	if len(ups) < 2 || len(ids) != 1 || !ups[0].start || ups[0].kind != sdk.ToolKindExecute ||
		!strings.Contains(ups[0].title, "touch acp-marker") || !strings.Contains(ups[0].input, "touch acp-marker") ||
		ups[len(ups)-1].status != sdk.ToolCallStatusCompleted {
		t.Errorf("tool updates %+v", ups)
	}
}

// TestRealClaudeStopReasons: a Claude Code turn its model cuts at the
// output token limit, or refuses, answers max_tokens or refusal (the
// result's stop_reason, from the transcript), not end_turn or an error.
func TestRealClaudeStopReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLIs")
	}
	script := mockapi.Script{
		mockapi.Prefix("ACP-CUT", mockapi.Reply{Text: "PARTIAL", StopReason: mockapi.StopMaxTokens}),
		mockapi.Prefix("ACP-REFUSE", mockapi.Reply{Text: "NO", StopReason: mockapi.StopRefusal}),
	}
	w, ctx := realWorld(t, realRows[0], script)
	e := w.connectWith(acp.Options{Launch: realRows[0].spec(false), Version: "test"})
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	for _, c := range []struct {
		prompt string
		want   sdk.StopReason
	}{
		{"ACP-HELLO first", sdk.StopReasonEndTurn},
		{"ACP-CUT please", sdk.StopReasonMaxTokens},
		{"ACP-REFUSE please", sdk.StopReasonRefusal},
		{"ACP-HELLO again", sdk.StopReasonEndTurn},
	} {
		r, err := e.prompt(ctx, id, c.prompt)
		if err != nil || r.StopReason != c.want {
			t.Errorf("%s: %+v, %v; want %s", c.prompt, r, err, c.want)
		}
		rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
		if err != nil || rd.Result == nil {
			t.Fatalf("session.read: %+v, %v", rd, err)
		}
		// Claude Code failed the cut and refused turns: the answer says
		// what it reported.
		if m, _ := r.Meta["dlgt"].(map[string]any); (c.want != sdk.StopReasonEndTurn) != (m["status"] == rpc.StatusFailed && rd.Result.Error != nil) {
			t.Errorf("%s: _meta %v with result %s %+v", c.prompt, r.Meta, rd.Result.Status, rd.Result.Error)
		}
		t.Logf("%s: status %s stop_reason %q usage %s error %+v", c.prompt, rd.Result.Status, rd.Result.StopReason, rd.Result.Usage, rd.Result.Error)
	}
}

// TestRealCodexCut: Codex records a reply cut at the token limit only as
// its turn's error text, so the prompt is a JSON-RPC error with that
// message and no stop_reason is claimed.
func TestRealCodexCut(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLIs")
	}
	script := mockapi.Script{mockapi.Prefix("ACP-CUT", mockapi.Reply{Text: "PARTIAL", StopReason: mockapi.StopMaxTokens})}
	w, ctx := realWorld(t, realRows[1], script)
	e := w.connectWith(acp.Options{Launch: realRows[1].spec(false), Version: "test"})
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	_, err := e.prompt(ctx, id, "ACP-CUT please")
	rd, rerr := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if rerr != nil || rd.Result == nil {
		t.Fatalf("session.read: %+v, %v", rd, rerr)
	}
	if code(err) != -32603 || !strings.Contains(err.Error(), "max_output_tokens") || rd.Result.StopReason != "" {
		t.Errorf("prompt: %v; result %s stop_reason %q error %+v", err, rd.Result.Status, rd.Result.StopReason, rd.Result.Error)
	}
}

// TestRealToolCallsAfterRestart: the pinned Claude Code and Codex run a
// tool in a turn; after a daemon restart, a new connection's
// session/load replays that turn's tool call, completed, between its
// prompt and its answer, from the result the daemon stored.
func TestRealToolCallsAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLIs")
	}
	for _, row := range realRows[:2] {
		t.Run(row.name, func(t *testing.T) {
			script := mockapi.Script{mockapi.Prefix("ACP-RUN", mockapi.Reply{Tool: "touch acp-marker", Text: "AFTER-RUN"})}
			env := map[string]string{"PATH": os.Getenv("PATH"), "TERM": "xterm-256color", "GORACE": "atexit_sleep_ms=0"}
			row.setup(t, env, script)
			w := newWorldEnv(t, env)
			ctx, cancel := context.WithTimeout(context.Background(), 4*60e9)
			defer cancel()
			e := w.connectWith(acp.Options{Launch: row.spec(false), Version: "test"})
			e.initialize(ctx)
			id := e.newSession(ctx, w.cwd)
			if r, err := e.prompt(ctx, id, "ACP-RUN it"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %+v, %v", r, err)
			}
			live := e.toolUpdates(id)
			checkRealToolCall(t, live)
			e.quit()
			w.restart()

			e2 := w.connectWith(acp.Options{Launch: row.spec(false), Version: "test"})
			e2.initialize(ctx)
			if _, err := e2.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: w.cwd, McpServers: []sdk.McpServer{}}); err != nil {
				t.Fatalf("session/load: %v", err)
			}
			got := e2.replay(id)
			ups := e2.toolUpdates(id)
			if len(got) != 3 || got[0] != "user: ACP-RUN it" || !strings.HasPrefix(got[1], "tool completed execute ") ||
				!strings.Contains(got[1], "touch acp-marker") || got[2] != "agent: AFTER-RUN" ||
				len(ups) != 1 || len(live) == 0 || ups[0].id != live[0].id {
				t.Errorf("replayed %q (tool updates %+v, live %+v)", got, ups, live)
			}
		})
	}
}

// TestRealCopilotRejectAndCancel: the pinned GitHub Copilot CLI behind
// `dlgt acp`, asking for approvals. The editor's reject declines its
// dialog (Esc, which ends Copilot's whole turn): the command does not
// run and the tool call ends failed. session/cancel stops a streaming
// turn: cancelled. The thread then takes the next prompt.
func TestRealCopilotRejectAndCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLIs")
	}
	row := realRows[3]
	if row.name != "copilot" {
		t.Fatalf("realRows[3] is %s", row.name)
	}
	// The slow answer streams for a minute; slowAsked closes when its
	// request reaches the mock.
	slowAsked := make(chan struct{})
	var once sync.Once
	slow := func([]string) (*mockapi.ToolCall, string) {
		once.Do(func() { close(slowAsked) })
		return nil, strings.Repeat("slow ", 60)
	}
	script := mockapi.Script{
		mockapi.Prefix("ACP-TOOL", mockapi.Reply{Tool: "touch acp-marker", Text: "AFTER-TOOL", Escalated: true}),
		mockapi.Prefix("ACP-SLOW", mockapi.Reply{Agent: slow, Chunk: 1, Delay: 200 * time.Millisecond}),
	}
	w, ctx := realWorld(t, row, script)
	e := w.connectWith(acp.Options{Launch: row.spec(true), Version: "test"})
	e.stub.answer = func(_ context.Context, p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("deny")
	}
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)

	// The turn ends with the denial: an error saying so, with the
	// result's status (docs/acp.md).
	r, err := e.prompt(ctx, id, "ACP-TOOL please")
	if code(err) != -32603 || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), `"status":"interrupted"`) {
		t.Errorf("the rejected turn answered %+v, %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(w.cwd, "acp-marker")); err == nil {
		t.Errorf("the rejected command ran")
	}
	e.stub.mu.Lock()
	asked := len(e.stub.asked)
	e.stub.mu.Unlock()
	if asked != 1 {
		t.Errorf("%d permission requests, want 1", asked)
	}
	ups := e.toolUpdates(id)
	if len(ups) == 0 || ups[len(ups)-1].status != sdk.ToolCallStatusFailed {
		t.Errorf("tool updates %+v, want the call to end failed", ups)
	}

	ch := e.promptAsync(ctx, id, "ACP-SLOW take your time")
	select {
	case <-slowAsked:
	case <-time.After(60 * time.Second):
		t.Fatal("the slow prompt did not reach the model")
	}
	if err := e.conn.Cancel(ctx, sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil || a.r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("the canceled prompt answered %+v, %v; want cancelled", a.r, a.err)
	}
	rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil || rd.Result == nil || rd.Result.Status != rpc.StatusCanceled {
		t.Errorf("the dlgt result: %+v, %v; want canceled", rd.Result, err)
	}

	prompt := "ACP-HELLO after the cancel"
	if r, err := e.prompt(ctx, id, prompt); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("the next prompt: %+v, %v", r, err)
	}
	if rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)}); err != nil || rd.Result == nil || rd.Result.FinalText == nil || *rd.Result.FinalText != mockapi.DefaultText(prompt) {
		t.Errorf("the next turn's result: %+v, %v; want %q", rd.Result, err, mockapi.DefaultText(prompt))
	}
}
