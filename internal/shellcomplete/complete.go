// Package shellcomplete is dlgt's shell completion candidates, apart from the
// command tree that offers them: each candidate is "NAME\tDESCRIPTION".
// Sessions come from an already running daemon of this machine (never
// one started for it, each query bounded by a second), models from the
// harness adapters' built-in lists, profiles from the profiles file.
package shellcomplete

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// timeout bounds the daemon query of one completion.
const timeout = time.Second

// Sessions asks this machine's running daemon (through c's policy, never
// starting one) for its Sessions: each alias and id that starts with
// prefix, described by title and state. Only an active alias addresses a
// Session (the contract's "active human alias"; a terminal Session's
// alias is free, may name another Session by now, and is NOT_FOUND while
// it does not), so a stopped or failed Session is offered by its id
// alone. Any failure is no candidates.
func Sessions(ctx context.Context, c *client.Client, prefix string) []string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := c.WithHost("local")
	if err != nil {
		return nil
	}
	rc, err := c.DialExisting(ctx, "")
	if err != nil {
		return nil
	}
	defer rc.Close()
	list, err := rpc.SessionList.Call(ctx, rc, rpc.SessionListParams{All: true})
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list.Sessions {
		desc := "\t" + render.OneLine(s.Title, 40) + " (" + s.State + ")"
		alias := s.Alias
		if s.State == rpc.StateStopped || s.State == rpc.StateFailed {
			alias = ""
		}
		for _, name := range []string{alias, s.ID} {
			if name != "" && strings.HasPrefix(name, prefix) {
				out = append(out, name+desc)
			}
		}
	}
	return out
}

// Harnesses are the harnesses of ds, described by their display names.
func Harnesses(ds []harness.Descriptor) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name+"\t"+d.DisplayName)
	}
	return out
}

// Profiles are the profiles whose names start with prefix, described by
// their harness, sorted.
func Profiles(profiles client.Profiles, prefix string) []string {
	var out []string
	for name, p := range profiles {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name+"\t"+p.Harness)
		}
	}
	sort.Strings(out)
	return out
}

// Models are the model ids and aliases starting with prefix from the
// built-in list of the harness named which ("": every harness of ds),
// each once, described by its harness.
func Models(ds []harness.Descriptor, which, prefix string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range ds {
		if which != "" && which != d.Name {
			continue
		}
		l := d.Harness.Models(false)
		for _, m := range l.Models {
			for _, name := range append([]string{m.ID}, m.Aliases...) {
				if !seen[name] && strings.HasPrefix(name, prefix) {
					seen[name] = true
					out = append(out, name+"\t"+l.Harness)
				}
			}
		}
	}
	return out
}
