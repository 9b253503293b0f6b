package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
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
func harnessList(ds []harness.Descriptor) string { return client.HarnessList(ds) }

// loadsSkills reports whether d loads user skills.
func loadsSkills(d harness.Descriptor) bool { return d.SkillsDir != "" }

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
	want := hf.names
	for n, set := range hf.legacy {
		if *set {
			want = append(want, n)
		}
	}
	ds, err := harness.Select(e.registry(), want)
	if err != nil {
		return nil, usageError("--harness: %v", err)
	}
	return ds, nil
}
