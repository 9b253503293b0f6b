package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dlgt/daemon"
	"dlgt/rpc"
)

// env is what a command may read from the process: injected so tests can
// run commands without touching the real environment.
type env struct {
	getenv  func(string) string
	environ func() []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	// exe is the path of the dlgt executable (for auto-starting the daemon).
	exe string
}

func newEnv() *env {
	exe, _ := os.Executable()
	return &env{getenv: os.Getenv, environ: os.Environ, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, exe: exe}
}

// Exit statuses (docs/cli.md).
const (
	exitOK            = 0
	exitError         = 1
	exitCancelTimeout = 3
	exitBlocked       = 4
	exitBusy          = 5
)

// exitError carries a command's exit status through cobra.
type exitStatus struct{ code int }

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func run(args []string, e *env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCommand(e)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var es exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &es):
		return es.code
	default:
		fmt.Fprintln(e.stderr, "dlgt:", err)
		return exitError
	}
}

const rootLong = `dlgt lets one coding agent delegate to another.

A local daemon hosts Claude Code and Codex sessions under PTYs, learns their
lifecycle from structured hooks, and serves newline-delimited JSON over a
private Unix socket. Client commands start the daemon when none is running.

Exit statuses: 0 success (including every fetch observation), 1 usage,
configuration, identity, launch, cursor or RPC error, 3 CANCEL_TIMEOUT,
4 SESSION_BLOCKED, 5 SESSION_BUSY.`

func newRootCommand(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "dlgt",
		Short:         "Delegate work from one coding agent to another",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.AddCommand(
		newVersionCommand(e),
		newDaemonCommand(e),
		newRPCCommand(e),
		newProfilesCommand(e),
		newHookCommand(e),
		newSessionCommand(e),
		newEventsCommand(e),
		newScrollbackCommand(e),
		newTranscriptCommand(e),
		newModelsCommand(e),
		newHarnessesCommand(e),
	)
	// Bad flags on a control command print the JSON failure (exit 1).
	root.SetFlagErrorFunc(flagErrorJSON)
	// Shell completion: cobra's default `completion` command.
	root.CompletionOptions.DisableDefaultCmd = false
	return root
}

// paths resolves this version's daemon paths from the command's env.
func (e *env) paths() (daemon.Paths, error) {
	return daemon.ResolvePaths(e.getenv, daemon.Version)
}

// errorCode maps a wire error code to the CLI's exit status.
func errorCode(err error) int {
	var re *rpc.Error
	if errors.As(err, &re) {
		switch re.Code {
		case rpc.CodeCancelTimeout:
			return exitCancelTimeout
		case rpc.CodeSessionBlocked:
			return exitBlocked
		case rpc.CodeSessionBusy:
			return exitBusy
		}
	}
	return exitError
}
