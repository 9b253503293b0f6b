package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
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
		if v := c.get(ctx, bin, nil); v != "0.171.0" {
			t.Fatalf("get #%d = %q", i, v)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("--version ran %d times for 3 lists of an unchanged binary", n)
	}
	write(`[ "$1" = --version ] && echo "codex-cli 0.172.10-alpha.1 (newer)"`)
	if v := c.get(ctx, bin, nil); v != "0.172.10-alpha.1" || count() != 2 {
		t.Fatalf("after replacing the binary: %q, %d runs", v, count())
	}
	write(`echo "usage: no version here"; exit 0`)
	if v := c.get(ctx, bin, nil); v != "" {
		t.Fatalf("a binary printing no version: %q", v)
	}
	if v := c.get(ctx, filepath.Join(dir, "missing"), nil); v != "" {
		t.Fatalf("a missing binary: %q", v)
	}
}

// The probe harness.list uses reads the pinned real CLIs' versions, and
// the fake harness answers --version as the real Claude Code does.
func TestVersionProbeRealCLIs(t *testing.T) {
	td := startTestDaemon(t)
	var c versionCache
	if v := c.get(context.Background(), td.env["DLGT_CLAUDE_BIN"], nil); v != harness.ClaudeTestedVersion {
		t.Fatalf("fake claude --version: %q", v)
	}
	for _, tc := range []struct {
		bin  func(*testing.T) string
		want string
	}{{e2eClaudeBin, harness.ClaudeTestedVersion}, {e2eCodexBin, harness.CodexTestedVersion}} {
		bin := tc.bin(t)
		if v := c.get(context.Background(), bin, nil); v != tc.want {
			t.Fatalf("%s --version: %q, want %q", bin, v, tc.want)
		}
	}
}

// A probe cut by its timeout (a Node CLI answering --version slowly under
// load) is not remembered as a failure: the next list probes again and
// learns the version.
func TestVersionCacheRetriesATimedOutProbe(t *testing.T) {
	dir := t.TempDir()
	bin, slow := filepath.Join(dir, "gemini"), filepath.Join(dir, "slow")
	script := "#!/bin/sh\nif [ -e " + slow + " ]; then exec sleep 30; fi\necho 0.61.0\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := versionCache{timeout: 300 * time.Millisecond}
	if v := c.get(context.Background(), bin, nil); v != "" {
		t.Fatalf("a probe past its timeout = %q", v)
	}
	os.Remove(slow)
	c.timeout = time.Minute
	if v := c.get(context.Background(), bin, nil); v != "0.61.0" {
		t.Fatalf("the probe after a timed-out one = %q, want it run again", v)
	}
}

// harness.list locates binaries as a create from the caller would: from
// the environment it sends (its PATH and DLGT_*_BIN), not the daemon's,
// and says whose environment it used.
func TestHarnessListCallerEnvironment(t *testing.T) {
	td := startTestDaemon(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "my-claude")
	data, err := os.ReadFile(td.env["DLGT_CLAUDE_BIN"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	var list rpc.HarnessListResult
	td.mustCall(rpc.MethodHarnessList, rpc.HarnessListParams{Harness: "claude",
		Environment: map[string]string{"PATH": dir, "DLGT_CLAUDE_BIN": bin}}, &list)
	if len(list.Harnesses) != 1 || list.Harnesses[0].Binary != bin || !list.Harnesses[0].Available ||
		list.Harnesses[0].Version != harness.ClaudeTestedVersion || list.Environment != rpc.HarnessEnvCaller {
		t.Fatalf("with the caller's environment: %+v", list)
	}
	td.mustCall(rpc.MethodHarnessList, rpc.HarnessListParams{Harness: "claude",
		Environment: map[string]string{"PATH": dir}}, &list)
	if len(list.Harnesses) != 1 || list.Harnesses[0].Available || list.Environment != rpc.HarnessEnvCaller {
		t.Fatalf("a caller without claude: %+v", list)
	}
	td.mustCall(rpc.MethodHarnessList, rpc.HarnessListParams{Harness: "claude"}, &list)
	if len(list.Harnesses) != 1 || list.Harnesses[0].Binary == bin || list.Environment != rpc.HarnessEnvDaemon {
		t.Fatalf("without an environment: %+v", list)
	}
}
