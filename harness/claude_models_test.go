package harness

import (
	"slices"
	"testing"
)

// The names Claude Code 2.1.332 accepts for --model without an
// "unrecognized_model" warning: its alias list (ume in the binary),
// "default", and the full ids the aliases resolve to.
var claude2_1_332Models = []string{
	"default", "best", "opusplan",
	"fable", "opus", "sonnet", "haiku",
	"fable[1m]", "opus[1m]", "sonnet[1m]",
	"claude-fable-5-2", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5",
}

func TestClaudeModels(t *testing.T) {
	if ClaudeTestedVersion != "2.1.332" {
		t.Fatalf("the built-in model list was checked against 2.1.332, not %s: recheck it", ClaudeTestedVersion)
	}
	names := func(includeHidden bool) (all []string, hidden, defaults int) {
		res := Claude{}.Models(includeHidden)
		if res.Harness != "claude" || res.Source == "" {
			t.Fatalf("result = %+v", res)
		}
		for _, m := range res.Models {
			all = append(all, m.ID)
			all = append(all, m.Aliases...)
			if m.Hidden {
				hidden++
			}
			if m.Default {
				defaults++
			}
		}
		return all, hidden, defaults
	}
	visible, hidden, defaults := names(false)
	if hidden != 0 || defaults != 1 {
		t.Fatalf("without include_hidden: %d hidden, %d defaults; want 0 and 1", hidden, defaults)
	}
	for _, want := range []string{"default", "opus", "sonnet", "haiku", "fable"} {
		if !slices.Contains(visible, want) {
			t.Errorf("visible list lacks %q: %v", want, visible)
		}
	}
	all, hidden, _ := names(true)
	if hidden == 0 || len(all) <= len(visible) {
		t.Fatalf("include_hidden added nothing: %v", all)
	}
	got := slices.Clone(all)
	slices.Sort(got)
	if n := len(slices.Compact(slices.Clone(got))); n != len(got) {
		t.Fatalf("duplicate names: %v", got)
	}
	want := slices.Clone(claude2_1_332Models)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("names = %v\nwant    %v", got, want)
	}
	// The result is a copy: callers cannot edit the built-in list.
	Claude{}.Models(true).Models[1].Aliases[0] = "edited"
	if claudeModels[1].Aliases[0] == "edited" {
		t.Fatal("Models shares the built-in list")
	}
}
