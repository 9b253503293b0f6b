package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/attach"
	"github.com/dlgt-dev/dlgt/internal/progress"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Env is what a command may read from the process: injected so tests can
// run commands without touching the real environment.
type Env struct {
	Getenv  func(string) string
	Environ func() []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Exe is the path of the dlgt executable (for auto-starting the daemon).
	Exe string
	// IsTerminal reports whether a stream is a terminal (nil: ask the
	// kernel; tests fake it).
	IsTerminal func(f any) bool

	// sessionRef is the SESSION the running command addresses, if any:
	// connect routes a provider-qualified id to the daemon that owns it.
	sessionRef string
	// cl is the command's daemon client (client()); clientMu guards it
	// (the --wait indicator connects concurrently).
	clientMu sync.Mutex
	cl       *client.Client
	// progress is the running --wait indicator, stopped before exit.
	progress *progress.Indicator
	// Signals, when set, replaces the process's SIGINT/SIGTERM (tests).
	Signals chan os.Signal

	// HostFlag is --host, profileHost the host of the profile a launch
	// used ("local": this machine).
	HostFlag, profileHost string
	// localOnly pins this machine whatever DLGT_HOST says (list --hosts).
	localOnly bool
	// argv is the command line as given (for running it on a host).
	argv []string
	// Harnesses replaces the harness registry (tests); nil: harness.All().
	Harnesses []harness.Descriptor
}

func NewEnv() *Env {
	exe, _ := os.Executable()
	return &Env{Getenv: os.Getenv, Environ: os.Environ, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Exe: exe}
}

// Exit statuses (docs/cli.md).
const (
	ExitOK            = 0
	ExitError         = 1
	ExitCancelTimeout = 3
	ExitBlocked       = 4
	ExitBusy          = 5
)

// exitError carries a command's exit status through cobra.
type ExitStatus struct{ Code int }

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// signalCommands handle SIGINT/SIGTERM themselves and report how they
// ended: the foreground daemon shuts down, attach prints its end line.
var signalCommands = map[string]bool{"dlgt daemon": true, "dlgt session attach": true, "dlgt mcp": true}

// Run runs the command line args on the dlgt command tree: this
// package's commands and extend's.
func Run(args []string, e *Env, extend Extend) int {
	return execute(NewRoot(e, extend), args, e)
}

// execute runs args on root: signals, exit statuses and the failure line.
func execute(root *cobra.Command, args []string, e *Env) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := e.Signals
	if sigs == nil {
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
	}
	// The first SIGINT or SIGTERM cancels the command's context; the
	// command then ends as the shell expects of an interrupted program:
	// exit status 128+signal and nothing (more) on stdout.
	var caught atomic.Int32
	go func() {
		select {
		case s := <-sigs:
			n := int32(syscall.SIGINT)
			if ss, ok := s.(syscall.Signal); ok {
				n = int32(ss)
			}
			caught.Store(n)
			cancel()
		case <-ctx.Done():
		}
	}()
	root.SetArgs(args)
	e.argv = args
	defer e.CleanupRemote()
	cmd, err := root.ExecuteContextC(ctx)
	e.progress.Stop()
	if sig := caught.Load(); sig != 0 && (cmd == nil || !signalCommands[cmd.CommandPath()]) {
		return 128 + int(sig)
	}
	var es ExitStatus
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &es):
		return es.Code
	}
	// Errors cobra raised itself (unknown commands and flags, wrong
	// arguments) and any a command returned without printing it: the
	// documented JSON failure line, and for a usage error the usage on
	// stderr. rpc keeps stdout for the protocol, so its line goes to stderr.
	if cmd == nil {
		cmd = root
	}
	out := e.Stdout
	if cmd.CommandPath() == "dlgt rpc" {
		out = e.Stderr
	}
	usage := isUsageError(err)
	re := asCLIError(err)
	if usage {
		re = rpc.Errorf(rpc.CodeInvalidArgument, "%v", err)
	}
	if wantsText(cmd) {
		render.Failure(e.Stderr, re, commandRef(cmd))
	} else {
		body, _ := rpc.Marshal(struct {
			OK    bool       `json:"ok"`
			Error *rpc.Error `json:"error"`
		}{false, re})
		fmt.Fprintf(out, "%s\n", body)
	}
	if usage {
		fmt.Fprint(e.Stderr, cmd.UsageString())
	}
	return errorCode(re)
}

