package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/mcp"
	"github.com/dlgt-dev/dlgt/rpc"
)

// fakeHarness is a third harness that exists only in these tests: an
// adapter (Claude's behaviour under another name) and its descriptor.
type fakeHarness struct{ harness.Claude }

func (fakeHarness) Name() string { return "fake" }
func (fakeHarness) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{Name: "fake", TestedVersion: "9.9.9"}
}
func (fakeHarness) Binary(env map[string]string) (string, error) {
	if p := env["DLGT_FAKE_BIN"]; p != "" {
		return p, nil
	}
	return "", os.ErrNotExist
}
func (fakeHarness) Models(bool) rpc.ModelListResult {
	return rpc.ModelListResult{Harness: "fake", Models: []rpc.Model{{ID: "fake-model-1"}}}
}

// withFakeHarness is the registry plus one more entry: what adding a
// harness to harness.All amounts to for the CLI.
func withFakeHarness(e *env) {
	e.Harnesses = append(harness.All(), harness.Descriptor{
		Name: "fake", DisplayName: "Fake Agent", Harness: fakeHarness{},
		BinEnv: "DLGT_FAKE_BIN", BinName: "fake-agent", Install: "install fake-agent@9.9.9",
		Config: harness.ConfigDir{Env: "FAKE_HOME", Home: ".fake"}, SkillsDir: "skills",
		ProviderEnv: []string{"FAKE_API_KEY"},
	})
}

