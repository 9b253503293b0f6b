package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/attach"
	"github.com/dlgt-dev/dlgt/internal/progress"
)

// Client is the command's daemon Client (package Client: the one dial
// policy of every front-end), built from the env on first use: --host
// (else DLGT_HOST; "local" for list --hosts' own machine), autostart with
// this executable, and, once a launch resolved to a profile's host, that
// host. Copies for other hosts share its ssh connection directory.
func (e *Env) Client() (*client.Client, error) {
	e.clientMu.Lock()
	defer e.clientMu.Unlock()
	if e.cl == nil {
		host := e.HostFlag
		if e.localOnly {
			host = "local"
		}
		c, err := client.New(client.Options{Getenv: e.Getenv, Environ: e.Environ, DaemonExe: e.Exe,
			Host: host, Stderr: e.Stderr, Harnesses: e.Harnesses})
		if err != nil {
			return nil, err
		}
		e.cl = c
	}
	if e.profileHost != "" && e.HostFlag == "" && !e.localOnly {
		return e.cl.WithHost(e.profileHost)
	}
	return e.cl, nil
}

// CleanupRemote closes the command's client (the private directory of
// ssh's shared connection goes; its master exits by itself).
func (e *Env) CleanupRemote() {
	e.clientMu.Lock()
	defer e.clientMu.Unlock()
	if e.cl != nil {
		e.cl.Close()
		e.cl = nil
	}
}

// startFetchProgress shows the --wait indicator (internal/progress) on a
// terminal stderr; every output of the command stops it first.
func (e *Env) startFetchProgress(cmd *cobra.Command, wait time.Duration) {
	if !e.Terminal(e.Stderr) || e.progress != nil {
		return
	}
	c, err := e.Client()
	if err != nil {
		return // the command reports it
	}
	pr := progress.Start(cmd.Context(), c, e.sessionRef, e.Stderr, func() int { return attach.Width(e.Stderr) }, wait)
	e.progress = pr
	cmd.SetOut(clearFirst{pr, cmd.OutOrStdout()})
	cmd.SetErr(clearFirst{pr, cmd.ErrOrStderr()})
}

// clearFirst stops the indicator before passing output on.
type clearFirst struct {
	pr *progress.Indicator
	w  io.Writer
}

// Unwrap is the stream written to (attach.Fd looks through it).
func (c clearFirst) Unwrap() any { return c.w }

func (c clearFirst) Write(p []byte) (int, error) {
	c.pr.Stop()
	return c.w.Write(p)
}
