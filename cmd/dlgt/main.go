package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/internal/cli"
)

func main() {
	// The hook forwarder runs for every harness hook: it skips the CLI
	// (no command tree, no configuration). See hookfwd.
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		os.Exit(hookfwd.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], cli.NewEnv()))
}

// env is what a command may read from the process (package cli).
type env = cli.Env

// fullEnv carries the methods of this binary's own commands.
type fullEnv struct{ *env }

// run runs a command line on the full tree.
func run(args []string, e *env) int { return cli.Run(args, e, extend) }

// newRootCommand is the full command tree.
func newRootCommand(e *env) *cobra.Command { return cli.NewRoot(e, extend) }

// extend adds what only the full dlgt runs (package cli holds the
// socket-only commands, which dlgtc runs too): the daemon and its
// control, rpc, hook, doctor, session attach, mcp, acp, skill, ui and
// shell completion.
func extend(e *env, root *cobra.Command) {
	root.AddCommand(newDaemonCommand(e), newRPCCommand(e), newHookCommand(e), newDoctorCommand(e),
		newMCPCommand(e), newACPCommand(e), newSkillCommand(e), newUICommand(e))
	if session, _, err := root.Find([]string{"session"}); err == nil {
		session.AddCommand(newSessionAttachCommand(e))
	}
	// Shell completion: cobra's default `completion` command, which
	// rejects a shell it does not know.
	root.CompletionOptions.DisableDefaultCmd = false
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return cli.UsageError{Err: fmt.Errorf("unknown shell %q: completion supports bash, zsh, fish and powershell", args[0])}
				}
				return cmd.Help()
			}
		}
	}
	fullEnv{e}.registerCompletions(root)
	// Commands that are not RPC run on the host itself, through ssh.
	for path, tty := range map[string]bool{"dlgt daemon": false, "dlgt daemon status": false, "dlgt daemon stop": false, "dlgt session attach": true} {
		if c, _, err := root.Find(strings.Fields(path)[1:]); err == nil && c.RunE != nil {
			e.PassRemote(c, tty)
		}
	}
}
