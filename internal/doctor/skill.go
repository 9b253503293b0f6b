package doctor

import (
	"fmt"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/rpc"
)

// skillChecks are the checks of the agent guide installed for each
// harness of ds that loads user skills, against guide: current, or a
// warning (stale, missing) with the command that fixes it. A missing copy
// for a harness that is not installed either is no warning.
func skillChecks(ds []harness.Descriptor, getenv func(string) string, env map[string]string, guide []byte) []Check {
	var checks []Check
	for _, d := range ds {
		if d.SkillsDir == "" {
			continue
		}
		h := d.Name
		_, err := d.Harness.Binary(env)
		installed := err == nil
		c := Check{Name: "skill." + h, OK: true}
		targets, err := setup.SkillTargets([]harness.Descriptor{d}, getenv)
		if err != nil {
			c.Warning = true
			c.Detail = rpc.AsError(err).Message
			c.Fix = "set HOME (or " + d.Config.Env + ") to an absolute path, then run `dlgt skill install --harness " + h + "`"
			checks = append(checks, c)
			continue
		}
		t := targets[0]
		setup.CheckSkill(&t, guide)
		switch {
		case t.Status == setup.SkillCurrent:
			c.Detail = fmt.Sprintf("the dlgt skill at %s matches this binary's guide", t.Path)
		case t.Status == setup.SkillMissing && !installed:
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
