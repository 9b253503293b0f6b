package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Options are a Client's dial policy. The zero value is this machine's
// daemon of this version, found as every dlgt command finds it, with
// autostart unavailable (no DaemonExe).
type Options struct {
	// Getenv reads the variables the policy honours: DLGT_HOME,
	// XDG_STATE_HOME and HOME (the state directory, as statedir.ResolvePaths
	// reads them), DLGT_SOCKET, DLGT_NO_AUTOSTART, DLGT_HOST,
	// DLGT_SSH_COMMAND, DLGT_REMOTE_BIN and DLGT_PROFILES. nil is
	// os.Getenv.
	Getenv func(string) string
	// Environ is the client environment (KEY=VALUE entries): the launch
	// environment of the Sessions it creates (ResolveLaunch), and the
	// environment of ssh and of an autostarted daemon. nil is os.Environ.
	Environ func() []string
	// Home, when set, replaces DLGT_HOME.
	Home string
	// Socket, when set, pins the daemon socket as DLGT_SOCKET does: a
	// pinned socket is never autostarted and never routed.
	Socket string
	// Version names the daemon version whose socket
	// ($DLGT_HOME/run/<Version>/dlgt.sock) is this client's; "" is
	// statedir.Version.
	Version string
	// DaemonExe is the dlgt executable an autostart runs (`DaemonExe
	// daemon`, detached, its output appended to the run directory's
	// daemon.log). "" makes an autostart fail with RPC_UNAVAILABLE saying
	// so.
	DaemonExe string
	// NoAutostart never starts a daemon, as DLGT_NO_AUTOSTART=1 does.
	NoAutostart bool
	// Host addresses the daemon of another machine through OpenSSH:
	// [user@]host[:port]. "" is DLGT_HOST (unset: this machine); "local"
	// is this machine whatever DLGT_HOST says.
	Host string
	// Stderr receives notices (a state directory whose mode was
	// tightened). nil discards them.
	Stderr io.Writer
	// Harnesses are the harnesses a profile may name and a launch may
	// use; nil is the registry (harness.All).
	Harnesses []harness.Descriptor
}

// Client is the one client of the dlgt daemon: a typed method per RPC
// method, over one dial policy. Each call dials its own connection, so
// calls may run concurrently and a long poll never blocks another call.
// Close it when done (it removes the private directory of ssh's shared
// connection).
type Client struct {
	opts Options
	// host is the resolved destination: "" this machine.
	host string
	sh   *shared
	// raw, when set (KeepRaw), receives each typed call's result as the
	// daemon sent it.
	raw *json.RawMessage
}

// shared is what copies of a Client (WithHost) have in common.
type shared struct {
	// routeMu guards routes, the owner-routing decisions by Session
	// reference ("" = this version's socket).
	routeMu sync.Mutex
	routes  map[string]string
	// remoteMu guards controlDir, the private directory of ssh's shared
	// connection.
	remoteMu   sync.Mutex
	controlDir string
}

// maxRoutes bounds the routing cache; it is emptied when full.
const maxRoutes = 256

