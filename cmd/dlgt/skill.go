package main

import (
	_ "embed"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/cli"
)

// skillGuide is the agent-facing guide: a SKILL.md with the front matter
// (name, description) the harnesses read from their skills directories.
// daemon/skill_guide_test.go runs every command in it.
//
//go:embed skill/SKILL.md
var skillGuide []byte

// skillLong is the skill command's help; %s is the harnesses that load
// skills, from the registry.
const skillLong = `Print the agent-facing guide: a SKILL.md that tells a model when to delegate
through dlgt and exactly how (the MCP tools when present, else the shell
commands; request ids, cursors, the bounded wait loop, what pending, blocked,
SESSION_BUSY and a lost response mean). Its front matter (name, description)
is what %s read from their skills directories.

"dlgt skill install" puts this file where each of them loads it.`

func newSkillCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skill",
		Short: "Print the agent-facing guide (SKILL.md) built into this binary",
		Long:  fmt.Sprintf(skillLong, harness.AndList(harness.DisplayNames(harness.Filter(e.Registry(), cli.LoadsSkills)))),
		Example: `  dlgt skill > SKILL.md
  dlgt skill install`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := cmd.OutOrStdout().Write(skillGuide)
			if err != nil {
				return fmt.Errorf("writing the guide: %w", err)
			}
			return nil
		},
	}
	cmd.AddCommand(newSkillInstallCommand(e))
	return cmd
}
