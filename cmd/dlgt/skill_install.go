package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/internal/setup"
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
	var hf *cli.HarnessFlags
	cmd := &cobra.Command{
		Use:   "install [--harness NAME]... [--check]",
		Short: "Install the guide as a skill for each harness, or check the installed copies",
		Long:  skillInstallLong(e.Registry()),
		Example: `  dlgt skill install
  dlgt skill install --harness codex -o text
  dlgt skill install --check`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := cli.TextOutput(cmd)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			ds, err := hf.Selected(e)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			for _, d := range ds {
				if d.SkillsDir == "" {
					return cli.PrintFailure(cmd, cli.Usagef("--harness %s: %s loads no user skills", d.Name, d.DisplayName))
				}
			}
			if len(ds) == 0 {
				ds = e.Registry()
			}
			// Every path is resolved before anything is written, so a
			// bad environment changes nothing.
			targets, err := setup.SkillTargets(ds, e.Getenv)
			if err != nil {
				return cli.PrintFailure(cmd, err)
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
					return cli.PrintFailure(cmd, setup.InstallSkillError(targets[:i+1], err))
				}
			}
			if !text {
				return cli.PrintDoc(cmd, ok, struct {
					Targets []setup.SkillTarget `json:"targets"`
				}{targets})
			}
			if render.SkillTargets(cmd.OutOrStdout(), targets); !ok {
				return cli.ExitStatus{Code: cli.ExitError}
			}
			return nil
		},
	}
	hf = e.AddHarnessFlags(cmd, true, "install for this harness: "+cli.HarnessList(e.Registry())+" (repeatable or comma-separated; default: every harness)")
	f := cmd.Flags()
	f.BoolVar(&check, "check", false, "write nothing; report whether each installed copy is current, stale or missing (exit 1 unless all are current)")
	cli.AddPretty(cmd)
	cli.AddOutputFlag(cmd)
	return cmd
}
