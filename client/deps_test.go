package client

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are the packages a program that only talks to a daemon must not
// link: the daemon itself and what only it needs (the store and its bbolt
// file, the PTY, the terminal emulator).
var heavy = []string{
	"github.com/dlgt-dev/dlgt/daemon",
	"github.com/dlgt-dev/dlgt/store",
	"github.com/dlgt-dev/dlgt/vt",
	"github.com/dlgt-dev/dlgt/pty",
	"go.etcd.io/bbolt",
}

// TestClientLinksNoDaemon: importing the client (and the front-end
// packages built on it) pulls in none of the daemon's packages; paths,
// the state directory and the version come from statedir, the wire
// shapes from rpc.
func TestClientLinksNoDaemon(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list package dependencies: %v", err)
	}
	for _, pkg := range []string{
		"github.com/dlgt-dev/dlgt/client",
		"github.com/dlgt-dev/dlgt/mcp",
		"github.com/dlgt-dev/dlgt/internal/attach",
		"github.com/dlgt-dev/dlgt/internal/doctor",
	} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 || deps[len(deps)-1] != pkg {
			t.Fatalf("go list -deps %s listed %d packages, not ending with it: %q", pkg, len(deps), deps)
		}
		for _, d := range deps {
			for _, h := range heavy {
				if d == h || strings.HasPrefix(d, h+"/") {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}
