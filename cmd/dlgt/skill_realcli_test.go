package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/setup"
)

// The pinned real CLIs load the guide from where `dlgt skill install`
// puts it: the first model request of a run lists the dlgt skill with its
// description, and does not without the installed copy. Skipped only when
// a CLI is not installed.

// pinnedCLI returns the pinned binary of a harness (the variable, else
// .cache/harnesses), skipping the test when it is absent.
func pinnedCLI(t *testing.T, override string, rel ...string) string {
	t.Helper()
	p := os.Getenv(override)
	if p == "" {
		p = filepath.Join(append([]string{"..", "..", ".cache", "harnesses", "node_modules"}, rel...)...)
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

// skillDescription is the guide's front-matter description.
func skillDescription(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(string(skillGuide), "\n") {
		if d, ok := strings.CutPrefix(line, "description: "); ok {
			return d
		}
	}
	t.Fatal("the guide has no description")
	return ""
}

// runCLIProbe runs a harness CLI once to completion with env and returns
// the body of the first model request that carried the prompt.
func runCLIProbe(t *testing.T, srv *mockapi.Server, env []string, dir string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(argv[0]), err, out)
	}
	for _, r := range srv.Requests() {
		if r.Kind == mockapi.KindPrompt && strings.Contains(r.Prompt, "SKILL-PROBE") {
			return string(r.Body)
		}
	}
	t.Fatalf("%s sent no request with the prompt\n%s", filepath.Base(argv[0]), out)
	return ""
}

func TestSkillInstalledCopySeenByRealClaude(t *testing.T) {
	bin := pinnedCLI(t, "DLGT_CLAUDE_BIN", "@anthropic-ai", "claude-code-linux-x64", "claude")
	desc := skillDescription(t)
	// Not installed; installed in ~/.claude; and with CLAUDE_CONFIG_DIR
	// set, installed there (Claude then ignores ~/.claude/skills).
	for _, tc := range []struct {
		name                 string
		installed, configDir bool
	}{{"not installed", false, false}, {"HOME", true, false}, {"CLAUDE_CONFIG_DIR", true, true}} {
		srv := mockapi.NewAnthropic(t, nil)
		home := t.TempDir()
		vars := map[string]string{"HOME": home}
		stateDir := home
		if tc.configDir {
			stateDir = t.TempDir()
			vars["CLAUDE_CONFIG_DIR"] = stateDir
		}
		const key = "sk-ant-mock-skill-0123456789abcdef"
		state, _ := json.Marshal(map[string]any{
			"hasCompletedOnboarding": true,
			"customApiKeyResponses":  map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}},
		})
		if err := os.WriteFile(filepath.Join(stateDir, ".claude.json"), state, 0o600); err != nil {
			t.Fatal(err)
		}
		if tc.installed {
			e, out, _ := testEnv(t, vars, "")
			if code := run([]string{"skill", "install", "--claude"}, e); code != cli.ExitOK || !strings.Contains(out.String(), `"status":"written"`) {
				t.Fatalf("%s: install: exit %d %s", tc.name, code, out)
			}
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + srv.URL(),
			"ANTHROPIC_API_KEY=" + key}
		env = append(env, mockapi.ClaudeOfflineEnv()...)
		for k, v := range vars {
			env = append(env, k+"="+v)
		}
		body := runCLIProbe(t, srv, env, t.TempDir(), bin, "-p", "SKILL-PROBE say hi", "--output-format", "json")
		// "The following skills are available for use with the Skill
		// tool: … - dlgt: DESCRIPTION".
		if seen := strings.Contains(body, "- dlgt: "+desc); seen != tc.installed {
			t.Errorf("%s: the dlgt skill listed in Claude's request: %v, want %v", tc.name, seen, tc.installed)
		}
	}
}

func TestSkillInstalledCopySeenByRealCodex(t *testing.T) {
	bin := pinnedCLI(t, "DLGT_CODEX_BIN", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	desc := skillDescription(t)
	for _, installed := range []bool{false, true} {
		srv := mockapi.NewResponses(t, nil)
		home, codexHome := t.TempDir(), t.TempDir()
		config := mockapi.CodexConfig(srv.URL())
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		if installed {
			if code, doc, _ := runSkill(t, home, codexHome, "install", "--codex"); code != cli.ExitOK || statuses(doc)["codex"] != setup.SkillWritten {
				t.Fatalf("install: exit %d %+v", code, doc)
			}
		}
		env := []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=" + os.Getenv("PATH"), "MOCK_API_KEY=mock-key"}
		body := runCLIProbe(t, srv, env, t.TempDir(), bin, "exec", "--skip-git-repo-check", "SKILL-PROBE say hi")
		// Codex lists it as "- dlgt: DESCRIPTION (file: r0/dlgt/SKILL.md)",
		// r0 being an alias of the skills root it names elsewhere.
		if seen := strings.Contains(body, "- dlgt: "+desc+" (file: "); seen != installed {
			t.Errorf("installed %v: the dlgt skill listed in Codex's request: %v", installed, seen)
		}
	}
}

// When the model invokes the installed skill (Claude Code's Skill tool,
// {"skill":"dlgt"}), the next model request carries the guide's body
// exactly as installed, after the front matter.
func TestSkillBodyLoadedByRealClaudeSkillTool(t *testing.T) {
	bin := pinnedCLI(t, "DLGT_CLAUDE_BIN", "@anthropic-ai", "claude-code-linux-x64", "claude")
	agent := func(results []string) (*mockapi.ToolCall, string) {
		if len(results) == 0 {
			return &mockapi.ToolCall{Name: "Skill", Input: map[string]any{"skill": "dlgt"}}, ""
		}
		return nil, "SKILL-READ"
	}
	srv := mockapi.NewAnthropic(t, mockapi.Script{mockapi.Contains("SKILL-PROBE", mockapi.Reply{Agent: agent})})
	home := t.TempDir()
	const key = "sk-ant-mock-skill-0123456789abcdef"
	state, _ := json.Marshal(map[string]any{"hasCompletedOnboarding": true,
		"customApiKeyResponses": map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}}})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), state, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, doc, _ := runSkill(t, home, "", "install", "--claude"); code != cli.ExitOK || statuses(doc)["claude"] != setup.SkillWritten {
		t.Fatalf("install: exit %d %+v", code, doc)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + srv.URL(),
		"ANTHROPIC_API_KEY=" + key}
	env = append(env, mockapi.ClaudeOfflineEnv()...)
	runCLIProbe(t, srv, env, t.TempDir(), bin, "-p", "SKILL-PROBE use the dlgt skill", "--output-format", "json")
	_, body, _ := strings.Cut(string(skillGuide), "\n---\n")
	body = strings.TrimSpace(body)
	prefix := "Base directory for this skill: " + filepath.Join(home, ".claude", "skills", "dlgt")
	var loaded []string
	for _, r := range srv.Requests() {
		if r.Kind != mockapi.KindToolResult {
			continue
		}
		var doc any
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatal(err)
		}
		walkStrings(doc, func(s string) {
			if strings.HasPrefix(s, prefix) {
				loaded = append(loaded, s)
			}
		})
	}
	if len(loaded) != 1 || strings.TrimSpace(strings.TrimPrefix(loaded[0], prefix)) != body {
		t.Fatalf("the request after the Skill call carries %d skill texts; want the guide's body once:\n%q", len(loaded), loaded)
	}
}

// walkStrings calls f with every string in a decoded JSON value.
func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, x := range v {
			walkStrings(x, f)
		}
	case map[string]any:
		for _, x := range v {
			walkStrings(x, f)
		}
	}
}
