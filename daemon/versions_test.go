package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dlgt-dev/dlgt/daemon/versions"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The probe harness.list uses reads the pinned real CLIs' versions, and
// the fake harness answers --version as the real Claude Code does.
func TestVersionProbeRealCLIs(t *testing.T) {
	td := startTestDaemon(t)
	var c versions.Cache
	if v := c.Get(context.Background(), td.env["DLGT_CLAUDE_BIN"], nil); v != harness.ClaudeTestedVersion {
		t.Fatalf("fake claude --version: %q", v)
	}
	for _, tc := range []struct {
		bin  func(*testing.T) string
		want string
	}{{e2eClaudeBin, harness.ClaudeTestedVersion}, {e2eCodexBin, harness.CodexTestedVersion}} {
		bin := tc.bin(t)
		if v := c.Get(context.Background(), bin, nil); v != tc.want {
			t.Fatalf("%s --version: %q, want %q", bin, v, tc.want)
		}
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
