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

	l, err := listen(p.Socket)
	if err != nil {
		return err
	}
	sockInfo, err := os.Lstat(p.Socket)
	if err != nil {
		l.Close()
		return err
	}
	defer func() {
		l.Close()
		if sameFile(p.Socket, sockInfo) {
			os.Remove(p.Socket)
		}
	}()

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

func newInstanceID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
