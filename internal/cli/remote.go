package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
)

// Remote Sessions: with --host (or DLGT_HOST, or a profile's host) a
// command speaks to the daemon of another machine through the client's
// ssh transport (package client, docs/remote.md). Here: the commands
// that are not RPC (attach, daemon control) run on the host itself.

// RemoteHost is the host a command addresses: --host, else the profile's
// host (create and send --resume), else DLGT_HOST; "" (or "local") is this
// machine.
func (e *Env) RemoteHost() string {
	if c, err := e.Client(); err == nil {
		return c.Host()
	}
	// A malformed host: the command reports it where it dials.
	switch {
	case e.localOnly:
		return ""
	case e.HostFlag != "":
		return e.HostFlag
	case e.profileHost != "":
		return e.profileHost
	}
	return e.Getenv("DLGT_HOST")
}

// remote reports whether the command addresses another machine.
func (e *Env) remote() bool { return e.RemoteHost() != "" }

// PassRemote makes c run on the host when the command addresses one.
func (e *Env) PassRemote(c *cobra.Command, tty bool) {
	local := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		// The foreground daemon follows only an explicit --host: with
		// DLGT_HOST in the environment, `dlgt daemon` still serves here.
		if !e.remote() || (cmd.CommandPath() == "dlgt daemon" && e.HostFlag == "") {
			return local(cmd, args)
		}
		c, err := e.Client()
		if err != nil {
			return PrintFailure(cmd, err)
		}
		code, err := c.RunRemote(cmd.Context(), tty, e.Stdin, e.Stdout, e.Stderr, client.WithoutHost(e.argv)...)
		switch {
		case err != nil:
			return PrintFailure(cmd, err)
		case code != 0:
			return ExitStatus{code}
		}
		return nil
	}
}
