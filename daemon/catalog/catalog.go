package catalog

import (
	"context"
	"os"
	"sort"
	"strings"

	"github.com/dlgt-dev/dlgt/daemon/versions"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Catalog is the harnesses a daemon has. Its zero value has none.
type Catalog struct {
	harnesses map[string]harness.Harness
	binEnv    map[string]string
	names     []string // sorted
	versions  versions.Cache
}

// New is the catalog of harnesses, with binEnv the daemon's defaults for
// their binary variables (harness.Descriptor.BinEnv) when a caller's
// environment names none. It keeps both maps as given.
func New(harnesses map[string]harness.Harness, binEnv map[string]string) *Catalog {
	c := &Catalog{harnesses: harnesses, binEnv: binEnv}
	for n := range harnesses {
		c.names = append(c.names, n)
	}
	sort.Strings(c.names)
	return c
}

// Names are the harnesses' names, sorted (shared: callers do not change
// it).
func (c *Catalog) Names() []string { return c.names }

// Lookup is the adapter named name, if the catalog has it.
func (c *Catalog) Lookup(name string) (harness.Harness, bool) {
	h, ok := c.harnesses[name]
	return h, ok
}

// Get is the adapter named name, or INVALID_ARGUMENT on the field
// harness naming the harnesses there are.
func (c *Catalog) Get(name string) (harness.Harness, error) {
	h, ok := c.harnesses[name]
	if !ok {
		return nil, c.unknown(name)
	}
	return h, nil
}

func (c *Catalog) unknown(name string) error {
	return rpc.InvalidField("harness", "unknown harness %q (have %s)", clip(name), strings.Join(c.names, ", "))
}

// clip bounds a caller's string quoted back in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// DefaultEnv is the environment used to locate binaries when no client
// environment is at hand: the daemon's PATH and binary defaults.
func (c *Catalog) DefaultEnv() map[string]string {
	env := map[string]string{"PATH": os.Getenv("PATH")}
	for k, v := range c.binEnv {
		env[k] = v
	}
	return env
}

// List serves harness.list.
func (c *Catalog) List(ctx context.Context, peer rpc.Peer, p rpc.HarnessListParams) (rpc.HarnessListResult, error) {
	// The caller's environment, when it sent one, as a create of its
	// would use it: its PATH and DLGT_*_BIN, the daemon's binary defaults
	// under them.
	res := rpc.HarnessListResult{Harnesses: []rpc.HarnessInfo{}, Environment: rpc.HarnessEnvDaemon}
	env, probeEnv := c.DefaultEnv(), []string(nil)
	if p.Environment != nil {
		res.Environment = rpc.HarnessEnvCaller
		env = map[string]string{}
		for k, v := range p.Environment {
			env[k] = v
		}
		for k, v := range c.binEnv {
			if _, ok := env[k]; !ok && v != "" {
				env[k] = v
			}
		}
		for k, v := range env {
			probeEnv = append(probeEnv, k+"="+v)
		}
	}
	for _, n := range c.names {
		if p.Harness != "" && p.Harness != n {
			continue
		}
		h := c.harnesses[n]
		info := h.Info()
		bin, err := h.Binary(env)
		info.Binary, info.Available = bin, err == nil
		if info.Available {
			info.Version = c.versions.Get(ctx, bin, probeEnv)
		}
		res.Harnesses = append(res.Harnesses, info)
	}
	if p.Harness != "" && len(res.Harnesses) == 0 {
		return rpc.HarnessListResult{}, c.unknown(p.Harness)
	}
	return res, nil
}

// Models serves model.list.
func (c *Catalog) Models(ctx context.Context, peer rpc.Peer, p rpc.ModelListParams) (rpc.ModelListResult, error) {
	h, err := c.Get(p.Harness)
	if err != nil {
		return rpc.ModelListResult{}, err
	}
	return h.Models(p.IncludeHidden), nil
}
