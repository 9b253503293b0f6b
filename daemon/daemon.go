package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// Config configures Run.
type Config struct {
	Paths  statedir.Paths
	Logger *slog.Logger
	Limits rpc.Limits
	// Ready, when set, is called once the socket accepts connections.
	Ready func()
	// Runtime options (harness binaries, timing); zero values take defaults.
	Options Options
}

// dbLockTimeout bounds how long a second daemon on the same home waits for
// the bbolt file lock before failing with a clear error.
const dbLockTimeout = time.Second

// Run starts the daemon and serves until ctx is canceled. It returns an
// error when startup fails (another daemon owns the state, the socket path
// is not ours, a directory has the wrong owner).
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	p := cfg.Paths
	for _, dir := range []string{p.Home, p.RunDir, p.DataDir, p.RawDir} {
		loose, err := statedir.EnsurePrivateDir(dir)
		if err != nil {
			return err
		}
		if loose != 0 {
			log.Warn("tightened a state directory to mode 0700", "dir", dir, "was", fmt.Sprintf("%04o", loose))
		}
	}
	db, err := store.Open(p.DB, store.Options{LockTimeout: dbLockTimeout})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return alreadyRunning(ctx, p)
		}
		return fmt.Errorf("opening %s: %w", p.DB, err)
	}
	defer db.Close()

	l, err := listenOwned(p.Socket)
	if err != nil {
		return err
	}
	defer l.cleanup()
	hl, err := listenOwned(p.HookSocket)
	if err != nil {
		return err
	}
	defer hl.cleanup()

	rt, err := newRuntime(db, p, log, cfg.Options)
	if err != nil {
		return err
	}
	if rt.opts.HTTPHooks {
		web, err := listenHookHTTP(rt)
		if err != nil {
			log.Warn("no HTTP hook endpoint on 127.0.0.1; hooks run the forwarder command", "err", err)
		} else {
			rt.hookWeb = web
			defer web.close()
		}
	}
	srvCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	srv := &rpc.Server{Handler: rt, Logger: log, Limits: cfg.Limits}
	rt.shutdown = stopServing
	rt.server = srv
	log.Info("dlgt daemon listening", "version", statedir.Version, "socket", p.Socket, "instance", rt.instanceID, "pid", os.Getpid())
	if cfg.Ready != nil {
		cfg.Ready()
	}
	// Hooks have their own socket and connection cap, so clients holding
	// every public connection (long polls) can never starve the harness
	// callbacks that complete their turns.
	hookSrv := &rpc.Server{Handler: hookOnly{rt}, Logger: log, Limits: rpc.Limits{MaxConnections: hookConnections, MaxLineBytes: hookLineBytes}}
	go hookSrv.Serve(context.Background(), hl)
	defer hookSrv.Close()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(srvCtx, l) }()
	go watchSockets(srvCtx, log, l, hl)
	select {
	case <-srvCtx.Done():
	case err := <-serveErr:
		if !errors.Is(err, rpc.ErrServerClosed) {
			log.Error("serve failed", "err", err)
		}
	}
	log.Info("dlgt daemon shutting down")
	srv.Close()
	rt.close()
	return nil
}

// runningStatusTimeout bounds how long a refused daemon asks the running
// one who it is.
const runningStatusTimeout = 2 * time.Second

// alreadyRunning is the error of a daemon started on a home whose state
// another daemon holds: INVALID_ARGUMENT (retrying it unchanged fails the
// same way while that daemon runs), naming the running daemon's pid and
// socket when one of the sockets it may listen on (p.Socket, else the
// home's default) answers daemon.status for this home, and what to do.
func alreadyRunning(ctx context.Context, p statedir.Paths) error {
	ctx, cancel := context.WithTimeout(ctx, runningStatusTimeout)
	defer cancel()
	who := "another dlgt daemon"
	for _, sock := range []string{p.Socket, filepath.Join(p.RunDir, "dlgt.sock")} {
		if st, ok := statusAt(ctx, sock); ok && st.Home == p.Home && st.PID > 0 {
			who = fmt.Sprintf("a dlgt daemon (pid %d, socket %s)", st.PID, st.Socket)
			break
		}
	}
	return &rpc.Error{Code: rpc.CodeInvalidArgument, Message: fmt.Sprintf(
		"%s is already running with this state directory (%s): `dlgt daemon status` shows it, `dlgt daemon stop` stops it; or set DLGT_HOME to another directory",
		who, p.DataDir)}
}

// statusAt asks the daemon on sock for its status.
func statusAt(ctx context.Context, sock string) (st rpc.DaemonStatus, ok bool) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return st, false
	}
	c := rpc.NewClient(nc)
	defer c.Close()
	return st, c.Call(ctx, rpc.MethodDaemonStatus, struct{}{}, &st) == nil
}

// hookConnections caps concurrent hook deliveries. Each is one short-lived
// process of a harness; a Session fires them one at a time.
const hookConnections = 256

