package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
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

// passRemote makes c run on the host when the command addresses one.
func (e *env) passRemote(c *cobra.Command, tty bool) {
	local := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		// The foreground daemon follows only an explicit --host: with
		// DLGT_HOST in the environment, `dlgt daemon` still serves here.
		if !e.remote() || (cmd.CommandPath() == "dlgt daemon" && e.hostFlag == "") {
			return local(cmd, args)
		}
		c, err := e.client()
		if err != nil {
			return printFailure(cmd, err)
		}
		code, err := c.RunRemote(cmd.Context(), tty, e.stdin, e.stdout, e.stderr, client.WithoutHost(e.argv)...)
		switch {
		case err != nil:
			return printFailure(cmd, err)
		case code != 0:
			return exitStatus{code}
		}
		return nil
	}
}
