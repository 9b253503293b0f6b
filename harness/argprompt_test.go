package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A new Session's first prompt rides Claude Code's and Gemini CLI's
// command line up to MaxArgPrompt bytes, as one argv string, byte for
// byte, where no option can take it; a resume never carries it there.
func TestArgPrompt(t *testing.T) {
	prompt := "-starts like a flag\n\ttab \"quoted\" ünïcode\n--\n" + strings.Repeat("x", 100)
	bin := filepath.Join(t.TempDir(), "cli")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	spec := func(env map[string]string) Spec {
		env["HOME"] = t.TempDir()
		// Gemini CLI signed in with an API key.
		os.MkdirAll(filepath.Join(env["HOME"], ".gemini"), 0o700)
		os.WriteFile(filepath.Join(env["HOME"], ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o600)
		return Spec{Cwd: t.TempDir(), StateDir: t.TempDir(), Env: env, Prompt: prompt,
			// A variadic Claude option given by the user: "--" keeps it
			// from taking the prompt.
			Options:  []string{"allowed-tools=Bash"},
			HookArgv: []string{"/usr/bin/dlgt-hook", "--socket", "/s", "--launch", "L1"}}
	}
	for _, c := range []struct {
		h interface {
			Harness
			ArgPrompter
		}
		env  string
		tail []string
	}{
		{Claude{}, "DLGT_CLAUDE_BIN", []string{"--", prompt}},
		{Gemini{}, "DLGT_GEMINI_BIN", []string{"--prompt-interactive=" + prompt}},
	} {
		t.Run(c.h.Name(), func(t *testing.T) {
			if !c.h.ArgPrompt(prompt) || !c.h.ArgPrompt(strings.Repeat("é", MaxArgPrompt/2)) {
				t.Error("a prompt within MaxArgPrompt bytes was refused")
			}
			if c.h.ArgPrompt(strings.Repeat("é", MaxArgPrompt/2) + "x") {
				t.Error("a prompt over MaxArgPrompt bytes was accepted")
			}
			s := spec(map[string]string{c.env: bin, "GEMINI_API_KEY": "k"})
			l, err := c.h.Prepare(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Argv[len(l.Argv)-len(c.tail):]; !slices.Equal(got, c.tail) {
				t.Errorf("argv ends %q, want %q", got, c.tail)
			}
			if n := len(slices.DeleteFunc(slices.Clone(l.Argv), func(a string) bool { return !strings.Contains(a, "tab \"quoted\"") })); n != 1 {
				t.Errorf("the prompt is in %d argv strings, want 1", n)
			}
			s.Prompt = ""
			if l, err = c.h.Prepare(s); err != nil || slices.ContainsFunc(l.Argv, func(a string) bool {
				return strings.Contains(a, "quoted") || strings.HasPrefix(a, "--prompt-interactive") || a == "--"
			}) {
				t.Errorf("a launch without a prompt: %q, %v", l.Argv, err)
			}
			s.Prompt, s.Resume, s.ProviderID = prompt, true, "0b4f6c2e-6a43-4d1e-9c1f-1f2e3d4c5b6a"
			if l, err = c.h.Prepare(s); err != nil || slices.ContainsFunc(l.Argv, func(a string) bool { return strings.Contains(a, "quoted") }) {
				t.Errorf("a resume carries the prompt: %q, %v", l.Argv, err)
			}
		})
	}
}
