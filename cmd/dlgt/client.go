package main

import (
	"context"
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

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/rpc"
)

// connect dials this version's daemon, starting one in the background when
// none answers (unless DLGT_SOCKET pins a socket, which is never
// auto-started: it may belong to someone else's setup).
func (e *env) connect(ctx context.Context) (*rpc.Client, error) {
	nc, err := e.connectConn(ctx)
	if err != nil {
		return nil, err
	}
	return rpc.NewClient(nc), nil
}

// connectConn is connect's raw form, for the stdio proxy.
func (e *env) connectConn(ctx context.Context) (net.Conn, error) {
	if host := e.remoteHost(); host != "" {
		return e.dialRemote(ctx, host)
	}
	p, err := e.paths()
	if err != nil {
		return nil, err
	}
	if sock := e.ownerSocket(ctx, p); sock != "" {
		return dialSocket(ctx, sock)
	}
	c, err := dialSocket(ctx, p.Socket)
	if err == nil {
		return c, nil
	}
	if connectDenied(err) {
		// A daemon started from here would be denied the same way (and
		// would find the socket in use): say why instead.
		return nil, err
	}
	noAuto, perr := e.noAutostart()
	if perr != nil {
		return nil, perr
	}
	if e.getenv("DLGT_SOCKET") != "" || noAuto {
		// Say what was tried and what to do instead of starting a daemon.
		var re *rpc.Error
		if errors.As(err, &re) && re.Code == rpc.CodeRPCUnavailable {
			why := "DLGT_NO_AUTOSTART is true, so none was started: run `dlgt daemon` (with the same DLGT_HOME), or unset DLGT_NO_AUTOSTART"
			if e.getenv("DLGT_SOCKET") != "" {
				why = "DLGT_SOCKET pins this socket, so none was started: start the daemon that serves it, or unset DLGT_SOCKET"
			}
			return nil, &rpc.Error{Code: re.Code, Message: re.Message + "; " + why}
		}
		return nil, err
	}
	if err := e.startDaemon(p); err != nil {
		return nil, err
	}
	return waitForDaemon(ctx, p.Socket, 15*time.Second)
}

