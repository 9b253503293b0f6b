package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"dlgt/daemon"
	"dlgt/rpc"
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
	p, err := e.paths()
	if err != nil {
		return nil, err
	}
	c, err := dialSocket(ctx, p.Socket)
	if err == nil {
		return c, nil
	}
	if e.getenv("DLGT_SOCKET") != "" || e.getenv("DLGT_NO_AUTOSTART") != "" {
		return nil, err
	}
	if err := e.startDaemon(p); err != nil {
		return nil, err
	}
	return waitForDaemon(ctx, p.Socket, 15*time.Second)
}

func dialSocket(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("daemon socket %s: %v", socket, err)}
	}
	return nc, nil
}

// startDaemon launches `dlgt daemon` detached in its own session, its
// output appended to the run directory's daemon.log.
func (e *env) startDaemon(p daemon.Paths) error {
	if e.exe == "" {
		return errors.New("cannot locate the dlgt executable to start the daemon")
	}
	for _, d := range []string{p.Home, p.RunDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(e.exe, "daemon")
	cmd.Env = e.environ()
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