// hookLineBytes caps a hook request line: any payload the forwarder sends
// (hookfwd.MaxPayload) with room for the request around it. A payload
// carries the prompt JSON-escaped, which can take several times the
// prompt's 512 KiB: over the 1 MiB default, such a prompt's
// UserPromptSubmit was refused and the prompt never confirmed.
const hookLineBytes = hookfwd.MaxPayload + 64<<10

// hookOnly serves the hook socket: internal.hook and the decision wait
// of a hook that opened a pending request, nothing else.
type hookOnly struct{ rt *runtime }

func (h hookOnly) ServeRPC(ctx context.Context, peer rpc.Peer, req *rpc.Request) (any, error) {
	if req.Method != rpc.MethodHookDeliver && req.Method != rpc.MethodHookDecision {
		return nil, rpc.InvalidField("method", "the hook socket serves only %s and %s", rpc.MethodHookDeliver, rpc.MethodHookDecision)
	}
	return h.rt.ServeRPC(ctx, peer, req)
}

// socketCheckInterval is how often the daemon checks that its socket
// paths still name the sockets it bound when it cannot watch the
// directories holding them (see watchSockets); a path deleted (or
// replaced by a stale file) while it runs is bound again, so clients can
// reconnect.
const socketCheckInterval = 2 * time.Second

// ownedSocket is a listener on a socket path the daemon owns. When the
// path is deleted while the daemon runs, rebind binds it again (with
// listen's bind hygiene) and Accept continues on the new socket; the
// server never sees the switch.
type ownedSocket struct {
	path string

	// mu guards the fields that follow.
	mu      sync.Mutex
	l       *net.UnixListener
	info    os.FileInfo // the bound socket file, to recognize it
	closed  bool
	lastErr string     // last rebind failure logged, to log each once
	queued  []net.Conn // taken from a replaced socket's queue, for Accept
}

// listenOwned binds path (see listen).
func listenOwned(path string) (*ownedSocket, error) {
	l, err := listen(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, err
	}
	return &ownedSocket{path: path, l: l, info: info}, nil
}

// Accept waits on the current socket; a socket replaced by rebind ends
// its Accept with an error, and Accept continues on the new one.
func (o *ownedSocket) Accept() (net.Conn, error) {
	for {
		o.mu.Lock()
		if len(o.queued) > 0 {
			c := o.queued[0]
			o.queued = o.queued[1:]
			o.mu.Unlock()
			return c, nil
		}
		l := o.l
		o.mu.Unlock()
		c, err := l.Accept()
		if err == nil {
			return c, nil
		}
		o.mu.Lock()
		swapped := o.l != l && !o.closed
		o.mu.Unlock()
		if !swapped {
			return nil, err
		}
	}
}

func (o *ownedSocket) Addr() net.Addr {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.l.Addr()
}

// Close stops accepting; the path is left alone (see cleanup).
func (o *ownedSocket) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for _, c := range o.queued {
		c.Close()
	}
	o.queued = nil
	return o.l.Close()
}

// cleanup closes the listener and removes the path only if it still
// names our socket.
func (o *ownedSocket) cleanup() {
	o.Close()
	o.mu.Lock()
	info := o.info
	o.mu.Unlock()
	if sameFile(o.path, info) {
		os.Remove(o.path)
	}
}

// rebind binds the path again when it no longer names our socket. A path
// taken by something listen refuses to replace (a live daemon, a file
// that is not a socket) is left alone and the failure logged once.
func (o *ownedSocket) rebind(log *slog.Logger) {
	o.mu.Lock()
	if o.closed || sameFile(o.path, o.info) {
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	nl, err := listen(o.path)
	var info os.FileInfo
	if err == nil {
		if info, err = os.Lstat(o.path); err != nil {
			nl.Close()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != o.lastErr {
			o.lastErr = msg
			log.Error("socket path no longer names the daemon's socket; cannot bind it again", "socket", o.path, "err", err)
		}
		return
	}
	if o.closed {
		nl.Close()
		if sameFile(o.path, info) {
			os.Remove(o.path)
		}
		return
	}
	old := o.l
	o.l, o.info, o.lastErr = nl, info, ""
	// Clients that connected just before the path was deleted wait in
	// the old socket's queue: Accept hands them out before the new ones.
	o.queued = append(o.queued, drainQueued(old)...)
	old.Close()
	log.Warn("socket path was deleted or replaced while running; bound it again", "socket", o.path)
}

// drainQueued accepts, without waiting, the connections queued on l (at
// most its backlog, bounded by the kernel's somaxconn).
func drainQueued(l *net.UnixListener) []net.Conn {
	rc, err := l.SyscallConn()
	if err != nil {
		return nil
	}
	var out []net.Conn
	rc.Control(func(fd uintptr) {
		for len(out) < 1<<16 {
			nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			if err == syscall.EINTR || err == syscall.ECONNABORTED {
				continue
			}
			if err != nil {
				return
			}
			f := os.NewFile(uintptr(nfd), "unix")
			c, err := net.FileConn(f)
			f.Close()
			if err == nil {
				out = append(out, c)
			}
		}
	})
	return out
}

func newInstanceID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
