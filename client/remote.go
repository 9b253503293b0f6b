package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Remote Sessions. With Options.Host (or DLGT_HOST, or a profile's host)
// a Client speaks the same protocol to the daemon of another machine, with
// OpenSSH as the only transport:
//
//	ssh -T -o BatchMode=yes [user@]host dlgt rpc --stdio --remote
//
// The remote `dlgt rpc --stdio --remote` first writes one hello line (its
// RPC schema and version, HelloLine), then proxies as it does locally,
// starting its daemon when none runs. DLGT_SSH_COMMAND replaces `ssh` and
// its options (run by /bin/sh, as GIT_SSH_COMMAND is for git);
// DLGT_REMOTE_BIN names the remote dlgt when it is not on the remote PATH.

// remoteHello is the first line `dlgt rpc --stdio --remote` writes.
type remoteHello struct {
	Hello struct {
		SchemaVersion int    `json:"schema_version"`
		Version       string `json:"version"`
	} `json:"hello"`
}

// HelloLine is the line `dlgt rpc --stdio --remote` writes before it
// proxies: this side's RPC schema (schemaVersion, normally
// rpc.SchemaVersion) and dlgt version, which a Client dialing through ssh
// checks before its first request.
func HelloLine(schemaVersion int) []byte {
	var h remoteHello
	h.Hello.SchemaVersion, h.Hello.Version = schemaVersion, statedir.Version
	b, _ := json.Marshal(h)
	return append(b, '\n')
}

// sshTarget is a parsed --host value.
type sshTarget struct {
	dest string // [user@]host, as ssh takes it
	port string // "" for ssh's default
	name string // the value as given, for messages
}

// parseHost parses [user@]host[:port]; an IPv6 address is written in
// brackets when a port follows ([::1]:2222).
func parseHost(s string) (sshTarget, error) {
	t := sshTarget{name: s}
	bad := func(why string) (sshTarget, error) {
		return sshTarget{}, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "host",
			Message: fmt.Sprintf("host %q %s: give [user@]host[:port]", s, why)}
	}
	if s == "" || strings.ContainsAny(s, " \t\r\n'\"\\`$;&|<>(){}") {
		return bad("is empty or holds characters a host name never has")
	}
	user, hostport, hasUser := strings.Cut(s, "@")
	if !hasUser {
		hostport, user = user, ""
	} else if user == "" || strings.Contains(hostport, "@") {
		return bad("has an empty or repeated user part")
	}
	host := hostport
	if strings.HasPrefix(hostport, "[") {
		end := strings.Index(hostport, "]")
		if end < 0 {
			return bad("opens a bracket it does not close")
		}
		host = hostport[1:end]
		if rest := hostport[end+1:]; rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return bad("has text after the bracketed address")
			}
			t.port = rest[1:]
		}
	} else if strings.Count(hostport, ":") == 1 {
		host, t.port, _ = strings.Cut(hostport, ":")
	}
	if host == "" || strings.HasPrefix(host, "-") || strings.HasPrefix(user, "-") {
		return bad("has no host name, or one that starts with '-'")
	}
	if t.port != "" {
		if n, err := strconv.Atoi(t.port); err != nil || n < 1 || n > 65535 {
			return bad("has a port that is not a number from 1 to 65535")
		}
	}
	t.dest = host
	if user != "" {
		t.dest = user + "@" + host
	}
	return t, nil
}

// shellQuote quotes s for a POSIX shell (the remote side's).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sshCommand builds the ssh invocation that runs dlgt with args on t.
// tty asks for a terminal (attach); otherwise none, and never a prompt.
func (c *Client) sshCommand(ctx context.Context, t sshTarget, tty bool, args ...string) (*exec.Cmd, error) {
	bin := c.getenv("DLGT_REMOTE_BIN")
	if bin == "" {
		bin = "dlgt"
	}
	words := []string{shellQuote(bin)}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	var opts []string
	if tty {
		opts = append(opts, "-t")
	} else {
		opts = append(opts, "-T", "-o", "BatchMode=yes")
		// One connection per command: later channels ride the first.
		if dir, err := c.sshControlDir(); err == nil {
			opts = append(opts, "-o", "ControlMaster=auto", "-o", "ControlPath="+filepath.Join(dir, "%C"), "-o", "ControlPersist=2")
		}
	}
	// Keepalives, so an idle long poll is not cut by a NAT or firewall.
	opts = append(opts, "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-o", "ConnectTimeout=20")
	if t.port != "" {
		opts = append(opts, "-p", t.port)
	}
	argv := append(opts, t.dest, strings.Join(words, " "))
	var cmd *exec.Cmd
	if custom := strings.TrimSpace(c.getenv("DLGT_SSH_COMMAND")); custom != "" {
		cmd = exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", custom + ` "$@"`, custom}, argv...)...)
	} else {
		cmd = exec.CommandContext(ctx, "ssh", argv...)
	}
	cmd.Env = c.opts.Environ()
	return cmd, nil
}

