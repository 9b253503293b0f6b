package pinned

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
)

// TestEveryHarnessPinned: each registered harness has its install place,
// and nothing else has one.
func TestEveryHarnessPinned(t *testing.T) {
	for _, d := range harness.All() {
		if len(under[d.Name]) == 0 {
			t.Errorf("harness %q has no install place in under (pinned.go)", d.Name)
		}
	}
	if len(under) != len(harness.All()) {
		t.Errorf("%d install places for %d registered harnesses", len(under), len(harness.All()))
	}
}

func TestPath(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The test runs in harnesstest/pinned, two below the root.
	if wd, _ := os.Getwd(); root != filepath.Dir(filepath.Dir(wd)) {
		t.Fatalf("module root %s, working directory %s", root, wd)
	}
	t.Setenv("DLGT_CODEX_BIN", "")
	p, err := Path("codex")
	want := filepath.Join(root, ".cache", "harnesses", "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	if err != nil || p != want {
		t.Fatalf("Path(codex) = %q, %v; want %q", p, err, want)
	}
	t.Setenv("DLGT_CODEX_BIN", "/opt/codex")
	if p, err := Path("codex"); err != nil || p != "/opt/codex" {
		t.Fatalf("Path(codex) with DLGT_CODEX_BIN = %q, %v", p, err)
	}
	if _, err := Path("nosuch"); err == nil || !strings.Contains(err.Error(), "unknown harness") {
		t.Fatalf("Path(nosuch) = %v, want an unknown harness error", err)
	}
}

// skipRecorder is a TB that records a skip.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Skipf(format string, args ...any) {
	r.skipped = format
}

func TestBinSkipsAbsent(t *testing.T) {
	t.Setenv("DLGT_GEMINI_BIN", filepath.Join(t.TempDir(), "absent"))
	r := &skipRecorder{TB: t}
	Bin(r, "gemini")
	if r.skipped == "" {
		t.Fatal("Bin did not skip for an absent CLI")
	}
	dir := t.TempDir()
	t.Setenv("DLGT_GEMINI_BIN", dir)
	r = &skipRecorder{TB: t}
	Bin(r, "gemini")
	if r.skipped == "" {
		t.Fatal("Bin did not skip for a directory")
	}
	exe := filepath.Join(dir, "gemini")
	if err := os.WriteFile(exe, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DLGT_GEMINI_BIN", exe)
	r = &skipRecorder{TB: t}
	if p := Bin(r, "gemini"); p != exe || r.skipped != "" {
		t.Fatalf("Bin = %q (skipped %q), want %q", p, r.skipped, exe)
	}
}