// New returns a Client with the given policy. A malformed Host is
// INVALID_ARGUMENT (field "host"); nothing is dialed yet.
func New(opts Options) (*Client, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Harnesses == nil {
		opts.Harnesses = harness.All()
	}
	c := &Client{opts: opts, sh: &shared{}}
	c.host = c.resolveHost(opts.Host)
	if c.host != "" {
		if _, err := parseHost(c.host); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// resolveHost is the destination host: explicit, else DLGT_HOST; "local"
// is this machine ("").
func (c *Client) resolveHost(explicit string) string {
	h := explicit
	if h == "" {
		h = c.opts.Getenv("DLGT_HOST")
	}
	if h == "local" {
		return ""
	}
	return h
}

// WithHost returns a Client addressing host ("local": this machine, "":
// the same as c) with c's policy otherwise. It shares c's ssh connection
// directory: close c, not the copy.
func (c *Client) WithHost(host string) (*Client, error) {
	if host == "" {
		return c, nil
	}
	cc := *c
	cc.opts.Host = host
	cc.host = ""
	if host != "local" {
		if _, err := parseHost(host); err != nil {
			return nil, err
		}
		cc.host = host
	}
	return &cc, nil
}

// Harnesses are the harnesses a profile may name and a launch may use
// (Options.Harnesses, else the registry), in the registry's order.
func (c *Client) Harnesses() []harness.Descriptor { return c.opts.Harnesses }

// Host is the host the Client addresses ("" is this machine).
func (c *Client) Host() string { return c.host }

// Remote reports whether the Client addresses another machine.
func (c *Client) Remote() bool { return c.host != "" }

// Close removes the private directory of ssh's shared connection (its
// master exits by itself two seconds after its last channel).
func (c *Client) Close() error {
	c.sh.remoteMu.Lock()
	defer c.sh.remoteMu.Unlock()
	if c.sh.controlDir != "" {
		os.RemoveAll(c.sh.controlDir)
		c.sh.controlDir = ""
	}
	return nil
}

// getenv is Options.Getenv with Home and Socket in place of DLGT_HOME
// and DLGT_SOCKET.
func (c *Client) getenv(k string) string {
	switch {
	case k == "DLGT_HOME" && c.opts.Home != "":
		return c.opts.Home
	case k == "DLGT_SOCKET" && c.opts.Socket != "":
		return c.opts.Socket
	}
	return c.opts.Getenv(k)
}

// Paths resolves the daemon paths of the Client's version on this
// machine. An unusable environment (no HOME at all) is RPC_UNAVAILABLE.
func (c *Client) Paths() (statedir.Paths, error) {
	v := c.opts.Version
	if v == "" {
		v = statedir.Version
	}
	p, err := statedir.ResolvePaths(c.getenv, v)
	if err != nil {
		return p, stateDirUnavailable(err)
	}
	return p, nil
}

// stateDirUnavailable types an unusable state directory as
// RPC_UNAVAILABLE (no daemon can serve from it); other errors pass.
func stateDirUnavailable(err error) error {
	var sde *statedir.StateDirError
	if errors.As(err, &sde) {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: sde.Error()}
	}
	return err
}

// Dial connects to the daemon the policy names for the Session ref
// ("" for a call that addresses no Session): the host's daemon through
// ssh; else the daemon of another version that holds ref when ref is
// provider-qualified and this version's does not (owner routing); else
// this version's, started in the background when none answers (unless
// autostart is off or the socket is pinned).
func (c *Client) Dial(ctx context.Context, ref string) (*rpc.Client, error) {
	nc, err := c.DialConn(ctx, ref)
	if err != nil {
		return nil, err
	}
	return rpc.NewClient(nc), nil
}

// DialConn is Dial's raw form (the stdio proxy, attach).
func (c *Client) DialConn(ctx context.Context, ref string) (net.Conn, error) {
	return c.dial(ctx, ref, true)
}

// DialExisting is Dial without autostart: a follower must not bring back
// a daemon someone stopped.
func (c *Client) DialExisting(ctx context.Context, ref string) (*rpc.Client, error) {
	nc, err := c.dial(ctx, ref, false)
	if err != nil {
		return nil, err
	}
	return rpc.NewClient(nc), nil
}

func (c *Client) dial(ctx context.Context, ref string, autostart bool) (net.Conn, error) {
	if c.host != "" {
		return c.dialRemote(ctx, c.host)
	}
	p, err := c.Paths()
	if err != nil {
		return nil, err
	}
	if sock := c.ownerSocket(ctx, p, ref); sock != "" {
		return dialSocket(ctx, sock)
	}
	nc, err := dialSocket(ctx, p.Socket)
	if err == nil || !autostart {
		return nc, err
	}
	if connectDenied(err) {
		// A daemon started from here would be denied the same way (and
		// would find the socket in use): say why instead.
		return nil, err
	}
	noAuto, perr := c.noAutostart()
	if perr != nil {
		return nil, perr
	}
	if c.getenv("DLGT_SOCKET") != "" || noAuto {
		// Say what was tried and what to do instead of starting a daemon.
		var re *rpc.Error
		if errors.As(err, &re) && re.Code == rpc.CodeRPCUnavailable {
			why := "DLGT_NO_AUTOSTART is true, so none was started: run `dlgt daemon` (with the same DLGT_HOME), or unset DLGT_NO_AUTOSTART"
			if c.getenv("DLGT_SOCKET") != "" {
				why = "DLGT_SOCKET pins this socket, so none was started: start the daemon that serves it, or unset DLGT_SOCKET"
			}
			return nil, &rpc.Error{Code: re.Code, Message: re.Message + "; " + why}
		}
		return nil, err
	}
	if err := c.startDaemon(p); err != nil {
		return nil, err
	}
	return waitForDaemon(ctx, p.Socket, 15*time.Second)
}

// noAutostart is Options.NoAutostart, or DLGT_NO_AUTOSTART parsed as a
// boolean (1/0, t/f, true/false, any case); unset or empty is false.
func (c *Client) noAutostart() (bool, error) {
	v := strings.TrimSpace(c.getenv("DLGT_NO_AUTOSTART"))
	if v == "" {
		return c.opts.NoAutostart, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "DLGT_NO_AUTOSTART",
			Message: fmt.Sprintf("DLGT_NO_AUTOSTART=%q is not a boolean: use 1/true to never start a daemon, 0/false (or unset) to start one when none runs", v)}
	}
	return b || c.opts.NoAutostart, nil
}

