package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
)

// Every list of harnesses the CLI shows or accepts (completion, doctor,
// profiles, skill install, mcp config and install, the MCP tools' texts)
// comes from the harness registry: adding a harness there is all it takes.

// Registry is the harnesses this client knows, in the Registry's order.
func (e *Env) Registry() []harness.Descriptor {
	if e.Harnesses != nil {
		return e.Harnesses
	}
	return harness.All()
}

// HarnessList joins the names of ds for a sentence: "claude or codex".
func HarnessList(ds []harness.Descriptor) string { return client.HarnessList(ds) }

// LoadsSkills reports whether d loads user skills.
func LoadsSkills(d harness.Descriptor) bool { return d.SkillsDir != "" }

// HarnessFlags is a command's --harness NAME and the hidden --NAME
// aliases (deprecated: what commands took before --harness) of the
// harnesses that had one.
type HarnessFlags struct {
	names  []string
	legacy map[string]*bool
}

// AddHarnessFlags adds --harness to cmd: a list (repeatable,
// comma-separated) when many, else a single name.
func (e *Env) AddHarnessFlags(cmd *cobra.Command, many bool, usage string) *HarnessFlags {
	hf := &HarnessFlags{legacy: map[string]*bool{}}
	f := cmd.Flags()
	if many {
		f.StringSliceVar(&hf.names, "harness", nil, usage)
	} else {
		hf.names = make([]string, 1)
		f.StringVar(&hf.names[0], "harness", "", usage)
	}
	for _, d := range e.Registry() {
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

// Selected resolves the flags to descriptors in registry order, each
// once; an unknown name is a usage error naming the known ones.
func (hf *HarnessFlags) Selected(e *Env) ([]harness.Descriptor, error) {
	want := hf.names
	for n, set := range hf.legacy {
		if *set {
			want = append(want, n)
		}
	}
	ds, err := harness.Select(e.Registry(), want)
	if err != nil {
		return nil, Usagef("--harness: %v", err)
	}
	return ds, nil
}
