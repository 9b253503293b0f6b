// Package doctor is the checks of `dlgt doctor`: whether dlgt can work
// here (harness binaries and versions, hooks, the daemon on this
// version's socket, the state directories) or, with a host, whether ssh
// reaches a dlgt of this schema there and what that one's doctor says.
// The front-end prints the checks.
package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Check is one line of `dlgt doctor`'s report.
type Check struct {
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

// HTTPHooks reads DLGT_HOOKS: false for command (the default), true for
// http, an error for anything else. The daemon and doctor both use it.
func HTTPHooks(v string) (bool, error) {
	switch v {
	case "", "command":
		return false, nil
	case "http":
		return true, nil
	}
	return false, rpc.Errorf(rpc.CodeInvalidArgument, "DLGT_HOOKS=%q: want command (the default: every hook runs the forwarder over the hook socket) or http (Claude Code posts its hooks to a port on 127.0.0.1)", v)
}

// Options are what a doctor run reads.
type Options struct {
	// Getenv reads the environment checked (DLGT_HOME, DLGT_SOCKET,
	// DLGT_HOOKS, HOME, CLAUDE_CONFIG_DIR, PATH and the harnesses' binary
	// variables).
	Getenv func(string) string
	// Harnesses are the harnesses checked.
	Harnesses []harness.Descriptor
	// Host is the machine the client addresses ("" is this one): with
	// one, the other end is reported instead of the local daemon.
	Host string
	// Client is that client (nil only when Host does not parse).
	Client *client.Client
	// SkillGuide, when set, is the agent guide whose installed copies are
	// checked for each harness that loads user skills (a stale or missing
	// one is a warning), after the harnesses' checks.
	SkillGuide []byte
	// Extra are the front-end's own checks, reported after those.
	Extra []Check
}

// Run makes every check, in the order of the report.
func Run(ctx context.Context, o Options) []Check {
	var checks []Check
	env := harness.BinEnv(o.Harnesses, o.Getenv)
	env["PATH"] = o.Getenv("PATH")
	wd, _ := os.Getwd()
	for _, d := range o.Harnesses {
		checks = append(checks, checkHarness(ctx, d, env))
		if c, ok := checkSignIn(d, env, o.Getenv, wd); ok {
			checks = append(checks, c)
		}
	}
	if o.SkillGuide != nil {
		checks = append(checks, skillChecks(o.Harnesses, o.Getenv, env, o.SkillGuide)...)
	}
	checks = append(checks, o.Extra...)
	checks = append(checks, hookCheck(o.Getenv))
	p, err := statedir.ResolvePaths(o.Getenv, statedir.Version)
	if err != nil {
		return append(checks, Check{Name: "state_dir", Detail: err.Error(), Fix: "set DLGT_HOME (or HOME) to a directory you own"})
	}
	if o.Host != "" {
		// The local daemon is not the one used: report the other end.
		checks = append(checks, checkStateDir(p)...)
		return append(checks, remoteChecks(ctx, o.Host, o.Client)...)
	}
	dc := checkDaemon(ctx, p, o.Getenv("DLGT_SOCKET") != "", o.Client)
	checks = append(checks, dc)
	checks = append(checks, checkStateDir(p)...)
	// Only a daemon of this version that answered is asked for its
	// Sessions (a call could otherwise start one).
	up := dc.OK && strings.HasPrefix(dc.Detail, "dlgt daemon ")
	if wc, ok := checkWorktrees(ctx, p, o.Client, up); ok {
		checks = append(checks, wc)
	}
	return checks
}

// checkWorktrees lists the worktrees the daemon made (under
// $DLGT_HOME/worktrees) that no Session it holds claims, and the
// Sessions whose worktree directory vanished. A warning, never a
// failure; reported only when there is something to say.
func checkWorktrees(ctx context.Context, p statedir.Paths, cl *client.Client, daemonUp bool) (Check, bool) {
	dirs, _ := filepath.Glob(filepath.Join(p.Home, "worktrees", "*", "*"))
	claimed := map[string]bool{}
	var vanished []string
	if daemonUp && cl != nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		list, err := cl.SessionList(lctx, rpc.SessionListParams{All: true})
		if err != nil {
			return Check{Name: "worktrees", OK: true, Warning: true, Detail: "cannot list the daemon's Sessions: " + clip(err.Error(), 200)}, true
		}
		for _, s := range list.Sessions {
			wt := s.Worktree
			if wt == nil || wt.Removed {
				continue
			}
			claimed[wt.Path] = true
			if _, err := os.Stat(wt.Path); err != nil {
				vanished = append(vanished, fmt.Sprintf("%s (Session %s, branch %s)", wt.Path, s.ID, wt.Branch))
			}
		}
	} else if len(dirs) > 0 {
		return Check{Name: "worktrees", OK: true, Warning: true,
			Detail: fmt.Sprintf("%d %s under %s; start the daemon to tell which belong to no Session", len(dirs), plural(len(dirs), "worktree", "worktrees"), filepath.Join(p.Home, "worktrees"))}, true
	}
	var stale []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || claimed[d] {
			continue
		}
		stale = append(stale, d)
	}
	sort.Strings(stale)
	if len(stale) == 0 && len(vanished) == 0 {
		if len(claimed) == 0 {
			return Check{}, false
		}
		return Check{Name: "worktrees", OK: true, Detail: fmt.Sprintf("%d Session %s, none stale", len(claimed), plural(len(claimed), "worktree", "worktrees"))}, true
	}
	c := Check{Name: "worktrees", OK: true, Warning: true}
	var parts []string
	if len(stale) > 0 {
		parts = append(parts, fmt.Sprintf("%d no Session claims: %s", len(stale), strings.Join(stale, ", ")))
		c.Fix = "review and remove each with `git worktree remove PATH` (add --force to discard its changes) in its repository, then `git branch -D` its branch"
	}
	if len(vanished) > 0 {
		parts = append(parts, fmt.Sprintf("%d Session %s vanished: %s", len(vanished), plural(len(vanished), "worktree", "worktrees"), strings.Join(vanished, ", ")))
		if c.Fix != "" {
			c.Fix += "; "
		}
		c.Fix += "run `git worktree prune` in the repository, and stop those Sessions"
	}
	c.Detail = clip(strings.Join(parts, "; "), 2000)
	return c, true
}

