package harnesstest

import (
	"os/exec"
	"strings"
	"testing"
)

const prefix = "github.com/dlgt-dev/dlgt/harnesstest"

func isDouble(pkg string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// goList runs `go list` from this package's directory (inside the module)
// and returns its output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list package dependencies: %v", err)
	}
	out, err := exec.Command(gobin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestProductDoesNotImport: the dlgt and dlgtc binaries link none of the test doubles,
// and no product package imports them outside its _test.go files.
func TestProductDoesNotImport(t *testing.T) {
	deps := goList(t, "-deps", "github.com/dlgt-dev/dlgt/cmd/dlgt")
	if len(deps) < 10 {
		t.Fatalf("go list -deps github.com/dlgt-dev/dlgt/cmd/dlgt listed only %d packages: %q", len(deps), deps)
	}
	sawDaemon := false
	for _, p := range deps {
		if isDouble(p) {
			t.Errorf("github.com/dlgt-dev/dlgt/cmd/dlgt depends on the test double %s", p)
		}
		sawDaemon = sawDaemon || p == "github.com/dlgt-dev/dlgt/daemon"
	}
	if !sawDaemon {
		t.Fatalf("go list -deps github.com/dlgt-dev/dlgt/cmd/dlgt does not list github.com/dlgt-dev/dlgt/daemon: %q", deps)
	}
	// Nor does dlgtc, the socket-only commands alone.
	for _, p := range goList(t, "-deps", "github.com/dlgt-dev/dlgt/cmd/dlgtc") {
		if isDouble(p) {
			t.Errorf("github.com/dlgt-dev/dlgt/cmd/dlgtc depends on the test double %s", p)
		}
	}

	// Every package of the module, with its non-test imports.
	lines := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/dlgt-dev/dlgt/...")
	for _, l := range lines {
		fields := strings.Fields(l)
		if len(fields) == 0 || isDouble(fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if isDouble(imp) {
				t.Errorf("product package %s imports the test double %s", fields[0], imp)
			}
		}
	}
}
