// Package pinned finds the harness CLIs .ci/install-harnesses pins, for
// the tests that run them: the binary a harness's variable names
// (DLGT_CLAUDE_BIN), else the one under the module root's
// .cache/harnesses. Like every package under harnesstest, only _test.go
// files (and the test tools beside them) may import it.
package pinned

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dlgt-dev/dlgt/harness"
)

// under is where .ci/install-harnesses puts each registered harness's
// CLI, below .cache/harnesses (TestEveryHarnessPinned: one per harness).
var under = map[string][]string{
	"claude":  {"node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"},
	"codex":   {"node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex"},
	"gemini":  {"gemini", "node_modules", ".bin", "gemini"},
	"copilot": {"copilot", "node_modules", "@github", "copilot-linux-x64", "copilot"},
}

// ModuleRoot is the directory holding go.mod at or above the working
// directory (a test's is its package's).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Path is the CLI of the registered harness name: its variable's value
// when set, else its pinned place under ModuleRoot. It does not look at
// the file.
func Path(name string) (string, error) {
	d, err := harness.Lookup(name)
	if err != nil {
		return "", err
	}
	if p := os.Getenv(d.BinEnv); p != "" {
		return p, nil
	}
	rel, ok := under[name]
	if !ok {
		return "", fmt.Errorf("pinned: no install place known for harness %q", name)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{root, ".cache", "harnesses"}, rel...)...), nil
}

// TB is the part of testing.TB that Bin uses (this package leaves the
// testing package out of the tools that import it).
type TB interface {
	Helper()
	Fatal(args ...any)
	Skipf(format string, args ...any)
}

// Bin is Path for a test: it fails t on an unknown harness or no module
// root, and skips t when the CLI is not installed there.
func Bin(t TB, name string) string {
	t.Helper()
	p, err := Path(name)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		d, _ := harness.Lookup(name)
		t.Skipf("%s not installed (%s): run .ci/install-harnesses or set %s", d.DisplayName, p, d.BinEnv)
	}
	return p
}
