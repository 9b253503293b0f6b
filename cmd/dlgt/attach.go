package main

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/attach"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

const attachLong = `Attach this terminal to a Session's harness TUI.

The live screen is repainted, then everything the harness prints appears
here and (unless --read-only) everything typed goes to the harness: answer
a permission prompt, steer a turn, type a prompt of your own. Press Ctrl-]
to detach: the harness keeps running and this terminal is restored.

Writing takes the Session's exclusive input lease: while it is held,
session send answers SESSION_ATTACHED, and a second writer gets
ALREADY_ATTACHED. The lease ends with Ctrl-], when this command exits for
any reason, or when its connection drops. --read-only watches without the
lease; any number of observers may watch beside the writer. The harness
PTY takes this terminal's size while a writer is attached and gets its
previous size back on detach.

Needs a terminal on stdin and stdout; otherwise it prints
{"ok":false,"error":{"code":"INVALID_ARGUMENT",...}} and exits 1. After
detaching it prints {"ok":true,"session_id":...,"end":"detached"} ("exited"
when the harness process ended, "interrupted" on a signal).`

func newSessionAttachCommand(e *env) *cobra.Command {
	var readOnly, noEndLine bool
	cmd := &cobra.Command{
		Use:   "attach SESSION [--read-only]",
		Short: "Take over a Session's terminal interactively (detach with Ctrl-])",
		Long:  attachLong,
		Example: `  dlgt session attach review
  dlgt session attach review --read-only`,
		Args: cli.JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if noEndLine {
				// Nothing is left on the terminal: a failure goes to
				// stderr, for the program that ran this one.
				cmd.SetOut(cmd.ErrOrStderr())
			}
			return fullEnv{e}.attach(cmd, args[0], readOnly, noEndLine)
		},
	}
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "watch without taking the input lease (keys other than Ctrl-] are ignored)")
	// dlgt ui runs attach with it: the line would be left on the shell's
	// screen under the UI's, to be seen after the UI quits.
	cmd.Flags().BoolVar(&noEndLine, "no-end-line", false, "print nothing after detaching, and a failure on stderr")
	cmd.Flags().MarkHidden("no-end-line")
	cli.AddPretty(cmd)
	return cmd
}

func (e fullEnv) attach(cmd *cobra.Command, ref string, readOnly, noEndLine bool) error {
	in, out := e.Stdin, e.Stdout
	if !e.Terminal(in) || !e.Terminal(out) {
		return cli.PrintFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "attach needs a terminal"))
	}
	c, err := e.Client()
	if err != nil {
		return cli.PrintFailure(cmd, err)
	}
	inFd, _ := attach.Fd(in)
	end, err := attach.Run(cmd.Context(), attach.Options{Client: c, Session: ref, In: in, InFd: inFd, Out: out, ReadOnly: readOnly,
		Size: func() (int, int, bool) { return attach.Size(out) }})
	if err != nil {
		return cli.PrintFailure(cmd, err)
	}
	if noEndLine {
		return nil
	}
	return cli.PrintOK(cmd, end)
}
