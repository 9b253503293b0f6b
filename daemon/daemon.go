// Package daemon is the dlgt daemon: it owns the state directory, the
// versioned Unix socket, the bbolt store and every Session's harness
// process, and serves the RPC v1 methods over the socket. Run blocks until
// its context is canceled, which is the stop signal.
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
	"time"

	"dlgt/rpc"
	"dlgt/store"
)

// Config configures Run.
type Config struct {
	Paths  Paths
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
		if err := ensurePrivateDir(dir); err != nil {
			return err
		}
	}
	db, err := store.Open(p.DB, store.Options{LockTimeout: dbLockTimeout})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("state directory %s is in use by another dlgt daemon (%w)", p.DataDir, err)
		}
		return fmt.Errorf("opening %s: %w", p.DB, err)
	}
	defer db.Close()

	l, cleanup, err := listenOwned(p.Socket)
	if err != nil {
		return err
	}
	defer cleanup()
	hl, hookCleanup, err := listenOwned(p.HookSocket)
	if err != nil {
		return err
	}
	defer hookCleanup()

	rt, err := newRuntime(db, p, log, cfg.Options)
	if err != nil {
		return err
	}
	srvCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	srv := &rpc.Server{Handler: rt, Logger: log, Limits: cfg.Limits}
	rt.shutdown = stopServing
	rt.server = srv
	log.Info("dlgt daemon listening", "version", Version, "socket", p.Socket, "instance", rt.instanceID, "pid", os.Getpid())
	if cfg.Ready != nil {
		cfg.Ready()
	}
	// Hooks have their own socket and connection cap, so clients holding
	// every public connection (long polls) can never starve the harness
	// callbacks that complete their turns.
	hookSrv := &rpc.Server{Handler: hookOnly{rt}, Logger: log, Limits: rpc.Limits{MaxConnections: hookConnections}}
	go hookSrv.Serve(context.Background(), hl)
	defer hookSrv.Close()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(srvCtx, l) }()
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

// hookConnections caps concurrent hook deliveries. Each is one short-lived
// process of a harness; a Session fires them one at a time.
const hookConnections = 256

// hookOnly serves the hook socket: internal.hook and nothing else.
type hookOnly struct{ rt *runtime }

func (h hookOnly) ServeRPC(ctx context.Context, peer rpc.Peer, req *rpc.Request) (any, error) {
	if req.Method != rpc.MethodHookDeliver {
		return nil, rpc.InvalidField("method", "the hook socket serves only %s", rpc.MethodHookDeliver)
	}
	return h.rt.ServeRPC(ctx, peer, req)
}

// listenOwned binds path (see listen) and returns a cleanup that closes the
// listener and removes the path only if it still names our socket.
func listenOwned(path string) (net.Listener, func(), error) {
	l, err := listen(path)
	if err != nil {
		return nil, nil, err
	}
	info, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, func() {
		l.Close()
		if sameFile(path, info) {
			os.Remove(path)
		}
	}, nil
}

func newInstanceID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
