package main

import (
	"os"

	"github.com/dlgt-dev/dlgt/hookfwd"
)

func main() {
	// The hook forwarder runs for every harness hook: it skips the CLI
	// (no command tree, no configuration). See hookfwd.
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		os.Exit(hookfwd.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], newEnv()))
}
