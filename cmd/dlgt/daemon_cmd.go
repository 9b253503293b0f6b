package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/doctor"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newDaemonCommand(e *env) *cobra.Command {
	var debug bool
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the dlgt daemon in the foreground",
		Long: `Run the dlgt daemon in the foreground, logging to stderr.

The daemon keeps its state in $DLGT_HOME (an absolute path; default
$XDG_STATE_HOME/dlgt, else ~/.local/state/dlgt) and listens on
$DLGT_HOME/run/<version>/dlgt.sock (DLGT_SOCKET overrides). SIGINT or SIGTERM
stop it gracefully: harness processes are stopped and the socket is removed.
Client commands start a daemon in the background when none is running; a
second daemon on the same home is refused (INVALID_ARGUMENT, naming the
running one's pid).

Harness hooks reach the daemon through its hook socket, by a short
forwarder process. With DLGT_HOOKS=http, Claude Code posts its hooks (all
but SessionStart) to a port on 127.0.0.1 instead, with a per-launch token:
no process per hook, at the cost of a TCP listener beside the sockets.`,
		Example: `  DLGT_HOME=$(mktemp -d) dlgt daemon
  dlgt daemon status
  dlgt daemon stop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := e.Paths()
			if err != nil {
				return err
			}
			level := slog.LevelInfo
			if debug {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			opts := daemon.Options{BinEnv: harness.BinEnv(harness.All(), e.Getenv)}
			if e.Exe != "" {
				opts.HookCommand = hookCommand(e.Exe)
			}
			if opts.HTTPHooks, err = doctor.HTTPHooks(e.Getenv("DLGT_HOOKS")); err != nil {
				return err
			}
			if e.Getenv("GOMAXPROCS") == "" {
				runtime.GOMAXPROCS(daemonProcs(runtime.GOMAXPROCS(0)))
			}
			return daemon.Run(cmd.Context(), daemon.Config{Paths: p, Logger: log, Options: opts})
		},
	}
	cmd.Flags().BoolVar(&debug, "debug", false, "log every request")
	cmd.AddCommand(newDaemonStatusCommand(e), newDaemonStopCommand(e))
	return cmd
}

// daemonProcs is how many goroutines the daemon runs at once (GOMAXPROCS):
// two more than the runtime's default, which is the CPUs the process may
// use (its affinity and, in a container, its CPU limit). A Session printing at full speed
// keeps its PTY pump and the row flusher running without ever blocking;
// with one slot per CPU both slots stay taken and a request arriving on
// another connection is noticed only when the Go scheduler next polls the
// network, up to 10 ms later. Spare slots leave one waiting in the network
// poller, so the request runs at once and the kernel shares the CPUs
// between the threads. Measured in docs/design.md ("Isolation: spare
// scheduler slots"). A GOMAXPROCS in the environment is left alone.
func daemonProcs(cpus int) int {
	return cpus + 2
}

func newDaemonStatusCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the running daemon's status (never starts one)",
		Long: `Print the status of this version's daemon as JSON; never starts one.

With a daemon running: {"ok":true,"running":true,...} and exit status 0.
With none (no socket, or nobody listening on it):
{"ok":true,"running":false,"socket":"..."} and exit status 0 as well:
branch on "running". A socket that cannot be reached for another reason
(permissions, an unusable state directory) is the usual ok:false failure.
-o text prints the same for a person.`,
		Example: `  dlgt daemon status`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := cli.TextOutput(cmd)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			c, err := e.Client()
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			st, sock, err := c.DaemonStatus(cmd.Context())
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			if st == nil {
				if text {
					_, err := fmt.Fprintf(cmd.OutOrStdout(), "not running (socket %s)\n", sock)
					return err
				}
				return cli.PrintOK(cmd, struct {
					Running bool   `json:"running"`
					Socket  string `json:"socket"`
				}{false, sock})
			}
			if text {
				return render.DaemonStatus(cmd.OutOrStdout(), *st)
			}
			return cli.PrintOK(cmd, struct {
				Running bool `json:"running"`
				rpc.DaemonStatus
			}{true, *st})
		},
	}
	cli.AddPretty(cmd)
	cli.AddOutputFlag(cmd)
	return cmd
}

func newDaemonStopCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the running daemon gracefully (its Sessions are stopped)",
		Long: `Ask the running daemon to stop, then wait (up to 60s) for its socket to
go: {"ok":true,"stopped":true}, or "stopped":false if the socket was still
there. With no daemon running it fails with RPC_UNAVAILABLE (exit status 1).
-o text prints the same for a person.`,
		Example: `  dlgt daemon stop`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := cli.TextOutput(cmd)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			c, err := e.Client()
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			// Wait until the socket is gone, so "stop; start" never races.
			stopped, err := c.DaemonStop(cmd.Context(), 60*time.Second)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			if text {
				msg := "stopped\n"
				if !stopped {
					p, _ := c.Paths()
					msg = fmt.Sprintf("asked to stop; its socket %s was still there after 60s\n", p.Socket)
				}
				_, err := io.WriteString(cmd.OutOrStdout(), msg)
				return err
			}
			return cli.PrintOK(cmd, struct {
				Stopped bool `json:"stopped"`
			}{stopped})
		},
	}
	cli.AddPretty(cmd)
	cli.AddOutputFlag(cmd)
	return cmd
}