// Completion, doctor, profiles, skill install, the MCP texts and the
// forwarded variables list exactly the registry's harnesses: a third
// entry appears in each with nothing else changed.
func TestCLIListsTheRegistry(t *testing.T) {
	for _, extra := range []bool{false, true} {
		want := []string{"claude", "codex", "gemini", "copilot"}
		if extra {
			want = append(want, "fake")
		}
		dir := shortDir(t)
		home := filepath.Join(dir, "user")
		os.MkdirAll(home, 0o700)
		profiles := filepath.Join(dir, "profiles.toml")
		os.WriteFile(profiles, []byte("[profiles.f]\nharness = \"fake\"\n"), 0o600)
		vars := map[string]string{"HOME": home, "PATH": filepath.Join(dir, "empty"), "DLGT_PROFILES": profiles,
			"DLGT_FAKE_BIN": fakeBinary(t, dir, "fake-agent", "echo 'fake 9.9.9'")}
		d := testkit.NewFakeDaemon(t)
		e, _, _ := cliEnv(t, d, vars, nil, "")
		if extra {
			withFakeHarness(e)
		}

		// completion of --harness, with display names
		var out strings.Builder
		e.Stdout = &out
		if code := run([]string{"__complete", "session", "create", "--harness", ""}, e); code != cli.ExitOK {
			t.Fatalf("__complete: exit %d", code)
		}
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if got := lines[:len(lines)-1]; len(got) != len(want) || (extra && got[4] != "fake\tFake Agent") || got[0] != "claude\tClaude Code" {
			t.Errorf("extra=%v: --harness completes %q, want %v", extra, got, want)
		}
		models, _ := complete(t, e, "session", "create", "--model", "fake-")
		if got := slices.Contains(models, "fake-model-1"); got != extra {
			t.Errorf("extra=%v: --model completion offers the fake model: %v", extra, got)
		}

		// doctor: one harness check and one skill check per entry
		e, dout, _ := cliEnv(t, d, vars, nil, "")
		if extra {
			withFakeHarness(e)
		}
		run([]string{"doctor"}, e)
		var doc doctorDoc
		if err := json.Unmarshal(dout.Bytes(), &doc); err != nil {
			t.Fatalf("doctor: %v: %q", err, dout)
		}
		var hs, ss []string
		for _, c := range doc.Checks {
			if n, ok := strings.CutPrefix(c.Name, "harness."); ok {
				hs = append(hs, n)
			}
			if n, ok := strings.CutPrefix(c.Name, "skill."); ok {
				ss = append(ss, n)
			}
		}
		if !slices.Equal(hs, want) || !slices.Equal(ss, want) {
			t.Errorf("extra=%v: doctor checks harnesses %v and skills %v, want %v", extra, hs, ss, want)
		}

		// profiles: a profile naming the third harness loads only with it
		_, err := e.LoadProfiles()
		if extra && err != nil {
			t.Errorf("profile with harness fake refused with it registered: %v", err)
		}
		if !extra && (err == nil || !strings.Contains(err.Error(), "harness must be claude, codex, gemini or copilot")) {
			t.Errorf("profile with harness fake: %v", err)
		}
		if extra {
			os.WriteFile(profiles, []byte("[profiles.f]\nharness = \"nosuch\"\n"), 0o600)
			if _, err := e.LoadProfiles(); err == nil || !strings.Contains(err.Error(), "harness must be claude, codex, gemini, copilot or fake") {
				t.Errorf("unknown profile harness with three registered: %v", err)
			}
		}

		// skill install without --harness: every entry, in order
		e, sout, _ := cliEnv(t, d, vars, nil, "")
		if extra {
			withFakeHarness(e)
		}
		vars["FAKE_HOME"] = filepath.Join(dir, "fakehome")
		if code := run([]string{"skill", "install"}, e); code != cli.ExitOK {
			t.Fatalf("skill install: exit %d %s", code, sout)
		}
		var res struct{ Targets []setup.SkillTarget }
		json.Unmarshal(sout.Bytes(), &res)
		var got []string
		for _, tg := range res.Targets {
			got = append(got, tg.Harness)
		}
		if !slices.Equal(got, want) {
			t.Errorf("extra=%v: skill install wrote %v, want %v", extra, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "fakehome", "skills", "dlgt", "SKILL.md")); (err == nil) != extra {
			t.Errorf("extra=%v: fake skill file: %v", extra, err)
		}

		// the MCP server's texts and the variables a Codex leader forwards
		if extra {
			if s := mcp.Instructions(e.Registry()); !strings.Contains(s, "(Claude Code, Codex, Gemini CLI, GitHub Copilot CLI or Fake Agent)") {
				t.Errorf("instructions: %q", s)
			}
			if fw := setup.ForwardEnv(e.Registry()); !slices.Contains(fw, "DLGT_FAKE_BIN") || !slices.Contains(fw, "FAKE_HOME") || !slices.Contains(fw, "FAKE_API_KEY") {
				t.Errorf("forwarded variables miss the fake harness's: %v", fw)
			}
		}
	}
}

// The forwarded variables are the ones the snippet always carried, in
// the same order (derived from the registry now).
func TestMCPForwardEnvUnchanged(t *testing.T) {
	e, _, _ := testEnv(t, nil, "")
	want := []string{"DLGT_HOME", "DLGT_SOCKET", "DLGT_PROFILES", "DLGT_CLAUDE_BIN", "DLGT_CODEX_BIN", "DLGT_GEMINI_BIN", "DLGT_COPILOT_BIN",
		"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
		"COPILOT_GITHUB_TOKEN", "COPILOT_HOME", "COPILOT_MODEL", "COPILOT_OFFLINE", "COPILOT_PROVIDER_API_KEY",
		"COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE",
		"GEMINI_API_KEY", "GEMINI_CLI_HOME", "GH_TOKEN", "GITHUB_TOKEN", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_LOCATION",
		"GOOGLE_CLOUD_PROJECT", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "OPENAI_API_KEY",
		"DLGT_HOST", "DLGT_SSH_COMMAND", "DLGT_REMOTE_BIN", "SSH_AUTH_SOCK"}
	if got := setup.ForwardEnv(e.Registry()); !slices.Equal(got, want) {
		t.Fatalf("ForwardEnv = %v, want %v", got, want)
	}
}

