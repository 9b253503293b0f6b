package main

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are what dlgtc exists not to link: the daemon and what only it
// needs (store and bbolt, the PTY, the terminal emulators), the front-ends
// that are not socket-only commands (mcp and the MCP SDK, acp and its SDK,
// the terminal UI and bubbletea/charm), and the command files of the full
// dlgt.
var heavy = []string{
	"github.com/dlgt-dev/dlgt/daemon",
	"github.com/dlgt-dev/dlgt/store",
	"github.com/dlgt-dev/dlgt/vt",
	"github.com/dlgt-dev/dlgt/pty",
	"github.com/dlgt-dev/dlgt/mcp",
	"github.com/dlgt-dev/dlgt/acp",
	"github.com/dlgt-dev/dlgt/internal/ui",
	"github.com/dlgt-dev/dlgt/cmd/dlgt",
	"go.etcd.io/bbolt",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/coder/acp-go-sdk",
	"charm.land",
	"github.com/charmbracelet",
	"github.com/creack/pty",
	"github.com/hinshun/vt10x",
	"encoding/gob",
	"net/http",
}

// maxDeps bounds how many packages dlgtc links (151 when written; dlgt
// links 303): a new dependency that doubles its start shows here.
const maxDeps = 180

// TestDependenciesSmall: dlgtc and the package of its commands link
// none of the heavy packages, and few packages at all.
func TestDependenciesSmall(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list package dependencies: %v", err)
	}
	for _, pkg := range []string{"github.com/dlgt-dev/dlgt/cmd/dlgtc", "github.com/dlgt-dev/dlgt/internal/cli"} {
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
		if len(deps) > maxDeps {
			t.Errorf("%s links %d packages, more than %d", pkg, len(deps), maxDeps)
		}
		for _, d := range deps {
			for _, h := range heavy {
				if d == h || strings.HasPrefix(d, h+"/") || (strings.HasSuffix(h, ".land") && strings.HasPrefix(d, h)) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}
