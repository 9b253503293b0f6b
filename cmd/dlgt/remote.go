package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Remote Sessions: with --host (or DLGT_HOST, or a profile's host) a
// command speaks to the daemon of another machine through the client's
// ssh transport (package client, docs/remote.md). Here: the commands
// that are not RPC (attach, daemon control) run on the host itself, and
// doctor reports the other end.

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

// forHost is a copy of e that addresses host ("" or "local": this
// machine), for commands that visit several.
func (e *env) forHost(host string) *env {
	ce := &env{getenv: e.getenv, environ: e.environ, stdin: e.stdin, stdout: e.stdout,
		stderr: e.stderr, exe: e.exe, isTerminal: e.isTerminal, sessionRef: e.sessionRef}
	if host == "" || host == "local" {
		ce.localOnly = true
	} else {
		ce.hostFlag = host
	}
	return ce
}

// remoteDoctor is doctor's report of the other end: whether ssh reaches
// a dlgt that speaks this schema, then the remote doctor's own checks,
// each naming the host.
func (e *env) remoteDoctor(ctx context.Context) []doctorCheck {
	host := e.remoteHost()
	conn := doctorCheck{Name: "remote", Host: host}
	line, err := client.SSHLine(host)
	var c *client.Client
	if err == nil {
		c, err = e.client()
	}
	if err != nil {
		conn.Detail = rpc.AsError(err).Message
		conn.Fix = "give --host (or DLGT_HOST, or the profile's host) as [user@]host[:port], an IPv6 address with a port as [address]:port"
		return []doctorCheck{conn}
	}
	rc, err := c.Dial(ctx, "")
	if err != nil {
		conn.Detail = rpc.AsError(err).Message
		conn.Fix = "check `" + line + " true` works without a prompt (BatchMode), and that the same dlgt version is on the remote PATH or in DLGT_REMOTE_BIN"
		return []doctorCheck{conn}
	}
	rc.Close()
	conn.OK, conn.Detail = true, "ssh reaches a dlgt that speaks RPC schema "+strconv.Itoa(rpc.SchemaVersion)
	cmd, err := c.RemoteCommand(ctx, false, "doctor")
	if err != nil {
		return []doctorCheck{conn}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	cmd.Run() // doctor exits 1 when a check fails; its JSON says which
	var doc struct {
		Checks []doctorCheck `json:"checks"`
	}
	checks := []doctorCheck{conn}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &doc); err != nil {
		return append(checks, doctorCheck{Name: "remote.doctor", Host: host, Detail: "the remote doctor printed no report: " + clip(out.String(), 200)})
	}
	for _, rc := range doc.Checks {
		rc.Host = host
		checks = append(checks, rc)
	}
	return checks
}
