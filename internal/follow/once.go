package follow

import (
	"context"
	"encoding/json"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Once is dlgt events without --follow: the retained events after
// opts.Params.After (event.read, at most 1,000), each handed to opts.Emit
// as the daemon sent it and, with a StateFile, its seq stored after it.
// Exec plays no part.
func Once(ctx context.Context, c *client.Client, opts Options) error {
	var raw json.RawMessage
	if _, err := c.KeepRaw(&raw).EventRead(ctx, opts.Params); err != nil {
		return err
	}
	var events []json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		return rpc.Errorf(rpc.CodeInternal, "unexpected event.read result: %v", err)
	}
	for _, ev := range events {
		line, err := rpc.Marshal(ev)
		if err != nil {
			return err
		}
		if err := opts.Emit(line); err != nil {
			return &HandleError{Err: err}
		}
		var f Fields
		if opts.StateFile != "" && json.Unmarshal(line, &f) == nil {
			if err := WriteState(opts.StateFile, f.Seq); err != nil {
				return rpc.Errorf(rpc.CodeInvalidArgument, "--state %s: %v", opts.StateFile, err)
			}
		}
	}
	return nil
}

// maxAliasIDs bounds the ids an Aliases remembers.
const maxAliasIDs = 4096

// Aliases gives event lines their Sessions' aliases, from session.list
// all:true: listed once, and again when an event names a Session the last
// list lacked (a new one, during a follow). Bounded: an id still unknown
// after a fresh list is remembered as having none, and at most 4,096 ids
// are kept. Not safe for concurrent use.
type Aliases struct {
	ctx   context.Context
	c     *client.Client
	names map[string]string
}

// NewAliases returns the aliases of the Sessions c lists.
func NewAliases(ctx context.Context, c *client.Client) *Aliases {
	return &Aliases{ctx: ctx, c: c}
}

// Of is the alias of the Session id ("" for none, or a failed list).
func (a *Aliases) Of(id string) string {
	if name, ok := a.names[id]; ok {
		return name
	}
	if a.names == nil || len(a.names) >= maxAliasIDs {
		a.names = map[string]string{}
	}
	if list, err := a.c.SessionList(a.ctx, rpc.SessionListParams{All: true}); err == nil {
		for _, s := range list.Sessions {
			if len(a.names) < maxAliasIDs {
				a.names[s.ID] = s.Alias
			}
		}
	}
	if _, ok := a.names[id]; !ok {
		a.names[id] = "" // a failed list, or a Session without an alias
	}
	return a.names[id]
}