func dialSocket(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		msg := fmt.Sprintf("daemon socket %s: %v", socket, err)
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			msg += "; " + deniedHint(socket, err)
		}
		return nil, &connectError{&rpc.Error{Code: rpc.CodeRPCUnavailable, Message: msg}, err}
	}
	return nc, nil
}

// connectError is RPC_UNAVAILABLE from a failed connect(), keeping the
// system error so callers can tell a denied connect from an absent daemon.
type connectError struct {
	wire  *rpc.Error
	cause error
}

func (c *connectError) Error() string   { return c.wire.Error() }
func (c *connectError) Unwrap() []error { return []error{c.wire, c.cause} }

// connectDenied reports whether err is a connect() the operating system
// refused (EPERM or EACCES) rather than one nobody answered.
func connectDenied(err error) bool {
	var ce *connectError
	return errors.As(err, &ce) && (errors.Is(ce.cause, syscall.EPERM) || errors.Is(ce.cause, syscall.EACCES))
}

// deniedHint says why a connect() to the socket may be refused and the
// way out. EPERM on a Unix socket is what a command sandbox answers (Codex's
// default workspace-write sandbox denies connect() to every socket); EACCES
// is a socket or directory of another user, or a sandbox as well.
func deniedHint(socket string, err error) string {
	if errors.Is(err, syscall.EACCES) {
		if fi, serr := os.Stat(socket); serr == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
				return fmt.Sprintf("the socket belongs to uid %d and this is uid %d: run dlgt as the user whose daemon it is", st.Uid, os.Getuid())
			}
		}
	}
	return "connect() was refused by the operating system, which is what a command sandbox does " +
		"(Codex's default workspace-write sandbox denies every socket connection from its shell tool). " +
		"From inside a sandbox, use the dlgt MCP server instead: it runs outside the sandbox " +
		"(register it with `dlgt mcp config --codex`, then call its tools); or give the sandbox network access " +
		"(codex -s workspace-write -c sandbox_workspace_write.network_access=true). No daemon was started"
}

// startDaemon launches `dlgt daemon` detached in its own session, its
// output appended to the run directory's daemon.log.
func (c *Client) startDaemon(p statedir.Paths) error {
	// The state directories the daemon will insist on, checked here so an
	// unusable one is this call's typed error (what doctor says too),
	// not a daemon that dies in its log. A loose mode is tightened, aloud.
	for _, d := range []string{p.Home, p.RunDir, p.DataDir} {
		var err error
		var loose os.FileMode
		if d == p.DataDir {
			_, _, err = statedir.CheckPrivateDir(d) // the daemon creates it
		} else {
			loose, err = statedir.EnsurePrivateDir(d)
		}
		if err != nil {
			return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: "cannot start the daemon: " + err.Error()}
		}
		if loose != 0 {
			fmt.Fprintf(c.opts.Stderr, "dlgt: tightened %s from mode %04o to 0700 (it holds the socket, transcripts and session data)\n", d, loose)
		}
	}
	if c.opts.DaemonExe == "" {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: "cannot locate the dlgt executable to start the daemon; run `dlgt daemon` yourself"}
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(c.opts.DaemonExe, "daemon")
	// The daemon serves this machine: a DLGT_HOST meant for clients must
	// not send it elsewhere. Home and Socket reach it as the variables.
	for _, kv := range c.opts.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DLGT_HOST" || (k == "DLGT_HOME" && c.opts.Home != "") || (k == "DLGT_SOCKET" && c.opts.Socket != "") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	if c.opts.Home != "" {
		cmd.Env = append(cmd.Env, "DLGT_HOME="+c.opts.Home)
	}
	if c.opts.Socket != "" {
		cmd.Env = append(cmd.Env, "DLGT_SOCKET="+c.opts.Socket)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the daemon: %w", err)
	}
	// Reap it if it exits early (e.g. another daemon won the race).
	go cmd.Wait()
	return nil
}