func checkHarness(ctx context.Context, d harness.Descriptor, env map[string]string) Check {
	h, override, installHint := d.Harness, d.BinEnv, d.Install
	info := h.Info()
	c := Check{Name: "harness." + info.Name}
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

// checkSignIn reports, for an installed harness whose sign-in can be
// read from its settings, files and environment (harness.SignInChecker:
// Gemini CLI), whether a Session started from here would stop at its
// sign-in screen. A warning, never a failure: like a harness not
// installed, it matters only for --harness NAME. Not reported for a
// harness that is not installed.
func checkSignIn(d harness.Descriptor, binEnv map[string]string, getenv func(string) string, cwd string) (Check, bool) {
	sc, ok := d.Harness.(harness.SignInChecker)
	if !ok {
		return Check{}, false
	}
	if _, err := d.Harness.Binary(binEnv); err != nil {
		return Check{}, false
	}
	c := Check{Name: "sign_in." + d.Name, OK: true}
	why := sc.SignInProblem(getenv, cwd)
	if why == "" {
		c.Detail = fmt.Sprintf("found nothing in %s's settings, credential files and environment that would stop it at a sign-in screen", d.DisplayName)
		return c, true
	}
	c.Warning = true
	detail, fix, _ := strings.Cut(why, ": ")
	c.Detail = detail + "; Sessions with --harness " + d.Name + " fail at launch until then"
	c.Fix = fix
	return c, true
}

// hookCheck says how Claude Code's hooks reach a daemon started
// from here: through the forwarder and the hook socket, or with
// DLGT_HOOKS=http over HTTP unless Claude's own settings (read from this
// environment and directory) stop http hooks, in which case every hook
// runs the forwarder after all (a warning: it works, slower).
func hookCheck(getenv func(string) string) Check {
	c := Check{Name: "hooks.claude", OK: true}
	switch on, err := HTTPHooks(getenv("DLGT_HOOKS")); {
	case err != nil:
		c.OK = false
		c.Detail = rpc.AsError(err).Message + "; a daemon started from here refuses to start"
		c.Fix = "set DLGT_HOOKS to command or http, or unset it"
		return c
	case !on:
		c.Detail = "every Claude Code hook runs the dlgt hook forwarder over the hook socket (DLGT_HOOKS=http: posted to 127.0.0.1 instead, no process per hook)"
		return c
	}
	env := map[string]string{"HOME": getenv("HOME"), "CLAUDE_CONFIG_DIR": getenv("CLAUDE_CONFIG_DIR")}
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

// checkDaemon reports what answers on p.Socket, as the client's
// ProbeDaemon found it.
func checkDaemon(ctx context.Context, p statedir.Paths, pinned bool, cl *client.Client) Check {
	c := Check{Name: "daemon"}
	others := otherDaemons(p)
	var also string
	if len(others) > 0 {
		also = "; other versions' sockets: " + strings.Join(others, ", ")
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	pr, err := cl.ProbeDaemon(dctx)
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
	if st.Version != statedir.Version {
		c.Detail = fmt.Sprintf("the daemon on %s is version %s but this client is %s%s", p.Socket, st.Version, statedir.Version, also)
		c.Fix = "use the dlgt binary of the daemon's version, or unset DLGT_SOCKET so this version uses its own socket"
		return c
	}
	c.OK = true
	return c
}

// otherDaemons lists other versions' sockets under $DLGT_HOME/run/.
func otherDaemons(p statedir.Paths) []string {
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
func checkStateDir(p statedir.Paths) []Check {
	var checks []Check
	for _, d := range []struct{ name, dir string }{{"state_dir", p.Home}, {"run_dir", p.RunDir}, {"data_dir", p.DataDir}} {
		// The same check (and words) as a client starting the daemon.
		c := Check{Name: d.name}
		state, mode, err := statedir.CheckPrivateDir(d.dir)
		var sde *statedir.StateDirError
		switch {
		case errors.As(err, &sde):
			c.Detail = d.dir + " " + sde.Problem
			c.Fix = sde.Fix
		case err != nil:
			c.Detail = err.Error()
		case state == statedir.DirMissing:
			c.OK = true
			c.Detail = d.dir + " does not exist yet (the daemon creates it with mode 0700)"
		case state == statedir.DirLoose:
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

// remoteChecks are doctor's report of the other end: whether ssh reaches
// a dlgt that speaks this schema, then the remote doctor's own checks,
// each naming the host.
func remoteChecks(ctx context.Context, host string, c *client.Client) []Check {
	conn := Check{Name: "remote", Host: host}
	line, err := client.SSHLine(host)
	if err != nil {
		conn.Detail = rpc.AsError(err).Message
		conn.Fix = "give --host (or DLGT_HOST, or the profile's host) as [user@]host[:port], an IPv6 address with a port as [address]:port"
		return []Check{conn}
	}
	rc, err := c.Dial(ctx, "")
	if err != nil {
		conn.Detail = rpc.AsError(err).Message
		conn.Fix = "check `" + line + " true` works without a prompt (BatchMode), and that the same dlgt version is on the remote PATH or in DLGT_REMOTE_BIN"
		return []Check{conn}
	}
	rc.Close()
	conn.OK, conn.Detail = true, "ssh reaches a dlgt that speaks RPC schema "+strconv.Itoa(rpc.SchemaVersion)
	cmd, err := c.RemoteCommand(ctx, false, "doctor")
	if err != nil {
		return []Check{conn}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	cmd.Run() // doctor exits 1 when a check fails; its JSON says which
	var doc struct {
		Checks []Check `json:"checks"`
	}
	checks := []Check{conn}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &doc); err != nil {
		return append(checks, Check{Name: "remote.doctor", Host: host, Detail: "the remote doctor printed no report: " + clip(out.String(), 200)})
	}
	for _, rc := range doc.Checks {
		rc.Host = host
		checks = append(checks, rc)
	}
	return checks
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
