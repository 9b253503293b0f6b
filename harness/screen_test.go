package harness

import (
	"slices"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Both adapters launch their TUI inline (on the main screen) unless the
// user chose otherwise, and say so in harness.list.
func TestScreenModeInlineByDefault(t *testing.T) {
	for _, h := range []Harness{Claude{}, Codex{}} {
		if got := h.Info().ScreenMode; got != rpc.ScreenInline {
			t.Errorf("%s: screen_mode = %q, want %q", h.Name(), got, rpc.ScreenInline)
		}
	}

	home := t.TempDir()
	spec := Spec{Cwd: t.TempDir(), Env: map[string]string{"DLGT_CLAUDE_BIN": "/bin/claude", "HOME": home}}
	l, err := Claude{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.Env, claudeInlineEnv+"=1") {
		t.Fatalf("claude env lacks %s=1: %q", claudeInlineEnv, l.Env)
	}
	// An explicit value in the client's environment is the user's choice.
	for _, v := range []string{"0", ""} {
		spec.Env[claudeInlineEnv] = v
		if l, err = (Claude{}).Prepare(spec); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range l.Env {
			if len(e) > len(claudeInlineEnv) && e[:len(claudeInlineEnv)+1] == claudeInlineEnv+"=" {
				n++
				if e != claudeInlineEnv+"="+v {
					t.Errorf("user's %s=%q became %q", claudeInlineEnv, v, e)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d %s entries in %q", n, claudeInlineEnv, l.Env)
		}
	}

	cspec := Spec{Cwd: "/w", Env: map[string]string{"DLGT_CODEX_BIN": "/bin/codex"}}
	for _, resume := range []bool{false, true} {
		cspec.Resume, cspec.ProviderID = resume, ""
		if resume {
			cspec.ProviderID = "01a2383d-01dc-7012-9a17-76961f00d070"
		}
		l, err := Codex{}.Prepare(cspec)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(l.Argv, "--no-alt-screen") {
			t.Errorf("codex argv (resume %v) lacks --no-alt-screen: %q", resume, l.Argv)
		}
	}
	// tui.alternate_screen in the options replaces dlgt's flag.
	cspec.Resume, cspec.ProviderID = false, ""
	cspec.Options = []string{`tui.alternate_screen="always"`}
	if err := (Codex{}).ValidateOptions(cspec.Options); err != nil {
		t.Fatal(err)
	}
	if l, err = (Codex{}).Prepare(cspec); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(l.Argv, "--no-alt-screen") || !slices.Contains(l.Argv, `tui.alternate_screen="always"`) {
		t.Fatalf("codex argv with the user's choice: %q", l.Argv)
	}
}
