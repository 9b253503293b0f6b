// Command mockserver runs dlgt's mock model API on 127.0.0.1 for trying dlgt
// without an account: the Anthropic Messages API for Claude Code, the
// OpenAI Responses API for Codex (-kind responses), or the Gemini API for
// Gemini CLI (-kind gemini). It prints the environment a client needs and
// serves until interrupted.
//
//	go run ./harnesstest/mockapi/mockserver -home /tmp/demo-home
//
// With -home it also seeds that directory as the client's HOME: for Claude
// Code its .claude.json (onboarding done, the mock key approved), so the TUI
// starts without dialogs; for Codex (-kind responses) .codex/config.toml
// with the mock as the model provider (dlgt trusts the launch directory); for
// Gemini CLI (-kind gemini) .gemini/settings.json signing in with an API key
// and keeping the CLI offline (dlgt skips Gemini's folder trust for the
// launch directory). The demo script answers any prompt mentioning now.txt
// with a shell tool call `date > now.txt` and then "Wrote the date to
// now.txt.", or, when the call was refused, a reply saying so; everything
// else with "MOCK-REPLY: <prompt>".
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

const mockKey = "sk-ant-mock-key-0123456789abcdef"

func main() {
	kind := flag.String("kind", "anthropic", "anthropic (Claude Code), responses (Codex) or gemini (Gemini CLI)")
	home := flag.String("home", "", "seed this directory as the client's HOME for the CLI of -kind")
	flag.Parse()
	script := mockapi.Script{
		mockapi.Contains("now.txt", mockapi.Reply{Tool: "date > now.txt", Text: "Wrote the date to now.txt.",
			Refused: "Did not write now.txt, the command was denied"}),
	}
	var srv *mockapi.Server
	switch *kind {
	case "anthropic":
		srv = mockapi.NewAnthropic(nil, script)
	case "responses":
		srv = mockapi.NewResponses(nil, script)
	case "gemini":
		srv = mockapi.NewGemini(nil, script)
	default:
		fmt.Fprintln(os.Stderr, "mockserver: -kind must be anthropic, responses or gemini")
		os.Exit(2)
	}
	defer srv.Close()
	if *home != "" {
		seed := seedClaudeHome
		switch *kind {
		case "responses":
			seed = func(dir string) error { return seedCodexHome(dir, srv.URL()) }
		case "gemini":
			seed = func(dir string) error { return mockapi.WriteGeminiHome(dir) }
		}
		if err := seed(*home); err != nil {
			fmt.Fprintln(os.Stderr, "mockserver:", err)
			os.Exit(1)
		}
		abs, _ := filepath.Abs(*home)
		fmt.Printf("export HOME=%s\n", abs)
	}
	switch *kind {
	case "anthropic":
		fmt.Printf("export ANTHROPIC_BASE_URL=%s\nexport ANTHROPIC_API_KEY=%s\n", srv.URL(), mockKey)
		for _, kv := range mockapi.ClaudeOfflineEnv() {
			fmt.Printf("export %s\n", kv)
		}
	case "gemini":
		if *home != "" {
			abs, _ := filepath.Abs(*home)
			fmt.Printf("export GEMINI_CLI_HOME=%s\n", abs)
		}
		for _, kv := range mockapi.GeminiEnv(srv.URL()) {
			fmt.Printf("export %s\n", kv)
		}
	default:
		if *home != "" {
			abs, _ := filepath.Abs(*home)
			fmt.Printf("export CODEX_HOME=%s\n", filepath.Join(abs, ".codex"))
		}
		fmt.Printf("# Codex: model_provider=mock with base_url=%s/v1, wire_api=responses, env_key=MOCK_API_KEY\nexport MOCK_API_KEY=mock\n", srv.URL())
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

// seedClaudeHome writes the .claude.json a fresh Claude Code TUI needs to
// start without first-run dialogs against the mock.
func seedClaudeHome(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	state := map[string]any{
		"hasCompletedOnboarding":        true,
		"hasSeenAutoDefaultNotice":      true,
		"bypassPermissionsModeAccepted": true,
		"customApiKeyResponses":         map[string]any{"approved": []string{mockKey[len(mockKey)-20:]}, "rejected": []string{}},
	}
	data, _ := json.MarshalIndent(state, "", "  ")
	return os.WriteFile(filepath.Join(dir, ".claude.json"), data, 0o600)
}

// seedCodexHome writes the .codex/config.toml under dir that points Codex
// at the mock Responses API at url, its key read from MOCK_API_KEY.
func seedCodexHome(dir, url string) error {
	codexHome := filepath.Join(dir, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(mockapi.CodexConfig(url)), 0o600)
}