// noAutostart parses DLGT_NO_AUTOSTART as a boolean (1/0, t/f, true/false,
// any case); unset or empty is false.
func (e *env) noAutostart() (bool, error) {
	v := strings.TrimSpace(e.getenv("DLGT_NO_AUTOSTART"))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "DLGT_NO_AUTOSTART",
			Message: fmt.Sprintf("DLGT_NO_AUTOSTART=%q is not a boolean: use 1/true to never start a daemon, 0/false (or unset) to start one when none runs", v)}
	}
	return b, nil
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
func (e *env) startDaemon(p daemon.Paths) error {
	// The state directories the daemon will insist on, checked here so an
	// unusable one is this command's typed error (what doctor says too),
	// not a daemon that dies in its log. A loose mode is tightened, aloud.
	for _, d := range []string{p.Home, p.RunDir, p.DataDir} {
		var err error
		var loose os.FileMode
		if d == p.DataDir {
			_, _, err = daemon.CheckPrivateDir(d) // the daemon creates it
		} else {
			loose, err = daemon.EnsurePrivateDir(d)
		}
		if err != nil {
			return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: "cannot start the daemon: " + err.Error()}
		}
		if loose != 0 {
			fmt.Fprintf(e.stderr, "dlgt: tightened %s from mode %04o to 0700 (it holds the socket, transcripts and session data)\n", d, loose)
		}
	}
	if e.exe == "" {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: "cannot locate the dlgt executable to start the daemon; run `dlgt daemon` yourself"}
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(e.exe, "daemon")
	// The daemon serves this machine: a DLGT_HOST meant for clients must
	// not send it elsewhere.
	for _, kv := range e.environ() {
		if !strings.HasPrefix(kv, "DLGT_HOST=") {
			cmd.Env = append(cmd.Env, kv)
		}
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

// ownerSocket finds the daemon that holds e.sessionRef when it is a
// provider-qualified id (harness:provider-id) this version's daemon does
// not hold: the versioned sockets of live daemons under $DLGT_HOME/run/
// are asked in turn (session.read), so a command reaches the daemon that
// owns the Session instead of starting a duplicate. It returns "" to use
// this version's socket as usual: no qualified id, DLGT_SOCKET set, this
// daemon holds the Session, or nobody does. The answer is remembered for
// the command's later connections.
func (e *env) ownerSocket(ctx context.Context, p daemon.Paths) string {
	e.routeMu.Lock()
	defer e.routeMu.Unlock()
	if e.routed != nil {
		return *e.routed
	}
	owner := ""
	defer func() { e.routed = &owner }()
	if !strings.Contains(e.sessionRef, ":") || e.getenv("DLGT_SOCKET") != "" {
		return ""
	}
	switch holdsSession(ctx, p.Socket, e.sessionRef) {
	case holdYes, holdUnknown:
		return "" // ours, or ours answered oddly: let the command report it
	}
	socks, _ := filepath.Glob(filepath.Join(p.Home, "run", "*", "dlgt.sock"))
	sort.Strings(socks)
	for _, sock := range socks {
		if sock == p.Socket {
			continue
		}
		if holdsSession(ctx, sock, e.sessionRef) == holdYes {
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
	err = c.Call(ctx, rpc.MethodSessionRead, rpc.SessionReadParams{Session: ref}, nil)
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

// progress is the one-line indicator a waiting `session fetch --wait`
// shows on a terminal stderr: state, elapsed time and the last screen
// line, refreshed every second from a second connection. It never writes
// to stdout and clears its line before the command prints anything.
type progress struct {
	w      io.Writer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// mu guards shown.
	mu    sync.Mutex
	shown bool
}

// progressEvery is the indicator's refresh interval.
var progressEvery = time.Second

func (e *env) startFetchProgress(cmd *cobra.Command, wait time.Duration) {
	if !e.terminal(e.stderr) || e.progress != nil {
		return
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	pr := &progress{w: e.stderr, cancel: cancel, done: make(chan struct{})}
	e.progress = pr
	cmd.SetOut(clearFirst{pr, cmd.OutOrStdout()})
	cmd.SetErr(clearFirst{pr, cmd.ErrOrStderr()})
	go pr.run(ctx, e, e.sessionRef, wait)
}

// clearFirst stops the indicator before passing output on.
type clearFirst struct {
	pr *progress
	w  io.Writer
}

func (c clearFirst) Write(p []byte) (int, error) {
	c.pr.stop()
	return c.w.Write(p)
}

func (pr *progress) run(ctx context.Context, e *env, ref string, wait time.Duration) {
	defer close(pr.done)
	start := time.Now()
	var c *rpc.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	state, last := "", ""
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ref != "" {
			if c == nil {
				if nc, err := e.connectConn(ctx); err == nil {
					c = rpc.NewClient(nc)
				}
			}
			if c != nil {
				state, last = pollSession(ctx, c, ref)
			}
		}
		line := progressLine(ref, state, last, time.Since(start), wait, terminalWidth(pr.w))
		pr.mu.Lock()
		if ctx.Err() == nil {
			io.WriteString(pr.w, "\r\x1b[2K"+line)
			pr.shown = true
		}
		pr.mu.Unlock()
	}
}

// pollSession reads the Session's state and its last non-blank screen line.
func pollSession(ctx context.Context, c *rpc.Client, ref string) (state, last string) {
	var read rpc.SessionReadResult
	if err := c.Call(ctx, rpc.MethodSessionRead, rpc.SessionReadParams{Session: ref}, &read); err == nil {
		state = read.Session.State
	}
	var page struct {
		Lines []string `json:"lines"`
	}
	if err := c.Call(ctx, rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: ref, Lines: 5}, &page); err == nil {
		for i := len(page.Lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(page.Lines[i]); l != "" {
				last = l
				break
			}
		}
	}
	return state, last
}

// progressLine renders the indicator, clipped to width-1 columns so it
// never wraps (a wrapped line could not be cleared with one CR).
func progressLine(ref, state, last string, elapsed, wait time.Duration, width int) string {
	parts := []string{"waiting"}
	if ref != "" {
		parts = append(parts, ref)
	} else {
		parts = append(parts, "all sessions")
	}
	if state != "" {
		parts = append(parts, state)
	}
	parts = append(parts, fmtElapsed(elapsed)+"/"+fmtElapsed(wait))
	if last != "" {
		parts = append(parts, last)
	}
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.Join(parts, " · "))
	if width < 10 {
		width = 80
	}
	rs := []rune(s)
	if len(rs) > width-1 {
		rs = append(rs[:width-2], '…')
	}
	return string(rs)
}

func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// stop ends the indicator and clears its line. Safe on nil and repeated.
func (pr *progress) stop() {
	if pr == nil {
		return
	}
	pr.once.Do(func() {
		pr.cancel()
		<-pr.done
		pr.mu.Lock()
		if pr.shown {
			io.WriteString(pr.w, "\r\x1b[2K")
		}
		pr.mu.Unlock()
	})
}
