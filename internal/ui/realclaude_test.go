package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// realClaudeBin is DLGT_CLAUDE_BIN, else the pinned Claude Code that
// .ci/install-harnesses puts under the module root; the test is skipped
// when it is absent.
func realClaudeBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DLGT_CLAUDE_BIN")
	if p == "" {
		p, _ = filepath.Abs("../../.cache/harnesses/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		t.Skipf("Claude Code not installed (%s): run .ci/install-harnesses or set DLGT_CLAUDE_BIN", p)
	}
	return p
}

// TestUIRealClaude runs `dlgt ui` over a Session of the real Claude Code
// (offline, against the mock Messages API on 127.0.0.1): the Session
// blocks on a Bash permission, the UI lists it first with the request in
// its preview, y allows it, and the turn's result shows in the list.
func TestUIRealClaude(t *testing.T) {
	claude := realClaudeBin(t)
	bin := dlgtBinary(t)
	if _, err := os.Stat("/usr/bin/tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	// The mock first: its cleanup runs after the daemon's, which stops
	// the harness.
	const key = "sk-ant-mock-key"
	mock := mockapi.NewAnthropic(t, mockapi.Script{
		mockapi.Prefix("UI-TOOL", mockapi.Reply{Tool: "touch ui-marker", Text: "UI-AFTER-TOOL"}),
	})
	dir := shortDir(t)
	claudeHome := filepath.Join(dir, "ch")
	os.MkdirAll(claudeHome, 0o700)
	state, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding":        true,
		"customApiKeyResponses":         map[string]any{"approved": []string{key}, "rejected": []string{}},
		"hasSeenAutoDefaultNotice":      true,
		"bypassPermissionsModeAccepted": true,
	})
	if err := os.WriteFile(filepath.Join(claudeHome, ".claude.json"), state, 0o600); err != nil {
		t.Fatal(err)
	}
	launchEnv := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": claudeHome, "ANTHROPIC_BASE_URL": mock.URL(), "ANTHROPIC_API_KEY": key,
		"DLGT_CLAUDE_BIN": claude, "TERM": "xterm-256color",
	}
	for _, kv := range mockapi.ClaudeOfflineEnv() {
		k, v, _ := strings.Cut(kv, "=")
		launchEnv[k] = v
	}
	home := filepath.Join(dir, "h")
	startDaemon(t, home)
	c, err := client.New(client.Options{Home: home, NoAutostart: true, Getenv: func(string) string { return "" },
		Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o700)
	no := false
	rc, err := c.SessionCreate(context.Background(), rpc.SessionCreateParams{Title: "touch a marker", Alias: "real", Harness: "claude",
		Cwd: proj, Prompt: "UI-TOOL run it", RequestID: "real-1", Environment: launchEnv,
		AutoApprove: &no, HarnessOptions: []string{"permission-mode=default"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, c, rc.Session.ID, rpc.StateBlocked)

	tm := newTerm(t, 120, 40, fmt.Sprintf("env DLGT_HOME=%s DLGT_NO_AUTOSTART=1 %s ui; echo UI-EXITED $?; sleep 600", home, bin))
	tm.waitScreen("the blocked Session and its request", func(s string) bool {
		p := previewPart(s, "real")
		return lineWith(s, "! blocked", "real") != "" && strings.Contains(p, "wants to use Bash") &&
			strings.Contains(p, "touch ui-marker") && strings.Contains(p, "y allow · n deny")
	})
	tm.keys("y")
	tm.waitText("✓ allowed Bash for real")
	tm.waitScreen("the result", func(s string) bool { return lineWith(s, "○ idle", "real", "completed: UI-AFTER-TOOL") != "" })
	if _, err := os.Stat(filepath.Join(proj, "ui-marker")); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	tm.keys("q")
	tm.waitText("UI-EXITED 0")
	tm.restored()
}
