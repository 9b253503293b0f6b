// Tool call events: each tool a harness runs, as its hooks report it
// (harness.ToolCall), kept in a bounded in-memory log and served as
// tool.call events by event.read and event.subscribe to a caller that asks
// (tool_calls). They are not lifecycle events: they are not stored, and a
// daemon restart forgets them. What lasts is each call's last status in
// its execution's result (tool_calls), stored with the result.

package daemon

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dlgt-dev/dlgt/daemon/toolcalls"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// recordToolCall keeps the tool call of one hook of launch for s, if
// launch is s's live generation and the hook names s's provider session.
func (hk *hookIntake) recordToolCall(s *session, launch string, ev harness.Evidence) {
	s.mu.Lock()
	g := s.gen
	if g == nil || g.launchID != launch || s.spare != nil ||
		(ev.ProviderID != "" && s.rec.ProviderID != "" && ev.ProviderID != s.rec.ProviderID) {
		s.mu.Unlock()
		return
	}
	var execSeq uint64
	if s.exec != nil {
		execSeq = s.exec.seq
	}
	uid, id := s.uid, s.rec.ID
	s.mu.Unlock()
	rec := hk.tools.Add(uid, id, execSeq, hk.lastEvent(), ev.ToolCall)
	if execSeq == 0 {
		return
	}
	// The execution's result keeps its calls (rpc.Result tool_calls).
	s.mu.Lock()
	if s.exec != nil && s.exec.seq == execSeq {
		s.exec.tools.Note(rec, ev.ToolCall)
	}
	s.mu.Unlock()
}

// toolStart is where a caller's tool.call events start: its tool_after,
// else after the lifecycle event after, else (subscribe from now) the
// newest.
func (rt *runtime) toolStart(p rpc.EventReadParams, now bool) uint64 {
	switch {
	case p.ToolAfter != nil:
		return *p.ToolAfter
	case p.After != nil:
		return rt.tools.StartAfter(*p.After)
	case now:
		return rt.tools.Last()
	}
	return 0
}

// withToolCalls is event.read's page evs with the tool calls between
// (tool_calls).
func (rt *runtime) withToolCalls(uid string, p rpc.EventReadParams, evs []store.Event) rpc.Reply[[]rpc.Event] {
	tools, _ := rt.tools.Read(rt.toolStart(p, false), uid, maxEventRead-len(evs))
	lines, _, _ := toolcalls.Merge(evs, tools, len(evs) == maxEventRead, 0, 0)
	out := make([]json.RawMessage, len(lines))
	for i, l := range lines {
		out[i] = l
	}
	return rpc.Encoded[[]rpc.Event](out)
}

// toolStream is event.subscribe with tool_calls: eventStream's lifecycle
// events with the tool calls between them.
type toolStream struct {
	rt               *runtime
	uid              string
	after, toolAfter uint64
}

func (ts *toolStream) Ack() rpc.SubscribeAck {
	ta := ts.toolAfter
	return rpc.SubscribeAck{Subscribed: true, After: ts.after, ToolAfter: &ta}
}

func (ts *toolStream) Run(ctx context.Context, emit func([]byte) error) error {
	rt := ts.rt
	const page = 256
	for {
		rt.mu.Lock()
		changed := rt.allChanged
		rt.mu.Unlock()
		toolsChanged := rt.tools.Wait()
		for {
			if ev := rt.db.EventsEvictedThrough(); ev > ts.after {
				return errors.New("subscriber fell behind event retention")
			}
			// Calls first: every lifecycle event a call follows is
			// readable by the time the events are read.
			tools, behind := rt.tools.Read(ts.toolAfter, ts.uid, page)
			if behind {
				return errors.New("subscriber fell behind tool call retention")
			}
			evs, err := rt.db.ReadEvents(ts.after, page, ts.uid)
			if err != nil {
				return err
			}
			var lines [][]byte
			lines, ts.after, ts.toolAfter = toolcalls.Merge(evs, tools, len(evs) == page, ts.after, ts.toolAfter)
			for _, l := range lines {
				if err := emit(l); err != nil {
					return err
				}
			}
			if len(evs) < page && len(tools) < page {
				break
			}
		}
		select {
		case <-changed:
		case <-toolsChanged:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
