package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
)

// The version cache runs a binary's --version once, again only after the
// binary was replaced, and reports "" for one that prints no version.
func TestVersionCache(t *testing.T) {
	dir := t.TempDir()
	bin, runs := filepath.Join(dir, "codex"), filepath.Join(dir, "runs")
	write := func(body string) {
		t.Helper()
		script := "#!/bin/sh\necho run >> " + runs + "\n" + body + "\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run\n")
	}
	var c versionCache
	ctx := context.Background()
	write(`[ "$1" = --version ] && echo "codex-cli 0.171.0"`)
	for i := 0; i < 3; i++ {
		if v := c.get(ctx, bin); v != "0.171.0" {
			t.Fatalf("get #%d = %q", i, v)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("--version ran %d times for 3 lists of an unchanged binary", n)
	}
	write(`[ "$1" = --version ] && echo "codex-cli 0.172.10-alpha.1 (newer)"`)
	if v := c.get(ctx, bin); v != "0.172.10-alpha.1" || count() != 2 {
		t.Fatalf("after replacing the binary: %q, %d runs", v, count())
	}
	write(`echo "usage: no version here"; exit 0`)
	if v := c.get(ctx, bin); v != "" {
		t.Fatalf("a binary printing no version: %q", v)
	}
	if v := c.get(ctx, filepath.Join(dir, "missing")); v != "" {
		t.Fatalf("a missing binary: %q", v)
	}
}

// The probe harness.list uses reads the pinned real CLIs' versions, and
// the fake harness answers --version as the real Claude Code does.
func TestVersionProbeRealCLIs(t *testing.T) {
	td := startTestDaemon(t)
	var c versionCache
	if v := c.get(context.Background(), td.env["DLGT_CLAUDE_BIN"]); v != harness.ClaudeTestedVersion {
		t.Fatalf("fake claude --version: %q", v)
	}
	for _, tc := range []struct {
		bin  func(*testing.T) string
		want string
	}{{e2eClaudeBin, harness.ClaudeTestedVersion}, {e2eCodexBin, harness.CodexTestedVersion}} {
		bin := tc.bin(t)
		if v := c.get(context.Background(), bin); v != tc.want {
			t.Fatalf("%s --version: %q, want %q", bin, v, tc.want)
		}
	}
}
