package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
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
	// isTerminal reports whether a stream is a terminal (nil: ask the
	// kernel; tests fake it).
	isTerminal func(f any) bool

	// sessionRef is the SESSION the running command addresses, if any:
	// connect routes a provider-qualified id to the daemon that owns it.
	sessionRef string
	// routed caches that routing decision ("" = this version's socket);
	// routeMu guards it (the --wait indicator connects concurrently).
	routeMu sync.Mutex
	routed  *string
	// progress is the running --wait indicator, stopped before exit.
	progress *progress
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
	e.progress.stop()
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

// exitStatusHelp closes every command's help.
const exitStatusHelp = `
Exit statuses:
  0  success, including every fetch observation (timeout, blocked, a failed
     execution are reported inside the JSON document)
  1  usage, configuration, identity, launch, cursor or RPC error
  3  CANCEL_TIMEOUT     4  SESSION_BLOCKED     5  SESSION_BUSY
`

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
	// Every command's help ends with the exit statuses.
	root.SetUsageTemplate(root.UsageTemplate() + exitStatusHelp)
	session := newSessionCommand(e)
	session.AddCommand(newSessionAttachCommand(e))
	root.AddCommand(
		newVersionCommand(e),
		newDaemonCommand(e),
		newRPCCommand(e),
		newProfilesCommand(e),
		newHookCommand(e),
		session,
		newDoctorCommand(e),
		newEventsCommand(e),
		newScrollbackCommand(e),
		newTranscriptCommand(e),
		newModelsCommand(e),
		newHarnessesCommand(e),
		newMCPCommand(e),
	)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		e.noteSession(cmd, args)
		return nil
	}
	// Bad flags on a control command print the JSON failure (exit 1).
	root.SetFlagErrorFunc(flagErrorJSON)
	// Shell completion: cobra's default `completion` command.
	root.CompletionOptions.DisableDefaultCmd = false
	return root
}

// sessionArgCommands take SESSION as their first argument.
var sessionArgCommands = map[string]bool{
	"dlgt session send": true, "dlgt session fetch": true, "dlgt session read": true,
	"dlgt session cancel": true, "dlgt session stop": true, "dlgt session restart": true,
	"dlgt session attach": true, "dlgt scrollback": true, "dlgt transcript": true,
}

// noteSession records the Session a command addresses (for routing to the
// daemon that owns it) and starts the --wait indicator of a fetch.
func (e *env) noteSession(cmd *cobra.Command, args []string) {
	path := cmd.CommandPath()
	switch {
	case sessionArgCommands[path] && len(args) > 0:
		e.sessionRef = args[0]
	case path == "dlgt events":
		e.sessionRef, _ = cmd.Flags().GetString("session")
	}
	if path == "dlgt session fetch" {
		if wait, err := cmd.Flags().GetDuration("wait"); err == nil && wait > 0 {
			e.startFetchProgress(cmd, wait)
		}
	}
}

// terminal reports whether f (a stream of env) is a terminal.
func (e *env) terminal(f any) bool {
	if e.isTerminal != nil {
		return e.isTerminal(f)
	}
	return fileIsTerminal(f)
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
