package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Remote Sessions: with --host (or DLGT_HOST, or a profile's host) a
// command speaks to the daemon of another machine through the client's
// ssh transport (package client, docs/remote.md). Here: the commands
// that are not RPC (attach, daemon control) run on the host itself.

// remoteHost is the host a command addresses: --host, else the profile's
// host (create and send --resume), else DLGT_HOST; "" (or "local") is this
// machine.
func (e *env) remoteHost() string {
	if c, err := e.client(); err == nil {
		return c.Host()
	}
	// A malformed host: the command reports it where it dials.
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

// runRemote runs `dlgt args…` on the host with this command's streams
// (and, with tty, its terminal: `ssh -t`), for the commands that are not
// RPC: attach, daemon, daemon status and stop. The remote exit status is
// this command's.
func (e *env) runRemote(ctx context.Context, host string, tty bool, args ...string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	cmd, err := c.RemoteCommand(ctx, tty, args...)
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() == 255 {
			return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: ssh failed", host)}
		}
		return exitStatus{ee.ExitCode()}
	}
	if err != nil {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("host %s: cannot run ssh: %v", host, err)}
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
