package main

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

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Remote Sessions. With --host (or DLGT_HOST, or a profile's host) a client
// command speaks the same protocol to the daemon of another machine, with
// OpenSSH as the only transport:
//
//	ssh -T -o BatchMode=yes [user@]host dlgt rpc --stdio --remote
//
// The remote `dlgt rpc --stdio --remote` first writes one hello line (its
// RPC schema and version), then proxies as it does locally, starting its
// daemon when none runs. DLGT_SSH_COMMAND replaces `ssh` and its options
// (run by /bin/sh, as GIT_SSH_COMMAND is for git); DLGT_REMOTE_BIN names
// the remote dlgt when it is not on the remote PATH.

// helloSchemaOverride, set at build time (-ldflags -X
// main.helloSchemaOverride=N), makes the hello announce schema N: it is how
// the tests build "an older remote". Empty in every release.
var helloSchemaOverride string

// remoteHello is the first line `dlgt rpc --stdio --remote` writes.
type remoteHello struct {
	Hello struct {
		SchemaVersion int    `json:"schema_version"`
		Version       string `json:"version"`
	} `json:"hello"`
}

func helloLine() []byte {
	var h remoteHello
	h.Hello.SchemaVersion, h.Hello.Version = rpc.SchemaVersion, daemon.Version
	if n, err := strconv.Atoi(helloSchemaOverride); err == nil {
		h.Hello.SchemaVersion = n
	}
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

// sshLine is the ssh command line a person runs to reach t: ssh takes a
// port as -p, never in the destination (`ssh host:2222` looks up a host
// named "host:2222"), and an IPv6 address bare.
func (t sshTarget) sshLine() string {
	if t.port != "" {
		return "ssh -p " + t.port + " " + t.dest
	}
	return "ssh " + t.dest
}

// remoteHost is the host a command addresses: --host, else the profile's
// host (create and send --resume), else DLGT_HOST; "" is this machine.
func (e *env) remoteHost() string {
	switch {
	case e.localOnly:
		return ""
	case e.hostFlag != "":
		return e.hostFlag
	case e.profileHost != "":
		return e.profileHost
	}
	return e.getenv("DLGT_HOST")
}

// remote reports whether the command addresses another machine.
func (e *env) remote() bool { return e.remoteHost() != "" }

// shellQuote quotes s for a POSIX shell (the remote side's).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sshCommand builds the ssh invocation that runs dlgt with args on t.
// tty asks for a terminal (attach); otherwise none, and never a prompt.
func (e *env) sshCommand(ctx context.Context, t sshTarget, tty bool, args ...string) (*exec.Cmd, error) {
	bin := e.getenv("DLGT_REMOTE_BIN")
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
		if dir, err := e.sshControlDir(); err == nil {
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
	if custom := strings.TrimSpace(e.getenv("DLGT_SSH_COMMAND")); custom != "" {
		cmd = exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", custom + ` "$@"`, custom}, argv...)...)
	} else {
		cmd = exec.CommandContext(ctx, "ssh", argv...)
	}
	cmd.Env = e.environ()
	return cmd, nil
}

// sshControlDir is the command's private directory for ssh's
// connection-sharing socket, created on first use and removed by cleanup.
func (e *env) sshControlDir() (string, error) {
	e.remoteMu.Lock()
	defer e.remoteMu.Unlock()
	if e.controlDir != "" {
		return e.controlDir, nil
	}
	dir, err := os.MkdirTemp("", "dlgt-ssh-")
	if err != nil {
		return "", err
	}
	e.controlDir = dir
	return dir, nil
}

// cleanupRemote removes the control directory (the shared connection's
// master exits by itself two seconds after its last channel).
func (e *env) cleanupRemote() {
	e.remoteMu.Lock()
	defer e.remoteMu.Unlock()
	if e.controlDir != "" {
		os.RemoveAll(e.controlDir)
		e.controlDir = ""
	}
}

// dialRemote starts `dlgt rpc --stdio --remote` on the host and checks its
// hello: the connection it returns carries the protocol as a local socket
// does.
func (e *env) dialRemote(ctx context.Context, host string) (net.Conn, error) {
	t, err := parseHost(host)
	if err != nil {
		return nil, err
	}
	cmd, err := e.sshCommand(context.WithoutCancel(ctx), t, false, "rpc", "--stdio", "--remote")
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
	c := &sshConn{target: t, r: outR, w: inW, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &c.stderr
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
	c.cmd = cmd
	go func() { c.waitErr = cmd.Wait(); close(c.exited) }()
	if err := c.readHello(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
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
			c.target.name, clip(string(line), 200), daemon.Version)}
	}
	if h.Hello.SchemaVersion != rpc.SchemaVersion {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf(
			"host %s: the remote dlgt %s speaks RPC schema %d and this dlgt %s speaks schema %d: install the same dlgt version on both machines",
			c.target.name, h.Hello.Version, h.Hello.SchemaVersion, daemon.Version, rpc.SchemaVersion)}
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
		why = fmt.Sprintf("the remote dlgt is older than remote Sessions; install dlgt %s there", daemon.Version)
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

// fillLaunch is the remote proxy's rewrite: a session.create, restart, or
// send --resume gets this side's environment under the entries the client
// sent, and a create without a cwd this side's working directory. The
// client on the other machine cannot know either.
func fillLaunch(environ func() []string) func(string, json.RawMessage) (json.RawMessage, error) {
	return func(method string, params json.RawMessage) (json.RawMessage, error) {
		switch method {
		case rpc.MethodSessionCreate, rpc.MethodSessionRestart, rpc.MethodSessionSend:
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

// runRemote runs `dlgt args…` on the host with this command's streams
// (and, with tty, its terminal: `ssh -t`), for the commands that are not
// RPC: attach, daemon, daemon status and stop. The remote exit status is
// this command's.
func (e *env) runRemote(ctx context.Context, host string, tty bool, args ...string) error {
	t, err := parseHost(host)
	if err != nil {
		return err
	}
	cmd, err := e.sshCommand(ctx, t, tty, args...)
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() == 255 {
			return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: ssh failed", t.name)}
		}
		return exitStatus{ee.ExitCode()}
	}
	if err != nil {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: cannot run ssh: %v", t.name, err)}
	}
	return nil
}

// remoteArgs is the command line without --host, to run on the host.
func (e *env) remoteArgs() []string {
	var out []string
	for i := 0; i < len(e.argv); i++ {
		a := e.argv[i]
		switch {
		case a == "--":
			return append(out, e.argv[i:]...)
		case a == "--host":
			i++
		case strings.HasPrefix(a, "--host="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// passRemote makes c run on the host when the command addresses one.
func (e *env) passRemote(c *cobra.Command, tty bool) {
	local := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		// The foreground daemon follows only an explicit --host: with
		// DLGT_HOST in the environment, `dlgt daemon` still serves here.
		if !e.remote() || (cmd.CommandPath() == "dlgt daemon" && e.hostFlag == "") {
			return local(cmd, args)
		}
		err := e.runRemote(cmd.Context(), e.remoteHost(), tty, e.remoteArgs()...)
		var es exitStatus
		if err != nil && !errors.As(err, &es) {
			return printFailure(cmd, err)
		}
		return err
	}
}

// forHost is a copy of e that addresses host ("" or "local": this
// machine), for commands that visit several.
func (e *env) forHost(host string) *env {
	ce := &env{getenv: e.getenv, environ: e.environ, stdin: e.stdin, stdout: e.stdout,
		stderr: e.stderr, exe: e.exe, isTerminal: e.isTerminal, sessionRef: e.sessionRef}
	if host == "" || host == "local" {
		ce.localOnly = true
	} else {
		ce.hostFlag = host
	}
	return ce
}

// remoteDoctor is doctor's report of the other end: whether ssh reaches
// a dlgt that speaks this schema, then the remote doctor's own checks,
// each naming the host.
func (e *env) remoteDoctor(ctx context.Context) []doctorCheck {
	host := e.remoteHost()
	conn := doctorCheck{Name: "remote", Host: host}
	t, err := parseHost(host)
	if err != nil {
		conn.Detail = rpc.AsError(err).Message
		conn.Fix = "give --host (or DLGT_HOST, or the profile's host) as [user@]host[:port], an IPv6 address with a port as [address]:port"
		return []doctorCheck{conn}
	}
	c, err := e.dialRemote(ctx, host)
	if err != nil {
		conn.Detail = rpc.AsError(err).Message
		conn.Fix = "check `" + t.sshLine() + " true` works without a prompt (BatchMode), and that the same dlgt version is on the remote PATH or in DLGT_REMOTE_BIN"
		return []doctorCheck{conn}
	}
	c.Close()
	conn.OK, conn.Detail = true, "ssh reaches a dlgt that speaks RPC schema "+strconv.Itoa(rpc.SchemaVersion)
	cmd, err := e.sshCommand(ctx, t, false, "doctor")
	if err != nil {
		return []doctorCheck{conn}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	cmd.Run() // doctor exits 1 when a check fails; its JSON says which
	var doc struct {
		Checks []doctorCheck `json:"checks"`
	}
	checks := []doctorCheck{conn}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &doc); err != nil {
		return append(checks, doctorCheck{Name: "remote.doctor", Host: host, Detail: "the remote doctor printed no report: " + clip(out.String(), 200)})
	}
	for _, rc := range doc.Checks {
		rc.Host = host
		checks = append(checks, rc)
	}
	return checks
}

var _ io.ReadWriteCloser = (*sshConn)(nil)