// asCLIError is the wire error a failure is reported as: an unusable state
// directory is RPC_UNAVAILABLE (no daemon can serve from it), other untyped
// errors INTERNAL.
func asCLIError(err error) *rpc.Error {
	var sde *statedir.StateDirError
	if errors.As(err, &sde) {
		return &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: sde.Error()}
	}
	return rpc.AsError(err)
}

// UsageError marks an error of the command line itself (flags,
// arguments, an unknown command).
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

func isUsageError(err error) bool {
	var u UsageError
	if errors.As(err, &u) {
		return true
	}
	// cobra's own: `unknown command "x" for "dlgt"` (also from the
	// subcommand groups), and argument checks run before a command's own.
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag")
}

// markUsage makes every command's positional-argument check report a
// usage error, and an unknown subcommand of a group one too.
func markUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				var es ExitStatus
				if errors.As(err, &es) {
					return err // already printed (jsonArgs)
				}
				return UsageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markUsage(sub)
	}
}

// exitStatusHelp closes every command's help.
const exitStatusHelp = `
Exit statuses:
  0  success, including every fetch observation (timeout, blocked, a failed
     execution are reported inside the JSON document)
  1  usage, configuration, identity, launch, cursor or RPC error
  3  CANCEL_TIMEOUT     4  SESSION_BLOCKED     5  SESSION_BUSY
  130/143  interrupted by Ctrl-C/SIGTERM (nothing more on stdout)
`

// rootLong is the root command's help; %s is the registry's harnesses
// ("Claude Code, Codex and Gemini CLI").
const rootLong = `dlgt lets one coding agent delegate to another.

A local daemon hosts %s
sessions under PTYs, learns their lifecycle from structured hooks, and serves
newline-delimited JSON over a private Unix socket. Client commands start the
daemon when none is running.

Control commands print one JSON line ({"ok":true,...} or {"ok":false,...}),
or with -o text a form for people. The others print what they are for:
events one JSON line per event, notify one line for a person per
notification, transcript --raw the terminal's raw bytes,
skill the agent guide, completion a shell script, session list --watch a
live table; rpc --stdio and mcp speak their protocols on stdin and stdout,
and session attach hands over the terminal before its JSON line. A failure is the {"ok":false,...} line (on stderr where stdout
carries raw bytes or a protocol); the exit statuses are listed below.`

// Extend adds a binary's own commands to the tree NewRoot builds: the
// full dlgt adds the daemon, its control, mcp, acp, ui, attach and the
// rest (cmd/dlgt); dlgtc adds nothing (cmd/dlgtc).
type Extend func(e *Env, root *cobra.Command)

// ownCommand marks the commands this package builds: the ones dlgtc runs
// itself (Own).
const ownCommand = "dlgt.socket-only"

