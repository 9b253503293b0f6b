// Command dlgt-hook is the harness hook forwarder on its own: the same as
// `dlgt hook`, in a binary that links nothing else, so a hook costs only
// the start of a small process. The daemon injects it when it sits beside
// the dlgt executable (see docs/design.md, "Hook forwarder").
package main

import (
	"os"

	"github.com/dlgt-dev/dlgt/hookfwd"
)

func main() {
	os.Exit(hookfwd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