// --harness: repeatable and comma-separated for skill install, one name
// for mcp config; the old --claude/--codex still work (hidden) and give
// the same output; unknown names and harnesses without the feature are
// usage errors naming the known ones.
func TestHarnessFlags(t *testing.T) {
	dir := shortDir(t)
	home := filepath.Join(dir, "user")
	os.MkdirAll(home, 0o700)
	vars := map[string]string{"HOME": home}
	runOut := func(extra bool, args ...string) (int, string) {
		e, out, _ := testEnv(t, vars, "")
		if extra {
			withFakeHarness(e)
		}
		code := run(args, e)
		return code, out.String()
	}
	harnessesOf := func(out string) []string {
		var res struct{ Targets []setup.SkillTarget }
		json.Unmarshal([]byte(out), &res)
		var got []string
		for _, tg := range res.Targets {
			got = append(got, tg.Harness)
		}
		return got
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--harness", "codex"}, []string{"codex"}},
		{[]string{"--harness", "codex,claude"}, []string{"claude", "codex"}},
		{[]string{"--harness", "codex", "--harness", "claude", "--harness", "codex"}, []string{"claude", "codex"}},
		{[]string{"--codex"}, []string{"codex"}},
		{[]string{"--claude", "--harness", "codex"}, []string{"claude", "codex"}},
		{nil, []string{"claude", "codex", "gemini", "copilot"}},
	} {
		code, out := runOut(false, append([]string{"skill", "install", "--check"}, tc.args...)...)
		if got := harnessesOf(out); code != cli.ExitError || !slices.Equal(got, tc.want) {
			t.Errorf("skill install --check %v: exit %d, targets %v, want %v", tc.args, code, got, tc.want)
		}
	}
	code, out := runOut(false, "skill", "install", "--harness", "nosuch")
	if code != cli.ExitError || !strings.Contains(out, `unknown harness \"nosuch\" (known: claude, codex, gemini, copilot)`) || !strings.Contains(out, "INVALID_ARGUMENT") {
		t.Errorf("--harness nosuch: exit %d %s", code, out)
	}

	// mcp config: --harness NAME is what --NAME was.
	for _, h := range []string{"claude", "codex"} {
		c1, o1 := runOut(false, "mcp", "config", "--harness", h, "--approve")
		c2, o2 := runOut(false, "mcp", "config", "--"+h, "--approve")
		if c1 != cli.ExitOK || c2 != cli.ExitOK || o1 != o2 || o1 == "" {
			t.Errorf("mcp config --harness %s (exit %d) and --%s (exit %d) differ:\n%s\n%s", h, c1, h, c2, o1, o2)
		}
	}
	for _, args := range [][]string{
		{"mcp", "config"},
		{"mcp", "config", "--harness", "claude", "--codex"},
		{"mcp", "install", "--claude", "--codex"},
	} {
		if code, out := runOut(false, args...); code != cli.ExitError || !strings.Contains(out, "give exactly one harness: --harness claude, codex, gemini or copilot") {
			t.Errorf("%v: exit %d %s", args, code, out)
		}
	}
	// A registered harness without an MCP format is refused clearly.
	if code, out := runOut(true, "mcp", "config", "--harness", "fake"); code != cli.ExitError || !strings.Contains(out, "cannot add its MCP server to Fake Agent") {
		t.Errorf("mcp config --harness fake: exit %d %s", code, out)
	}

	// The aliases are hidden; --harness is documented with the registry's names.
	for _, args := range [][]string{{"skill", "install", "--help"}, {"mcp", "config", "--help"}, {"mcp", "install", "--help"}} {
		_, help := runOut(false, args...)
		names := "claude, codex, gemini or copilot"
		if strings.Contains(help, "--claude") || strings.Contains(help, "--codex") || !strings.Contains(help, "--harness") || !strings.Contains(help, names) {
			t.Errorf("%v help:\n%s", args, help)
		}
	}
}
