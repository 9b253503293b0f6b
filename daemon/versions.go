// The installed version of each harness binary, for harness.list.

package daemon

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// versionTimeout bounds one `--version` run of a harness binary. Node
// CLIs take several seconds to answer under load; doctor allows 15.
const versionTimeout = 15 * time.Second

// versionCache remembers what `bin --version` printed, keyed by the
// binary's path and its size and modification time, so harness.list runs
// each installed binary once and again only after it was replaced. A
// failed probe is remembered too (the version stays empty), except one
// cut by its timeout: a loaded machine is no verdict on the binary, so
// the next list probes it again. The zero value is ready.
type versionCache struct {
	mu      sync.Mutex // held across a probe: concurrent lists wait for it
	entries map[string]versionEntry
	// timeout bounds a probe (0: versionTimeout).
	timeout time.Duration
}

type versionEntry struct {
	size    int64
	modTime time.Time
	version string
}

// get returns bin's version, or "" when it cannot be learned; env is the
// probe's environment (nil: the daemon's own).
func (c *versionCache) get(ctx context.Context, bin string, env []string) string {
	fi, err := os.Stat(bin)
	if err != nil || fi.IsDir() {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[bin]; ok && e.size == fi.Size() && e.modTime.Equal(fi.ModTime()) {
		return e.version
	}
	timeout := c.timeout
	if timeout == 0 {
		timeout = versionTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, _ := harness.ProbeVersion(pctx, bin, env)
	if pctx.Err() != nil {
		return v // cut (its timeout, or the caller went away): not remembered
	}
	if c.entries == nil {
		c.entries = map[string]versionEntry{}
	}
	if len(c.entries) >= 64 {
		clear(c.entries) // bounded: binaries rarely change more often than this
	}
	c.entries[bin] = versionEntry{size: fi.Size(), modTime: fi.ModTime(), version: v}
	return v
}
