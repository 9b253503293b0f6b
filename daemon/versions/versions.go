package versions

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// Timeout bounds one `--version` run of a harness binary. Node
// CLIs take several seconds to answer under load; doctor allows 15.
const Timeout = 15 * time.Second

// Cache remembers what `bin --version` printed, keyed by the
// binary's path and its size and modification time, so harness.list runs
// each installed binary once and again only after it was replaced. A
// failed probe is remembered too (the version stays empty), except one
// cut by its timeout: a loaded machine is no verdict on the binary, so
// the next list probes it again. The zero value is ready.
type Cache struct {
	mu      sync.Mutex // held across a probe: concurrent lists wait for it
	entries map[string]entry
	// timeout bounds a probe (0: Timeout).
	timeout time.Duration
}

type entry struct {
	size    int64
	modTime time.Time
	version string
}

// Get returns bin's version, or "" when it cannot be learned; env is the
// probe's environment (nil: the daemon's own).
func (c *Cache) Get(ctx context.Context, bin string, env []string) string {
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
		timeout = Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, _ := harness.ProbeVersion(pctx, bin, env)
	if pctx.Err() != nil {
		return v // cut (its timeout, or the caller went away): not remembered
	}
	if c.entries == nil {
		c.entries = map[string]entry{}
	}
	if len(c.entries) >= 64 {
		clear(c.entries) // bounded: binaries rarely change more often than this
	}
	c.entries[bin] = entry{size: fi.Size(), modTime: fi.ModTime(), version: v}
	return v
}
