package main

import (
	"github.com/spf13/cobra"

	"dlgt/harness"
)

// newHookCommand is the hidden forwarder that injected harness hooks run:
// `dlgt hook --socket S --launch ID EVENT` with the hook's JSON on stdin.
// It prints nothing and always exits 0, so a daemon problem never breaks
// the harness; failures go to stderr (the harness's hook log).
func newHookCommand(e *env) *cobra.Command {
	var socket, launch string
	cmd := &cobra.Command{
		Use:    "hook --socket PATH --launch ID EVENT",
		Short:  "Forward a harness hook to the daemon (internal)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := harness.ForwardHook(cmd.Context(), socket, launch, args[0], cmd.InOrStdin()); err != nil {
				cmd.PrintErrln("dlgt hook:", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "daemon socket")
	cmd.Flags().StringVar(&launch, "launch", "", "launch id")
	cmd.MarkFlagRequired("socket")
	cmd.MarkFlagRequired("launch")
	return cmd
}
