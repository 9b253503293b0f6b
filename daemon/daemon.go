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
	"time"

	"github.com/dlgt-dev/dlgt/daemon/hookhttp"
	"github.com/dlgt-dev/dlgt/daemon/sockets"
	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// ErrSocketInUse is returned when a live daemon already answers on the
// socket path; it is never replaced (package sockets).
var ErrSocketInUse = sockets.ErrInUse

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

	l, err := sockets.ListenOwned(p.Socket)
	if err != nil {
		return err
	}
	defer l.Cleanup()
	hl, err := sockets.ListenOwned(p.HookSocket)
	if err != nil {
		return err
	}
	defer hl.Cleanup()

	rt, err := newRuntime(db, p, log, cfg.Options)
	if err != nil {
		return err
	}
	if rt.opts.HTTPHooks {
		web, err := hookhttp.Listen(rt.log, rt.hooks.deliverHook)
		if err != nil {
			log.Warn("no HTTP hook endpoint on 127.0.0.1; hooks run the forwarder command", "err", err)
		} else {
			rt.hookWeb = web
			defer web.Close()
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
	go sockets.Watch(srvCtx, log, l, hl)
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

func newInstanceID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