// waitForDaemon dials with exponential backoff until the socket answers.
func waitForDaemon(ctx context.Context, socket string, limit time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(limit)
	delay := 10 * time.Millisecond
	for {
		c, err := dialSocket(ctx, socket)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("the daemon did not come up on %s within %s (see its log beside the socket)", socket, limit)}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay < 500*time.Millisecond {
			delay *= 2
		}
	}
}

// ownerSocket finds the daemon that holds ref when it is a
// provider-qualified id (harness:provider-id) this version's daemon does
// not hold: the versioned sockets of live daemons under $DLGT_HOME/run/
// are asked in turn (session.read), so a call reaches the daemon that
// owns the Session instead of starting a duplicate. It returns "" to use
// this version's socket as usual: no qualified id, a pinned socket, this
// daemon holds the Session, or nobody does. The answer is remembered for
// the Client's later calls about ref.
func (c *Client) ownerSocket(ctx context.Context, p statedir.Paths, ref string) string {
	if !strings.Contains(ref, ":") || c.getenv("DLGT_SOCKET") != "" {
		return ""
	}
	c.sh.routeMu.Lock()
	defer c.sh.routeMu.Unlock()
	if sock, ok := c.sh.routes[ref]; ok {
		return sock
	}
	owner := ""
	defer func() {
		if c.sh.routes == nil || len(c.sh.routes) >= maxRoutes {
			c.sh.routes = map[string]string{}
		}
		c.sh.routes[ref] = owner
	}()
	switch holdsSession(ctx, p.Socket, ref) {
	case holdYes, holdUnknown:
		return "" // ours, or ours answered oddly: let the call report it
	}
	socks, _ := filepath.Glob(filepath.Join(p.Home, "run", "*", "dlgt.sock"))
	sort.Strings(socks)
	for _, sock := range socks {
		if sock == p.Socket {
			continue
		}
		if holdsSession(ctx, sock, ref) == holdYes {
			owner = sock
			return owner
		}
	}
	return ""
}

type holding int

const (
	holdNo      holding = iota // NOT_FOUND, or no daemon answers there
	holdYes                    // the daemon there holds the Session
	holdUnknown                // a daemon answered with another error
)

// holdsSession asks the daemon at socket (if one answers) whether it holds
// the Session ref.
func holdsSession(ctx context.Context, socket, ref string) holding {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	nc, err := dialSocket(ctx, socket)
	if err != nil {
		return holdNo
	}
	c := rpc.NewClient(nc)
	defer c.Close()
	_, err = rpc.SessionRead.Call(ctx, c, rpc.SessionReadParams{Session: ref})
	switch {
	case err == nil:
		return holdYes
	case errors.Is(err, rpc.ErrNotFound):
		return holdNo
	case errors.Is(err, rpc.ErrRPCUnavailable):
		return holdNo
	}
	return holdUnknown
}

// dialRunning dials this version's daemon without starting one. With
// none running (no socket, or nobody listening on it) it returns a nil
// client and no error; any other failure to connect is RPC_UNAVAILABLE.
// sock is the socket it tried.
func (c *Client) dialRunning(ctx context.Context) (rc *rpc.Client, sock string, err error) {
	p, err := c.Paths()
	if err != nil {
		return nil, "", err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", p.Socket)
	switch {
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
		return nil, p.Socket, nil
	case err != nil:
		return nil, p.Socket, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("daemon socket %s: %v", p.Socket, err)}
	}
	return rpc.NewClient(nc), p.Socket, nil
}
