package daemon

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNothingImportsDaemon is the contract "nothing imports daemon": the
// daemon is the composition root, so no package's non-test code imports
// it except the programs under cmd/, and its parts (the packages under
// daemon/) are the daemon's: only the daemon, its other parts and cmd/
// import them. Tests may import anything. The graph is go list's.
func TestNothingImportsDaemon(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the imports: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/dlgt-dev/dlgt/...")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/dlgt-dev/dlgt/"
	const root = mod + "daemon"
	pkgs := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkgs++
		from := f[0]
		for _, to := range f[1:] {
			if bad := importsDaemon(from, to, mod, root); bad != "" {
				t.Errorf("%s imports %s: %s", from, to, bad)
			}
		}
	}
	if pkgs < 10 {
		t.Fatalf("go list listed %d packages: %q", pkgs, out)
	}
}

// importsDaemon says why from may not import to ("" when it may).
func importsDaemon(from, to, mod, root string) string {
	isPart := func(p string) bool { return strings.HasPrefix(p, root+"/") }
	switch {
	case strings.HasPrefix(from, mod+"cmd/"):
		return ""
	case from == mod+"harnesstest" || strings.HasPrefix(from, mod+"harnesstest/"):
		// The test kit is tests' code: TestProductDoesNotImport keeps it
		// out of the product (its testkit runs a daemon in-process).
		return ""
	case to == root:
		return "only cmd/ imports the daemon"
	case isPart(to) && from != root && !isPart(from):
		return "a daemon part is imported only by the daemon, its other parts and cmd/"
	}
	return ""
}

// TestImportsDaemonRule: the rule refuses what the contract forbids.
func TestImportsDaemonRule(t *testing.T) {
	const mod = "m/"
	const root = "m/daemon"
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"m/cmd/dlgt", "m/daemon", true},
		{"m/harnesstest/testkit", "m/daemon", true},
		{"m/harnesstestx", "m/daemon", false},
		{"m/cmd/dlgt", "m/daemon/fetchdoc", true},
		{"m/daemon", "m/daemon/fetchdoc", true},
		{"m/daemon/spare", "m/daemon/fetchdoc", true},
		{"m/client", "m/rpc", true},
		{"m/client", "m/daemon", false},
		{"m/internal/attach", "m/daemon", false},
		{"m/daemon/fetchdoc", "m/daemon", false},
		{"m/mcp", "m/daemon/fetchdoc", false},
		{"m/daemonx", "m/daemon/fetchdoc", false},
	} {
		if got := importsDaemon(tc.from, tc.to, mod, root) == ""; got != tc.ok {
			t.Errorf("%s -> %s allowed %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
}
