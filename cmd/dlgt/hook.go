package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/hookfwd"
)

// newHookCommand is the hidden forwarder that injected harness hooks run:
// `dlgt hook --socket S --launch ID EVENT` with the hook's JSON on stdin.
// main runs it before the command tree is built (see main.go); this entry
// keeps it in the tree for help and for tests that call run. It prints
// nothing and always exits 0, so a daemon problem never breaks the
// harness; failures go to stderr (the harness's hook log).
func newHookCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:                hookfwd.Usage,
		Short:              "Forward a harness hook to the daemon (internal)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			hookfwd.Main(args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			return nil
		},
	}
}

// hookBinary is the stand-alone forwarder, built from cmd/dlgt-hook.
const hookBinary = "dlgt-hook"

// hookCommand is the argv prefix the daemon injects into harness hooks:
// dlgt-hook when it sits beside the dlgt executable (a hook then costs
// only the start of a small process), else `dlgt hook`.
func hookCommand(exe string) []string {
	fwd := filepath.Join(filepath.Dir(exe), hookBinary)
	if fi, err := os.Stat(fwd); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return []string{fwd}
	}
	return []string{exe, "hook"}
}
