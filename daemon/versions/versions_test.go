package versions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	var c Cache
	ctx := context.Background()
	write(`[ "$1" = --version ] && echo "codex-cli 0.171.0"`)
	for i := 0; i < 3; i++ {
		if v := c.Get(ctx, bin, nil); v != "0.171.0" {
			t.Fatalf("get #%d = %q", i, v)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("--version ran %d times for 3 lists of an unchanged binary", n)
	}
	write(`[ "$1" = --version ] && echo "codex-cli 0.172.10-alpha.1 (newer)"`)
	if v := c.Get(ctx, bin, nil); v != "0.172.10-alpha.1" || count() != 2 {
		t.Fatalf("after replacing the binary: %q, %d runs", v, count())
	}
	write(`echo "usage: no version here"; exit 0`)
	if v := c.Get(ctx, bin, nil); v != "" {
		t.Fatalf("a binary printing no version: %q", v)
	}
	if v := c.Get(ctx, filepath.Join(dir, "missing"), nil); v != "" {
		t.Fatalf("a missing binary: %q", v)
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
	c := Cache{timeout: 300 * time.Millisecond}
	if v := c.Get(context.Background(), bin, nil); v != "" {
		t.Fatalf("a probe past its timeout = %q", v)
	}
	os.Remove(slow)
	c.timeout = time.Minute
	if v := c.Get(context.Background(), bin, nil); v != "0.61.0" {
		t.Fatalf("the probe after a timed-out one = %q, want it run again", v)
	}
}
