// Command dlgt runs the dlgt daemon and is its command-line client: it lets
// one coding agent delegate work to another (Claude Code, Codex) running
// under a PTY that the daemon hosts.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], newEnv()))
}
