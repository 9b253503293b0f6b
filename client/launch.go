package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// LaunchEnvironment is the environment a launch from this client sends
// (session.create, session.send with resume, session.restart): on this
// machine, every variable of Options.Environ (KEY=VALUE entries; later
// ones win, entries without '=' are skipped). All of them, not a list:
// the daemon may have been started from another shell, and the harness
// must run as if it had been launched from this one, with its PATH (which
// claude or codex, and the tools they run), HOME and XDG directories
// (their configuration and logins), credentials and endpoints
// (ANTHROPIC_*, OPENAI_*, proxies), locale, and dlgt's own knobs
// (DLGT_CLAUDE_BIN, DLGT_CODEX_BIN). For another machine it is empty: this
// machine's PATH and HOME are wrong there, and the remote proxy supplies
// that side's own environment under whatever the client sends
// (FillLaunch).
func (c *Client) LaunchEnvironment() map[string]string {
	m := map[string]string{}
	if c.Remote() {
		return m
	}
	for _, kv := range c.opts.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		m[k] = v
	}
	return m
}

// LaunchSpec is what a front-end asks for when it launches a Session:
// session.create, or session.send with resume (Resume).
type LaunchSpec struct {
	// Profile names a profile of the profiles file ("" is none).
	Profile string
	// Harness, Model, Effort and HarnessOptions are explicit choices; each
	// one left empty takes the profile's.
	Harness, Model, Effort string
	HarnessOptions         []string
	// Cwd is the Session's working directory. On this machine a relative
	// one is resolved against this process's directory, and "" is this
	// process's directory (for a resume: the Session's own, kept by the
	// daemon). On another machine it must be absolute, or "" for the
	// remote side's own directory.
	Cwd string
	// NoAutoApprove keeps the harness's own permission default.
	NoAutoApprove bool
	// StartupTimeout bounds the harness start (0: the daemon's default).
	StartupTimeout time.Duration
	// Resume resolves for session.send resume:true: no harness is needed
	// and Cwd has no default.
	Resume bool
	// HarnessOptional leaves Params.Harness empty instead of failing when
	// neither Harness nor the profile names one: for a front-end that
	// reports every missing input in one error, and checks it itself.
	HarnessOptional bool
	// Title, Alias, Prompt and RequestID pass through to the parameters.
	Title, Alias, Prompt, RequestID string
	// Worktree runs the Session in a git worktree of its own (nil: as
	// the profile says; NoWorktree overrides a profile's worktree = true).
	Worktree   *rpc.WorktreeOption
	NoWorktree bool
}

// Launch is a resolved launch: where it runs and its parameters.
type Launch struct {
	// Host is the machine the Session runs on ("" is this one): the
	// Client's host, or the profile's host when the Client was given none
	// explicitly (Options.Host).
	Host string
	// Params are the session.create parameters (for a resume, the launch
	// fields of session.send; see ResumeParams).
	Params rpc.SessionCreateParams
	// Warm is the profile's warm spares (Profile.Warm; 0 without one).
	Warm int
}

// ResolveLaunch applies the one launch precedence of every dlgt
// front-end: the client environment (LaunchEnvironment) < the profile <
// the explicit choices of spec. A profile with a host moves the launch to
// that host (unless Options.Host was given): its Environment is then the
// profile's alone, and Cwd follows the remote rules. Bad input is
// INVALID_ARGUMENT naming the field; an unknown profile is NOT_FOUND.
func (c *Client) ResolveLaunch(spec LaunchSpec) (Launch, error) {
	l := Launch{Host: c.host}
	p := rpc.SessionCreateParams{
		Title: spec.Title, Alias: spec.Alias, Harness: spec.Harness, Model: spec.Model, Effort: spec.Effort,
		HarnessOptions: spec.HarnessOptions, Prompt: spec.Prompt, RequestID: spec.RequestID,
		Environment: c.LaunchEnvironment(), Worktree: spec.Worktree,
	}
	if spec.Resume && spec.Worktree != nil {
		return l, rpc.InvalidField("worktree", "applies to a new Session only, not a resume")
	}
	if spec.Profile != "" {
		profiles, err := c.LoadProfiles()
		if err != nil {
			return l, err
		}
		prof, ok := profiles[spec.Profile]
		if !ok {
			path, _ := c.ProfilesPath()
			return l, rpc.Errorf(rpc.CodeNotFound, "profile %q is not defined in %s", spec.Profile, path)
		}
		for k, v := range prof.Environment {
			p.Environment[k] = v
		}
		if c.opts.Host == "" && prof.Host != "" {
			if _, err := parseHost(prof.Host); err != nil {
				return l, err
			}
			l.Host = prof.Host
			if l.Host == "local" {
				l.Host = ""
			}
			p.Environment = map[string]string{}
			for k, v := range prof.Environment {
				p.Environment[k] = v
			}
		}
		if p.Harness == "" {
			p.Harness = prof.Harness
		}
		if p.Model == "" {
			p.Model = prof.Model
		}
		if p.Effort == "" {
			p.Effort = prof.Effort
		}
		if len(p.HarnessOptions) == 0 && len(prof.HarnessOptions) > 0 {
			p.HarnessOptions = prof.HarnessOptions
		}
		if prof.AutoApprove != nil && !*prof.AutoApprove {
			f := false
			p.AutoApprove = &f
		}
		if p.Worktree == nil && prof.Worktree && !spec.Resume && !spec.NoWorktree {
			p.Worktree = &rpc.WorktreeOption{}
		}
		l.Warm = prof.Warm
	}
	if p.Harness == "" && !spec.Resume && !spec.HarnessOptional {
		return l, rpc.InvalidField("harness", "is required (%s) unless the profile sets it", HarnessList(c.opts.Harnesses))
	}
	for _, opt := range p.HarnessOptions {
		if k, _, ok := strings.Cut(opt, "="); !ok || k == "" {
			return l, rpc.InvalidField("harness_options", "%q is not KEY=VALUE", opt)
		}
	}
	if spec.NoAutoApprove {
		f := false
		p.AutoApprove = &f
	}
	if spec.StartupTimeout < 0 {
		return l, rpc.InvalidField("startup_timeout_ms", "must not be negative")
	}
	p.StartupTimeoutMS = spec.StartupTimeout.Milliseconds()
	cwd, err := resolveCwd(spec.Cwd, l.Host != "", spec.Resume)
	if err != nil {
		return l, err
	}
	p.Cwd = cwd
	l.Params = p
	return l, nil
}

