package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
)

// Every list of harnesses the CLI shows or accepts (completion, doctor,
// profiles, skill install, mcp config and install, the MCP tools' texts)
// comes from the harness registry: adding a harness there is all it takes.

// registry is the harnesses this client knows, in the registry's order.
func (e *env) registry() []harness.Descriptor {
	if e.harnesses != nil {
		return e.harnesses
	}
	return harness.All()
}

// harnessList joins the names of ds for a sentence: "claude or codex".
func harnessList(ds []harness.Descriptor) string { return orList(harness.Names(ds)) }

// orList joins words for a sentence: "a", "a or b", "a, b or c".
func orList(words []string) string { return joinList(words, " or ") }

// andList joins words for a sentence: "a", "a and b", "a, b and c".
func andList(words []string) string { return joinList(words, " and ") }

func joinList(words []string, last string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + last + words[len(words)-1]
}

// displayNames are the products' names of ds, for people: "Claude Code".
func displayNames(ds []harness.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.DisplayName
	}
	return out
}

// skillHarnesses are the harnesses of ds that load user skills.
func skillHarnesses(ds []harness.Descriptor) []harness.Descriptor {
	var out []harness.Descriptor
	for _, d := range ds {
		if d.SkillsDir != "" {
			out = append(out, d)
		}
	}
	return out
}

// harnessFlags is a command's --harness NAME and the hidden --NAME
// aliases (deprecated: what commands took before --harness) of the
// harnesses that had one.
type harnessFlags struct {
	names  []string
	legacy map[string]*bool
}

// addHarnessFlags adds --harness to cmd: a list (repeatable,
// comma-separated) when many, else a single name.
func (e *env) addHarnessFlags(cmd *cobra.Command, many bool, usage string) *harnessFlags {
	hf := &harnessFlags{legacy: map[string]*bool{}}
	f := cmd.Flags()
	if many {
		f.StringSliceVar(&hf.names, "harness", nil, usage)
	} else {
		hf.names = make([]string, 1)
		f.StringVar(&hf.names[0], "harness", "", usage)
	}
	for _, d := range e.registry() {
		if !d.LegacyFlag {
			continue
		}
		b := new(bool)
		f.BoolVar(b, d.Name, false, "deprecated: --harness "+d.Name)
		f.MarkHidden(d.Name)
		hf.legacy[d.Name] = b
	}
	return hf
}

// selected resolves the flags to descriptors in registry order, each
// once; an unknown name is a usage error naming the known ones.
func (hf *harnessFlags) selected(e *env) ([]harness.Descriptor, error) {
	reg := e.registry()
	var want []string
	for _, n := range hf.names {
		if n = strings.TrimSpace(n); n != "" {
			want = append(want, n)
		}
	}
	for n, set := range hf.legacy {
		if *set {
			want = append(want, n)
		}
	}
	for _, n := range want {
		if _, err := harness.Find(reg, n); err != nil {
			return nil, usageError("--harness: %v", err)
		}
	}
	var out []harness.Descriptor
	for _, d := range reg {
		if slices.Contains(want, d.Name) {
			out = append(out, d)
		}
	}
	return out, nil
}

// harnessBinEnv is PATH and the harnesses' binary variables from this
// environment: where each harness's Binary looks.
func (e *env) harnessBinEnv() map[string]string {
	env := harness.BinEnv(e.registry(), e.getenv)
	env["PATH"] = e.getenv("PATH")
	return env
}
