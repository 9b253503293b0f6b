// Command dlgtc is dlgt's socket-only commands in a small binary: the
// commands that only talk to the daemon through the client and print
// (session create, send, fetch, read, list, cancel, stop, respond, ...,
// events, version: package internal/cli), with the same flags, output
// bytes, exit statuses and help as dlgt's. It links neither the daemon
// nor the MCP, ACP or terminal-UI libraries, so it starts in about 70 %
// of dlgt's CPU time (docs/design.md, "A second binary for the socket-only
// commands"). Any other command line it hands to the full dlgt beside it
// (else on PATH), which also is the daemon it autostarts.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

func main() {
	args := os.Args[1:]
	self, _ := os.Executable()
	full := fullDlgt(self, exec.LookPath)
	e := cli.NewEnv()
	// An autostart runs the full dlgt's daemon.
	e.Exe = full
	if code, ran := cli.RunOwn(args, e); ran {
		os.Exit(code)
	}
	if full == "" {
		os.Exit(missingFull(args))
	}
	err := syscall.Exec(full, append([]string{full}, args...), os.Environ())
	body, _ := rpc.Marshal(struct {
		OK    bool       `json:"ok"`
		Error *rpc.Error `json:"error"`
	}{false, rpc.Errorf(rpc.CodeInternal, "running %s: %v", full, err)})
	fmt.Printf("%s\n", body)
	os.Exit(1)
}

// fullName is the full binary's name, beside which dlgtc is installed.
const fullName = "dlgt"

// fullDlgt is the full dlgt: the one beside self (this executable), as
// the daemon finds dlgt-hook beside dlgt, else the first on PATH; "" when
// there is none.
func fullDlgt(self string, lookPath func(string) (string, error)) string {
	if self != "" {
		beside := filepath.Join(filepath.Dir(self), fullName)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside
		}
	}
	if p, err := lookPath(fullName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

// missingFull reports a command dlgtc does not run itself when no full
// dlgt is found: the JSON failure line, exit status 1.
func missingFull(args []string) int {
	body, _ := rpc.Marshal(struct {
		OK    bool       `json:"ok"`
		Error *rpc.Error `json:"error"`
	}{false, rpc.Errorf(rpc.CodeInvalidArgument, "dlgtc runs only the commands that talk to the daemon; %q needs the full dlgt, found neither beside dlgtc nor on PATH", args)})
	fmt.Printf("%s\n", body)
	return cli.ExitError
}
