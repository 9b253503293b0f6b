package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// doctorCheck is one line of `dlgt doctor`'s report.
type doctorCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	// Warning marks a passed check that still deserves attention (a
	// stale or missing skill): it never fails doctor.
	Warning bool `json:"warning,omitempty"`
	// Host names the machine of a check made on another one (--host).
	Host string `json:"host,omitempty"`
}

// versionTimeout bounds one `--version` run.
var versionTimeout = 15 * time.Second

const doctorLong = `Check that dlgt can work here and print one JSON document:
{"ok":true|false,"checks":[{"name","ok","detail","fix","warning"}]}.

Checks: each harness binary (its DLGT_<HARNESS>_BIN, else PATH)
and its --version against the version dlgt is tested with; whether this
binary's agent guide is installed for each harness (dlgt skill install: a
stale or missing copy is a warning, "warning":true with a "fix", never a
failure); how Claude Code's hooks would reach a daemon started from here
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
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			checks := e.doctor(cmd.Context())
			ok := true
			for _, c := range checks {
				ok = ok && c.OK
			}
			if text {
				writeDoctorText(cmd.OutOrStdout(), checks)
				if !ok {
					return exitStatus{exitError}
				}
				return nil
			}
			body, err := rpc.Marshal(struct {
				OK     bool          `json:"ok"`
				Checks []doctorCheck `json:"checks"`
			}{ok, checks})
			if err != nil {
				return err
			}
			if err := writeJSONLine(cmd, body); err != nil {
				return err
			}
			if !ok {
				return exitStatus{exitError}
			}
			return nil
		},
	}
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}

func (e *env) doctor(ctx context.Context) []doctorCheck {
	var checks []doctorCheck
	env := e.harnessBinEnv()
	for _, d := range e.registry() {
		checks = append(checks, checkHarness(ctx, d, env))
	}
	checks = append(checks, e.skillDoctorChecks()...)
	checks = append(checks, e.hookDoctorCheck())
	p, err := e.paths()
	if err != nil {
		return append(checks, doctorCheck{Name: "state_dir", Detail: err.Error(), Fix: "set DLGT_HOME (or HOME) to a directory you own"})
	}
	if e.remote() {
		// The local daemon is not the one used: report the other end.
		checks = append(checks, checkStateDir(p)...)
		return append(checks, e.remoteDoctor(ctx)...)
	}
	probe := func(ctx context.Context) (client.Probe, error) {
		c, err := e.client()
		if err != nil {
			return client.Probe{}, err
		}
		return c.ProbeDaemon(ctx)
	}
	checks = append(checks, checkDaemon(ctx, p, e.getenv("DLGT_SOCKET") != "", probe))
	checks = append(checks, checkStateDir(p)...)
	return checks
}

func checkHarness(ctx context.Context, d harness.Descriptor, env map[string]string) doctorCheck {
	h, override, installHint := d.Harness, d.BinEnv, d.Install
	info := h.Info()
	c := doctorCheck{Name: "harness." + info.Name}
	bin, err := h.Binary(env)
	if err != nil {
		c.OK = true
		c.Detail = fmt.Sprintf("%s is not installed (needed only for --harness %s)", info.Name, info.Name)
		c.Fix = fmt.Sprintf("to use it: %s, or set %s to its path", installHint, override)
		return c
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		c.Detail = fmt.Sprintf("%s=%s is not an executable file", override, bin)
		c.Fix = fmt.Sprintf("point %s at the %s executable, or unset it to use PATH", override, info.Name)
		return c
	}
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	venv := os.Environ()
	if v := env[override]; v != "" {
		venv = append(venv, override+"="+v)
	}
	venv = append(venv, "PATH="+env["PATH"])
	version, err := harness.ProbeVersion(vctx, bin, venv)
	if err != nil {
		c.Detail = err.Error()
		c.Fix = fmt.Sprintf("run %s --version yourself to see what is wrong, and check that it is %s; reinstall with: %s", bin, info.Name, installHint)
		return c
	}
	c.OK = true
	if version == info.TestedVersion {
		c.Detail = fmt.Sprintf("%s %s at %s (the tested version)", info.Name, version, bin)
	} else {
		c.Detail = fmt.Sprintf("%s %s at %s; dlgt is tested with %s, so screen parsing may differ", info.Name, version, bin, info.TestedVersion)
		c.Fix = "if Sessions misbehave, install the tested version: " + installHint
	}
	return c
}

// hookDoctorCheck says how Claude Code's hooks reach a daemon started
// from here: through the forwarder and the hook socket, or with
// DLGT_HOOKS=http over HTTP unless Claude's own settings (read from this
// environment and directory) stop http hooks, in which case every hook
// runs the forwarder after all (a warning: it works, slower).
func (e *env) hookDoctorCheck() doctorCheck {
	c := doctorCheck{Name: "hooks.claude", OK: true}
	switch on, err := httpHooks(e.getenv("DLGT_HOOKS")); {
	case err != nil:
		c.OK = false
		c.Detail = rpc.AsError(err).Message + "; a daemon started from here refuses to start"
		c.Fix = "set DLGT_HOOKS to command or http, or unset it"
		return c
	case !on:
		c.Detail = "every Claude Code hook runs the dlgt hook forwarder over the hook socket (DLGT_HOOKS=http: posted to 127.0.0.1 instead, no process per hook)"
		return c
	}
	env := map[string]string{"HOME": e.getenv("HOME"), "CLAUDE_CONFIG_DIR": e.getenv("CLAUDE_CONFIG_DIR")}
	wd, _ := os.Getwd()
	if why := harness.ClaudeHTTPHooksBlocked(env, wd); why != "" {
		c.Warning = true
		c.Detail = why + ": Claude Sessions started here run the dlgt hook forwarder for every hook, one process start per hook"
		c.Fix = "where those settings are set, add http://127.0.0.1:* to allowedHttpHookUrls and " + harness.HookTokenEnv + " to httpHookAllowedEnvVars"
		return c
	}
	c.Detail = "Claude Code posts its hooks (all but SessionStart) to the daemon on 127.0.0.1; its settings here allow that"
	return c
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkDaemon reports what answers on p.Socket, as probe (the client's
// ProbeDaemon) found it.
func checkDaemon(ctx context.Context, p daemon.Paths, pinned bool, probe func(context.Context) (client.Probe, error)) doctorCheck {
	c := doctorCheck{Name: "daemon"}
	others := otherDaemons(p)
	var also string
	if len(others) > 0 {
		also = "; other versions' sockets: " + strings.Join(others, ", ")
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	pr, err := probe(dctx)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	if err := pr.DialErr; err != nil {
		if _, serr := os.Lstat(p.Socket); serr == nil && !errors.Is(err, syscall.ENOENT) {
			c.Detail = fmt.Sprintf("nothing answers on %s (a stale socket?): %v%s", p.Socket, err, also)
			c.Fix = fmt.Sprintf("run `dlgt daemon status`; if no daemon is running, remove %s", p.Socket)
			return c
		}
		c.OK = true
		c.Detail = fmt.Sprintf("no daemon is running on %s (client commands start one)%s", p.Socket, also)
		if pinned {
			c.OK = false
			c.Detail = fmt.Sprintf("no daemon answers on DLGT_SOCKET=%s (never auto-started)%s", p.Socket, also)
			c.Fix = "start one with `DLGT_SOCKET=" + p.Socket + " dlgt daemon`, or unset DLGT_SOCKET"
		}
		return c
	}
	if err := pr.StatusErr; err != nil {
		c.Detail = fmt.Sprintf("%s answered but not as a dlgt daemon: %v%s", p.Socket, err, also)
		c.Fix = "stop whatever listens there (`dlgt daemon stop`), or point DLGT_SOCKET elsewhere"
		return c
	}
	st := pr.Status
	c.Detail = fmt.Sprintf("dlgt daemon %s (commit %s, pid %d) answers on %s with %d %s%s", st.Version, st.Commit, st.PID, p.Socket, st.Sessions, plural(st.Sessions, "Session", "Sessions"), also)
	if st.Version != daemon.Version {
		c.Detail = fmt.Sprintf("the daemon on %s is version %s but this client is %s%s", p.Socket, st.Version, daemon.Version, also)
		c.Fix = "use the dlgt binary of the daemon's version, or unset DLGT_SOCKET so this version uses its own socket"
		return c
	}
	c.OK = true
	return c
}

// otherDaemons lists other versions' sockets under $DLGT_HOME/run/.
func otherDaemons(p daemon.Paths) []string {
	socks, _ := filepath.Glob(filepath.Join(p.Home, "run", "*", "dlgt.sock"))
	sort.Strings(socks)
	var out []string
	for _, s := range socks {
		if s != p.Socket {
			out = append(out, s)
		}
	}
	return out
}

// checkStateDir checks $DLGT_HOME and this version's directories: each
// that exists must be a directory owned by this user with mode 0700.
func checkStateDir(p daemon.Paths) []doctorCheck {
	var checks []doctorCheck
	for _, d := range []struct{ name, dir string }{{"state_dir", p.Home}, {"run_dir", p.RunDir}, {"data_dir", p.DataDir}} {
		// The same check (and words) as a client starting the daemon.
		c := doctorCheck{Name: d.name}
		state, mode, err := daemon.CheckPrivateDir(d.dir)
		var sde *daemon.StateDirError
		switch {
		case errors.As(err, &sde):
			c.Detail = d.dir + " " + sde.Problem
			c.Fix = sde.Fix
		case err != nil:
			c.Detail = err.Error()
		case state == daemon.DirMissing:
			c.OK = true
			c.Detail = d.dir + " does not exist yet (the daemon creates it with mode 0700)"
		case state == daemon.DirLoose:
			c.Detail = fmt.Sprintf("%s has mode %04o, want 0700 (it holds the socket, transcripts and session data); a client that starts the daemon tightens it and says so on stderr", d.dir, mode)
			c.Fix = "chmod 700 " + d.dir
		default:
			c.OK = true
			c.Detail = fmt.Sprintf("%s is yours, mode 0700", d.dir)
		}
		checks = append(checks, c)
		if d.name == "state_dir" && !c.OK {
			break
		}
	}
	return checks
}
