package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The screens in testdata/launch-screens are what Claude Code 2.1.332 and
// Codex 0.171.0 drew under a 40x120 PTY with an empty HOME and no API key
// (rendered by dlgt's emulator; a temporary path and a sign-in URL
// shortened). Each must give its harness's hint, and none the other's.
func TestLaunchHintRealScreens(t *testing.T) {
	const (
		claudeLogin = "Claude Code is not logged in: run `claude` once in a terminal and sign in"
		claudeSetup = "Claude Code has not finished its first-run setup: run `claude` once in a terminal, finish its setup and sign in"
		claudeReach = "Claude Code's first-run setup could not reach Anthropic: run `claude` once in a terminal with network access, finish its setup and sign in"
		codexLogin  = "Codex is not logged in: run `codex login` (or `codex` once) in a terminal"
	)
	for _, c := range []struct {
		file   string
		h      LaunchDiagnoser
		want   string
		noHint LaunchDiagnoser
	}{
		{"claude-first-run-offline.txt", Claude{}, claudeReach, Codex{}},
		{"claude-first-run-theme.txt", Claude{}, claudeSetup, Codex{}},
		{"claude-login-method.txt", Claude{}, claudeLogin, Codex{}},
		{"claude-login-browser.txt", Claude{}, claudeLogin, Codex{}},
		{"claude-not-logged-in-prompt.txt", Claude{}, claudeLogin, Codex{}},
		{"codex-sign-in.txt", Codex{}, codexLogin, Claude{}},
		{"codex-sign-in-another-way.txt", Codex{}, codexLogin, Claude{}},
		{"codex-api-key.txt", Codex{}, codexLogin, Claude{}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "launch-screens", c.file))
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(string(b), "\n")
		if got := c.h.LaunchHint(rows); got != c.want {
			t.Errorf("%s: hint %q, want %q", c.file, got, c.want)
		}
		if got := c.noHint.LaunchHint(rows); got != "" {
			t.Errorf("%s: the other harness hints %q", c.file, got)
		}
	}
}

// Screens that are no sign-in or setup give no hint: a ready prompt, the
// fake's banner, nothing at all.
func TestLaunchHintOtherScreens(t *testing.T) {
	for _, rows := range [][]string{
		nil,
		{"", "  "},
		{"✻ Welcome to Claude Code (fake 2.1.332) · claude-opus-5-5 · 0b6f0c1e-0000-4000-8000-000000000000", "", "❯\u00a0"},
		{" ▐▛███▛█   Claude Code v2.1.332", "▝▜██████▀  Opus 5.5 · Claude Max", "❯\u00a0", "  ⏵⏵ auto mode on (shift+tab to cycle)"},
		{"› Ask Codex to do anything", "  gpt-5.5 default · ~/project"},
	} {
		for _, h := range []LaunchDiagnoser{Claude{}, Codex{}} {
			if got := h.LaunchHint(rows); got != "" {
				t.Errorf("%T on %q: hint %q", h, rows, got)
			}
		}
	}
}

// A phrase wrapped onto the next row (a narrow terminal) still matches.
func TestLaunchHintWrappedPhrase(t *testing.T) {
	rows := []string{" Choose the text style that looks", " best with your terminal"}
	if got := (Claude{}).LaunchHint(rows); !strings.Contains(got, "first-run setup") {
		t.Fatalf("hint %q", got)
	}
}
