package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/rpc"
)

// skillInstallLong is skill install's help: the registry's harnesses
// and where each loads user skills from.
func skillInstallLong(reg []harness.Descriptor) string {
	var b strings.Builder
	b.WriteString(`Write this binary's guide (what "dlgt skill" prints) to the user skills
directory of each harness named with --harness (repeatable or
comma-separated; without it, every harness):

`)
	for _, d := range reg {
		if d.SkillsDir != "" {
			fmt.Fprintf(&b, "  %-7s %s/%s/%s/%s\n", d.Name, d.Config.Describe(), d.SkillsDir, setup.SkillDirName, setup.SkillFileName)
		}
	}
	b.WriteString(`
HOME and the variables above are read from the environment (each
harness reads its skills from there). Each file is written
atomically (a temporary file in the same directory, renamed over the old
one) with mode 0644; missing directories are created with mode 0755; nothing
else is touched. A copy that already matches is left alone ("unchanged").
Prints {"ok":true,"targets":[{"harness","path","status"}]} with status
"written" or "unchanged"; -o text prints one line per target.

--check writes nothing: it reports per target "current" (matches this
binary's guide), "stale" (differs, e.g. installed by another version) or
"missing", with "ok":false and exit status 1 when any is stale or missing.
"dlgt doctor" reports the same as warnings.`)
	return b.String()
}

func newSkillInstallCommand(e *env) *cobra.Command {
	var check bool
	var hf *harnessFlags
	cmd := &cobra.Command{
		Use:   "install [--harness NAME]... [--check]",
		Short: "Install the guide as a skill for each harness, or check the installed copies",
		Long:  skillInstallLong(e.registry()),
		Example: `  dlgt skill install
  dlgt skill install --harness codex -o text
  dlgt skill install --check`,
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			ds, err := hf.selected(e)
			if err != nil {
				return printFailure(cmd, err)
			}
			for _, d := range ds {
				if d.SkillsDir == "" {
					return printFailure(cmd, usageError("--harness %s: %s loads no user skills", d.Name, d.DisplayName))
				}
			}
			if len(ds) == 0 {
				ds = e.registry()
			}
			// Every path is resolved before anything is written, so a
			// bad environment changes nothing.
			targets, err := setup.SkillTargets(ds, e.getenv)
			if err != nil {
				return printFailure(cmd, err)
			}
			ok := true
			for i := range targets {
				t := &targets[i]
				if check {
					setup.CheckSkill(t, skillGuide)
					ok = ok && t.Status == setup.SkillCurrent
					continue
				}
				if err := setup.InstallSkill(t, skillGuide); err != nil {
					return printFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "installing the %s skill: %v%s",
						t.Harness, err, writtenSoFar(targets[:i])))
				}
			}
			if text {
				writeSkillText(cmd.OutOrStdout(), targets)
			} else {
				body, err := rpc.Marshal(struct {
					OK      bool                `json:"ok"`
					Targets []setup.SkillTarget `json:"targets"`
				}{ok, targets})
				if err != nil {
					return err
				}
				if err := writeJSONLine(cmd, body); err != nil {
					return err
				}
			}
			if !ok {
				return exitStatus{exitError}
			}
			return nil
		},
	}
	hf = e.addHarnessFlags(cmd, true, "install for this harness: "+harnessList(e.registry())+" (repeatable or comma-separated; default: every harness)")
	f := cmd.Flags()
	f.BoolVar(&check, "check", false, "write nothing; report whether each installed copy is current, stale or missing (exit 1 unless all are current)")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}

// writtenSoFar names the targets written before a failure, for its message.
func writtenSoFar(done []setup.SkillTarget) string {
	s := ""
	for _, t := range done {
		if t.Status == setup.SkillWritten {
			s += "; already written: " + t.Path
		}
	}
	return s
}

// writeSkillText prints one line per target for a person, and how to fix
// a copy that is not current.
func writeSkillText(w io.Writer, targets []setup.SkillTarget) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range targets {
		line := fmt.Sprintf("%s\t%s\t%s", t.Harness, t.Status, t.Path)
		if t.Detail != "" {
			line += "\t(" + t.Detail + ")"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, t := range targets {
		if t.Status == setup.SkillStale || t.Status == setup.SkillMissing {
			fmt.Fprintf(w, "fix: dlgt skill install --harness %s\n", t.Harness)
		}
	}
}

// skillDoctorChecks are doctor's warnings about the installed guides: a
// stale or missing copy is reported, never a failure.
func (e *env) skillDoctorChecks() []doctorCheck {
	// A missing copy for a harness that is not installed either is no
	// reason for a warning.
	installed := map[string]bool{}
	env := e.harnessBinEnv()
	var checks []doctorCheck
	for _, d := range e.registry() {
		if d.SkillsDir == "" {
			continue
		}
		h := d.Name
		if _, err := d.Harness.Binary(env); err == nil {
			installed[h] = true
		}
		c := doctorCheck{Name: "skill." + h, OK: true}
		targets, err := setup.SkillTargets([]harness.Descriptor{d}, e.getenv)
		if err != nil {
			c.Warning = true
			c.Detail = rpc.AsError(err).Message
			c.Fix = "set HOME (or " + d.Config.Env + ") to an absolute path, then run `dlgt skill install --harness " + h + "`"
			checks = append(checks, c)
			continue
		}
		t := targets[0]
		setup.CheckSkill(&t, skillGuide)
		switch {
		case t.Status == setup.SkillCurrent:
			c.Detail = fmt.Sprintf("the dlgt skill at %s matches this binary's guide", t.Path)
		case t.Status == setup.SkillMissing && !installed[h]:
			c.Detail = fmt.Sprintf("no dlgt skill at %s (%s is not installed either; after installing it, run `dlgt skill install --harness %s`)", t.Path, h, h)
		case t.Status == setup.SkillMissing:
			c.Warning = true
			c.Detail = fmt.Sprintf("no dlgt skill at %s: agents in %s do not know how to delegate through dlgt", t.Path, h)
			c.Fix = "run `dlgt skill install --harness " + h + "`"
		default:
			c.Warning = true
			c.Detail = fmt.Sprintf("the dlgt skill at %s differs from this binary's guide (another version installed it?)", t.Path)
			if t.Detail != "" {
				c.Detail += ": " + t.Detail
			}
			c.Fix = "run `dlgt skill install --harness " + h + "`"
		}
		checks = append(checks, c)
	}
	return checks
}