// sshControlDir is the Client's private directory for ssh's
// connection-sharing socket, created on first use and removed by Close.
func (c *Client) sshControlDir() (string, error) {
	c.sh.remoteMu.Lock()
	defer c.sh.remoteMu.Unlock()
	if c.sh.controlDir != "" {
		return c.sh.controlDir, nil
	}
	dir, err := os.MkdirTemp("", "dlgt-ssh-")
	if err != nil {
		return "", err
	}
	c.sh.controlDir = dir
	return dir, nil
}

// dialRemote starts `dlgt rpc --stdio --remote` on the host and checks its
// hello: the connection it returns carries the protocol as a local socket
// does.
func (c *Client) dialRemote(ctx context.Context, host string) (net.Conn, error) {
	t, err := parseHost(host)
	if err != nil {
		return nil, err
	}
	cmd, err := c.sshCommand(context.WithoutCancel(ctx), t, false, "rpc", "--stdio", "--remote")
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	sc := &sshConn{target: t, r: outR, w: inW, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &sc.stderr
	// Its own process group: a Ctrl-C meant for this command reaches ssh
	// only through this command's context.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: cannot run ssh: %v", t.name, err)}
	}
	inR.Close()
	outW.Close()
	sc.cmd = cmd
	go func() { sc.waitErr = cmd.Wait(); close(sc.exited) }()
	if err := sc.readHello(ctx); err != nil {
		sc.Close()
		return nil, err
	}
	return sc, nil
}

// sshConn is the client's end of one ssh channel running the remote proxy.
type sshConn struct {
	target  sshTarget
	cmd     *exec.Cmd
	r       *os.File // ssh's stdout
	w       *os.File // ssh's stdin
	stderr  tailBuffer
	exited  chan struct{}
	waitErr error
	once    sync.Once
}

// readHello reads the remote proxy's first line (byte by byte: nothing
// after it may be consumed here) and checks the schema.
func (c *sshConn) readHello(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { c.r.SetReadDeadline(time.Now()) })
	defer stop()
	var line []byte
	b := make([]byte, 1)
	for len(line) < 4096 {
		if _, err := c.r.Read(b); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.failure("before the remote dlgt answered", err)
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	var h remoteHello
	if err := json.Unmarshal(line, &h); err != nil || h.Hello.Version == "" {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf(
			"host %s: the remote dlgt did not greet with a hello (it printed %q): it is not dlgt, or one older than remote Sessions; install dlgt %s there",
			c.target.name, clip(string(line), 200), statedir.Version)}
	}
	if h.Hello.SchemaVersion != rpc.SchemaVersion {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf(
			"host %s: the remote dlgt %s speaks RPC schema %d and this dlgt %s speaks schema %d: install the same dlgt version on both machines",
			c.target.name, h.Hello.Version, h.Hello.SchemaVersion, statedir.Version, rpc.SchemaVersion)}
	}
	return nil
}

// failure explains why the channel ended: ssh's own error (exit status
// 255), a remote dlgt that is missing (127) or failed, with the last lines
// ssh printed.
func (c *sshConn) failure(when string, cause error) error {
	select {
	case <-c.exited:
	case <-time.After(3 * time.Second):
	}
	status := -1
	select {
	case <-c.exited:
		var ee *exec.ExitError
		if errors.As(c.waitErr, &ee) {
			status = ee.ExitCode()
		} else if c.waitErr == nil {
			status = 0
		}
	default:
	}
	said := strings.TrimSpace(c.stderr.String())
	var why string
	switch {
	case status == 255:
		why = "ssh failed"
	case status == 127:
		why = "the remote dlgt was not found (put it on the remote PATH or set DLGT_REMOTE_BIN)"
	case strings.Contains(said, "unknown flag: --remote"):
		why = fmt.Sprintf("the remote dlgt is older than remote Sessions; install dlgt %s there", statedir.Version)
	case status >= 0:
		why = fmt.Sprintf("the remote command ended with status %d", status)
	default:
		why = "the connection ended: " + cause.Error()
	}
	msg := fmt.Sprintf("host %s: %s %s", c.target.name, why, when)
	if said != "" {
		msg += ": " + said
	}
	return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: msg}
}

func (c *sshConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		return n, c.failure("while waiting for the daemon", err)
	}
	return n, err
}

func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		return n, c.failure("while sending a request", err)
	}
	return n, err
}

// Close ends the channel: ssh is killed, so the remote proxy sees its
// input end and leaves.
func (c *sshConn) Close() error {
	c.once.Do(func() {
		c.w.Close()
		c.r.Close()
		if c.cmd != nil && c.cmd.Process != nil {
			c.cmd.Process.Kill()
		}
	})
	return nil
}