// NewRoot is the dlgt command tree: the commands that only talk to the
// daemon through the client and print (this package's), then extend's.
func NewRoot(e *Env, extend Extend) *cobra.Command {
	root := &cobra.Command{
		Use:           "dlgt",
		Short:         "Delegate work from one coding agent to another",
		Long:          fmt.Sprintf(rootLong, harness.AndList(harness.DisplayNames(e.Registry()))),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(e.Stdin)
	root.SetOut(e.Stdout)
	root.SetErr(e.Stderr)
	// Every command's help ends with the exit statuses.
	root.SetUsageTemplate(root.UsageTemplate() + exitStatusHelp)
	root.AddCommand(
		newVersionCommand(e),
		newProfilesCommand(e),
		newSessionCommand(e),
		newEventsCommand(e),
		newNotifyCommand(e),
		newScrollbackCommand(e),
		newTranscriptCommand(e),
		newModelsCommand(e),
		newHarnessesCommand(e),
	)
	markOwn(root)
	if extend != nil {
		extend(e, root)
	}
	root.PersistentFlags().StringVar(&e.HostFlag, "host", "", "run against the daemon on another machine, through ssh: [user@]host[:port] (default $DLGT_HOST; see docs/remote.md)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("host") {
			if err := client.CheckHost(e.HostFlag); err != nil {
				return UsageError{err}
			}
		}
		e.noteSession(cmd, args)
		return nil
	}
	// Bad flags on a control command print the JSON failure (exit 1).
	root.SetFlagErrorFunc(flagErrorJSON)
	// help for a command that does not exist is a usage error too.
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				target, rest, err := cmd.Root().Find(args)
				if err != nil || target == nil || len(rest) > 0 {
					return UsageError{fmt.Errorf("unknown help topic %q", strings.Join(args, " "))}
				}
				target.InitDefaultHelpFlag()
				return target.Help()
			}
			c.Run = nil
		}
	}
	// dlgt --version prints what dlgt version prints.
	root.Version = statedir.Version
	ver, _ := json.Marshal(struct {
		OK      bool   `json:"ok"`
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}{true, statedir.Version, statedir.CommitID()})
	root.SetVersionTemplate(string(ver) + "\n")
	markUsage(root)
	return root
}

// markOwn marks every runnable command under c as this package's.
func markOwn(c *cobra.Command) {
	if c.Runnable() && c.HasParent() && !c.HasSubCommands() {
		c.Annotations = map[string]string{ownCommand: "true"}
	}
	for _, sub := range c.Commands() {
		markOwn(sub)
	}
}

// Own reports whether the socket-only tree root runs args itself: a
// command this package built (not a group, whose help lists the full
// binary's commands too), or --version alone. Anything else (help,
// completion, the full binary's commands, an unknown command) is the full
// dlgt's to run.
func Own(root *cobra.Command, args []string) bool {
	cmd, _, err := root.Find(args)
	switch {
	case err != nil:
		return false
	case cmd == root:
		return slices.ContainsFunc(args, func(a string) bool { return a == "--version" || a == "-v" }) &&
			!slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" })
	}
	return cmd.Annotations[ownCommand] != ""
}

// RunOwn runs args when the socket-only tree holds the command (Own);
// ran false means nothing ran and nothing was printed.
func RunOwn(args []string, e *Env) (code int, ran bool) {
	root := NewRoot(e, nil)
	if !Own(root, args) {
		return 0, false
	}
	return execute(root, args, e), true
}

// SessionArgCommands take SESSION as their first argument.
var SessionArgCommands = map[string]bool{
	"dlgt session send": true, "dlgt session fetch": true, "dlgt session read": true,
	"dlgt session cancel": true, "dlgt session stop": true, "dlgt session restart": true,
	"dlgt session attach": true, "dlgt scrollback": true, "dlgt transcript": true,
}

// noteSession records the Session a command addresses (for routing to the
// daemon that owns it) and starts the --wait indicator of a fetch.
func (e *Env) noteSession(cmd *cobra.Command, args []string) {
	path := cmd.CommandPath()
	switch {
	case SessionArgCommands[path] && len(args) > 0:
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

// Terminal reports whether f (a stream of env) is a Terminal.
func (e *Env) Terminal(f any) bool {
	if e.IsTerminal != nil {
		return e.IsTerminal(f)
	}
	return attach.IsTerminal(f)
}

// Paths resolves this version's daemon Paths from the command's env.
func (e *Env) Paths() (statedir.Paths, error) {
	return statedir.ResolvePaths(e.Getenv, statedir.Version)
}

// errorCode maps a wire error code to the CLI's exit status.
func errorCode(err error) int {
	var re *rpc.Error
	if errors.As(err, &re) {
		switch re.Code {
		case rpc.CodeCancelTimeout:
			return ExitCancelTimeout
		case rpc.CodeSessionBlocked:
			return ExitBlocked
		case rpc.CodeSessionBusy:
			return ExitBusy
		}
	}
	return ExitError
}
