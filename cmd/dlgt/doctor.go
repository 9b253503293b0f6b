package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/doctor"
	"github.com/dlgt-dev/dlgt/internal/render"
)

// doctorCheck is one line of doctor's report.
type doctorCheck = doctor.Check

const doctorLong = `Check that dlgt can work here and print one JSON document:
{"ok":true|false,"checks":[{"name","ok","detail","fix","warning"}]}.

Checks: each harness binary (its DLGT_<HARNESS>_BIN, else PATH)
and its --version against the version dlgt is tested with; whether this
binary's agent guide is installed for each harness (dlgt skill install: a
stale or missing copy is a warning, "warning":true with a "fix", never a
failure); whether Gemini CLI, when installed, has a sign-in (a warning
when none is found); how Claude Code's hooks would reach a daemon started from here
(DLGT_HOOKS; with http, a warning when Claude's own settings stop http
hooks); whether a daemon answers on this version's socket (or
DLGT_SOCKET) and which version it is; and that the state directory is owned
by you with mode 0700. A failed check carries a "fix" hint. A harness that is simply not
installed is not a failure (it is only needed for --harness NAME); a
version other than the tested one is reported in "detail" but is not a
failure either. With --host, "remote" (ssh reaches a dlgt of this schema)
and the host's own checks follow, each with "host"; the local daemon is
not checked. Exit status 1 when any check failed. -o text prints the
checks as a checklist for people (with --host, each name followed by its
machine: "(this machine)" or "(on HOST)").`

func newDoctorCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check harness binaries, the daemon socket and the state directory",
		Long:  doctorLong,
		Example: `  dlgt doctor --pretty
  dlgt doctor -o text`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := cli.TextOutput(cmd)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			checks := fullEnv{e}.doctor(cmd.Context())
			ok := true
			for _, c := range checks {
				ok = ok && c.OK
			}
			if text {
				render.Doctor(cmd.OutOrStdout(), checks)
				if !ok {
					return cli.ExitStatus{Code: cli.ExitError}
				}
				return nil
			}
			return cli.PrintDoc(cmd, ok, struct {
				Checks []doctorCheck `json:"checks"`
			}{checks})
		},
	}
	cli.AddPretty(cmd)
	cli.AddOutputFlag(cmd)
	return cmd
}

// doctor runs the checks (internal/doctor) with this env's registry,
// agent guides and client.
func (e fullEnv) doctor(ctx context.Context) []doctorCheck {
	c, _ := e.Client() // nil only for a host that does not parse: doctor reports it
	return doctor.Run(ctx, doctor.Options{Getenv: e.Getenv, Harnesses: e.Registry(), Host: e.RemoteHost(),
		Client: c, SkillGuide: skillGuide})
}
