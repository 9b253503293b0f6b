package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	// cl is the command's daemon client (client()); clientMu guards it
	// (the --wait indicator connects concurrently).
	clientMu sync.Mutex
	cl       *client.Client
	// progress is the running --wait indicator, stopped before exit.
	progress *progress.Indicator
	// signals, when set, replaces the process's SIGINT/SIGTERM (tests).
	signals chan os.Signal

	// hostFlag is --host, profileHost the host of the profile a launch
	// used ("local": this machine).
	hostFlag, profileHost string
	// localOnly pins this machine whatever DLGT_HOST says (list --hosts).
	localOnly bool
	// argv is the command line as given (for running it on a host).
	argv []string
	// harnesses replaces the harness registry (tests); nil: harness.All().
	harnesses []harness.Descriptor
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

// signalCommands handle SIGINT/SIGTERM themselves and report how they
// ended: the foreground daemon shuts down, attach prints its end line.
var signalCommands = map[string]bool{"dlgt daemon": true, "dlgt session attach": true, "dlgt mcp": true}

func run(args []string, e *env) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := e.signals
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
	root := newRootCommand(e)
	root.SetArgs(args)
	e.argv = args
	defer e.cleanupRemote()
	cmd, err := root.ExecuteContextC(ctx)
	e.progress.Stop()
	if sig := caught.Load(); sig != 0 && (cmd == nil || !signalCommands[cmd.CommandPath()]) {
		return 128 + int(sig)
	}
	var es exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &es):
		return es.code
	}
	// Errors cobra raised itself (unknown commands and flags, wrong
	// arguments) and any a command returned without printing it: the
	// documented JSON failure line, and for a usage error the usage on
	// stderr. rpc keeps stdout for the protocol, so its line goes to stderr.
	if cmd == nil {
		cmd = root
	}
	out := e.stdout
	if cmd.CommandPath() == "dlgt rpc" {
		out = e.stderr
	}
	usage := isUsageError(err)
	re := asCLIError(err)
	if usage {
		re = rpc.Errorf(rpc.CodeInvalidArgument, "%v", err)
	}
	if wantsText(cmd) {
		render.Failure(e.stderr, re, commandRef(cmd))
	} else {
		body, _ := rpc.Marshal(struct {
			OK    bool       `json:"ok"`
			Error *rpc.Error `json:"error"`
		}{false, re})
		fmt.Fprintf(out, "%s\n", body)
	}
	if usage {
		fmt.Fprint(e.stderr, cmd.UsageString())
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

// cliUsageError marks an error of the command line itself (flags,
// arguments, an unknown command).
type cliUsageError struct{ err error }

func (u cliUsageError) Error() string { return u.err.Error() }
func (u cliUsageError) Unwrap() error { return u.err }

func isUsageError(err error) bool {
	var u cliUsageError
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
				var es exitStatus
				if errors.As(err, &es) {
					return err // already printed (jsonArgs)
				}
				return cliUsageError{err}
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

func newRootCommand(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "dlgt",
		Short:         "Delegate work from one coding agent to another",
		Long:          fmt.Sprintf(rootLong, harness.AndList(harness.DisplayNames(e.registry()))),
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
		newNotifyCommand(e),
		newScrollbackCommand(e),
		newTranscriptCommand(e),
		newModelsCommand(e),
		newHarnessesCommand(e),
		newMCPCommand(e),
		newACPCommand(e),
		newSkillCommand(e),
		newUICommand(e),
	)
	root.PersistentFlags().StringVar(&e.hostFlag, "host", "", "run against the daemon on another machine, through ssh: [user@]host[:port] (default $DLGT_HOST; see docs/remote.md)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("host") {
			if err := client.CheckHost(e.hostFlag); err != nil {
				return cliUsageError{err}
			}
		}
		e.noteSession(cmd, args)
		return nil
	}
	// Bad flags on a control command print the JSON failure (exit 1).
	root.SetFlagErrorFunc(flagErrorJSON)
	// Shell completion: cobra's default `completion` command, which
	// rejects a shell it does not know.
	root.CompletionOptions.DisableDefaultCmd = false
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return cliUsageError{fmt.Errorf("unknown shell %q: completion supports bash, zsh, fish and powershell", args[0])}
				}
				return cmd.Help()
			}
		}
	}
	// help for a command that does not exist is a usage error too.
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				target, rest, err := cmd.Root().Find(args)
				if err != nil || target == nil || len(rest) > 0 {
					return cliUsageError{fmt.Errorf("unknown help topic %q", strings.Join(args, " "))}
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
	e.registerCompletions(root)
	// Commands that are not RPC run on the host itself, through ssh.
	for path, tty := range map[string]bool{"dlgt daemon": false, "dlgt daemon status": false, "dlgt daemon stop": false, "dlgt session attach": true} {
		if c, _, err := root.Find(strings.Fields(path)[1:]); err == nil && c.RunE != nil {
			e.passRemote(c, tty)
		}
	}
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
	return attach.IsTerminal(f)
}

// paths resolves this version's daemon paths from the command's env.
func (e *env) paths() (statedir.Paths, error) {
	return statedir.ResolvePaths(e.getenv, statedir.Version)
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