// resolveCwd is the Session directory: on another machine an absolute
// path or "" (that side's own); here an absolute path, relative ones
// resolved against this process's directory, "" being that directory
// (for a resume, "" stays: the daemon keeps the Session's own).
func resolveCwd(dir string, remote, resume bool) (string, error) {
	if remote {
		if dir != "" && !filepath.IsAbs(dir) {
			return "", rpc.InvalidField("cwd", "%q must be an absolute path on the remote host", dir)
		}
		return dir, nil
	}
	if dir == "" {
		if resume {
			return "", nil
		}
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", rpc.InvalidField("cwd", "%q: %v", dir, err)
	}
	return abs, nil
}

// ResumeParams are the session.send parameters of a resume of the
// Session ref with l's launch fields.
func (l Launch) ResumeParams(ref string) rpc.SessionSendParams {
	p := l.Params
	return rpc.SessionSendParams{
		Session: ref, Prompt: p.Prompt, RequestID: p.RequestID, Resume: true,
		Title: p.Title, Alias: p.Alias, Cwd: p.Cwd, Model: p.Model, Effort: p.Effort,
		HarnessOptions: p.HarnessOptions, AutoApprove: p.AutoApprove,
		StartupTimeoutMS: p.StartupTimeoutMS, Environment: p.Environment,
	}
}

// at is the Client addressing host ("" is this machine).
func (c *Client) at(host string) (*Client, error) {
	if host == "" {
		host = "local"
	}
	return c.WithHost(host)
}

// Launch creates the Session l describes on l's host.
func (c *Client) Launch(ctx context.Context, l Launch) (rpc.Receipt, error) {
	cc, err := c.at(l.Host)
	if err != nil {
		return rpc.Receipt{}, err
	}
	return cc.SessionCreate(ctx, l.Params)
}

// Resume sends l's prompt to the Session ref with resume:true, on l's
// host: a Session that daemon does not hold is relaunched first.
func (c *Client) Resume(ctx context.Context, l Launch, ref string) (rpc.Receipt, error) {
	cc, err := c.at(l.Host)
	if err != nil {
		return rpc.Receipt{}, err
	}
	return cc.SessionSend(ctx, l.ResumeParams(ref))
}

// MaxWarm bounds a profile's warm spares (the daemon's bound per launch
// shape).
const MaxWarm = 4

// WarmParams are the session.warm parameters that keep spares of l's
// launch shape: a session.create of l (the same Client, so the same
// environment) then claims one. A launch in a worktree has no shape to
// keep warm (its directory is made by the create), and ok is false.
func (l Launch) WarmParams(spares int) (p rpc.SessionWarmParams, ok bool) {
	c := l.Params
	if c.Worktree != nil || c.Harness == "" {
		return p, false
	}
	return rpc.SessionWarmParams{
		Harness: c.Harness, Cwd: c.Cwd, Model: c.Model, Effort: c.Effort,
		HarnessOptions: c.HarnessOptions, AutoApprove: c.AutoApprove, Environment: c.Environment,
		Rows: c.Rows, Cols: c.Cols, Spares: spares,
	}, true
}

// KeepWarm asks the daemon that runs l for l.Warm spares of l's launch
// shape, when the profile asks for any. It is a no-op for a launch
// without them, in a worktree, or on another machine (a remote side
// fills the environment in itself, so its shape is not this one's).
func (c *Client) KeepWarm(ctx context.Context, l Launch) (rpc.SessionWarmResult, bool, error) {
	p, ok := l.WarmParams(l.Warm)
	if !ok || l.Warm == 0 || l.Host != "" {
		return rpc.SessionWarmResult{}, false, nil
	}
	r, err := c.SessionWarm(ctx, p)
	return r, err == nil, err
}