func (c *sshConn) LocalAddr() net.Addr  { return sshAddr("local") }
func (c *sshConn) RemoteAddr() net.Addr { return sshAddr(c.target.name) }
func (c *sshConn) SetDeadline(t time.Time) error {
	c.r.SetReadDeadline(t)
	return c.w.SetWriteDeadline(t)
}
func (c *sshConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *sshConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

// tailBuffer keeps the last 4 KiB written to it (ssh's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4096; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, []byte("?")))
}

// FillLaunch is the remote proxy's rewrite: a session.create, restart, or
// send --resume gets this side's environment under the entries the client
// sent, and a create without a cwd this side's working directory. The
// client on the other machine cannot know either. A harness.list gets the
// same environment, so it lists what a create from there would find.
func FillLaunch(environ func() []string) func(string, json.RawMessage) (json.RawMessage, error) {
	return func(method string, params json.RawMessage) (json.RawMessage, error) {
		switch method {
		case rpc.MethodSessionCreate, rpc.MethodSessionRestart, rpc.MethodSessionSend, rpc.MethodHarnessList:
		default:
			return nil, nil
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(params, &p); err != nil || p == nil {
			return nil, nil // the daemon reports the shape
		}
		if method == rpc.MethodSessionSend && string(p["resume"]) != "true" {
			return nil, nil
		}
		env := map[string]string{}
		for _, kv := range environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				env[k] = v
			}
		}
		if raw, ok := p["environment"]; ok && string(raw) != "null" {
			var sent map[string]string
			if err := json.Unmarshal(raw, &sent); err != nil {
				return nil, nil
			}
			for k, v := range sent {
				env[k] = v
			}
		}
		b, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		p["environment"] = b
		if method == rpc.MethodSessionCreate {
			var cwd string
			if raw, ok := p["cwd"]; !ok || (json.Unmarshal(raw, &cwd) == nil && cwd == "") {
				wd, err := os.Getwd()
				if err != nil {
					return nil, fmt.Errorf("the remote working directory: %w", err)
				}
				p["cwd"], _ = json.Marshal(wd)
			}
		}
		return json.Marshal(p)
	}
}

// clip cuts s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// CheckHost validates a host value ([user@]host[:port]; an IPv6 address
// in brackets when a port follows) without dialing: a malformed one is
// INVALID_ARGUMENT with field "host".
func CheckHost(s string) error {
	_, err := parseHost(s)
	return err
}

// RemoteCommand is the ssh invocation that runs `dlgt args…` on the
// Client's host, for the commands that are not RPC (attach, daemon
// control); tty asks for a terminal (ssh -t). The caller sets its streams
// and runs it; exit status 255 is ssh's own failure.
func (c *Client) RemoteCommand(ctx context.Context, tty bool, args ...string) (*exec.Cmd, error) {
	if c.host == "" {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "no host: the Client addresses this machine")
	}
	t, err := parseHost(c.host)
	if err != nil {
		return nil, err
	}
	return c.sshCommand(ctx, t, tty, args...)
}

var _ net.Conn = (*sshConn)(nil)

// SSHLine is the ssh command line a person runs to reach host
// ([user@]host[:port]), for a hint: ssh takes a port as -p, never in the
// destination (`ssh host:2222` looks up a host named "host:2222"), and an
// IPv6 address bare. A malformed host is CheckHost's error.
func SSHLine(host string) (string, error) {
	t, err := parseHost(host)
	if err != nil {
		return "", err
	}
	if t.port != "" {
		return "ssh -p " + t.port + " " + t.dest, nil
	}
	return "ssh " + t.dest, nil
}

// RunRemote runs `dlgt args…` on the Client's host with the given streams
// (with tty, ssh's -t) and returns the remote exit status. ssh failing
// (its status 255, or not running at all) is RPC_UNAVAILABLE naming the
// host; no host is INVALID_ARGUMENT.
func (c *Client) RunRemote(ctx context.Context, tty bool, stdin io.Reader, stdout, stderr io.Writer, args ...string) (int, error) {
	cmd, err := c.RemoteCommand(ctx, tty, args...)
	if err != nil {
		return 0, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 255:
		return 0, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: ssh failed", c.host)}
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	case err != nil:
		return 0, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: cannot run ssh: %v", c.host, err)}
	}
	return 0, nil
}

// WithoutHost is a dlgt command line without its --host flag (the words
// after "--" kept as they are), to run on that host.
func WithoutHost(argv []string) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			return append(out, argv[i:]...)
		case a == "--host":
			i++
		case strings.HasPrefix(a, "--host="):
		default:
			out = append(out, a)
		}
	}
	return out
}
