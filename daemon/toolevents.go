// Tool call events: each tool a harness runs, as its hooks report it
// (harness.ToolCall), kept in a bounded in-memory log and served as
// tool.call events by event.read and event.subscribe to a caller that asks
// (tool_calls). They are not lifecycle events: they are not stored, not in
// session.fetch, and a daemon restart forgets them.

package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// Bounds of the tool call log.
const (
	toolLogCap   = 4096    // events kept
	toolLogBytes = 8 << 20 // bytes of events kept
	// maxOpenTools bounds the started calls without a harness id (Gemini
	// CLI) waiting for their end, per Session; maxOpenSessions the
	// Sessions with any.
	maxOpenTools    = 64
	maxOpenSessions = 256
)

// toolEntry is one recorded tool.call event.
type toolEntry struct {
	seq  uint64 // tool_seq
	base uint64 // the lifecycle seq it follows
	uid  string
	data []byte
}

// openTool is a started call with a minted id awaiting its end.
type openTool struct {
	id, name, input string
}

// toolLog is the runtime's tool call log. The zero value is ready.
type toolLog struct {
	mu      sync.Mutex
	seq     uint64
	ents    []toolEntry // ascending seq
	bytes   int
	evicted uint64 // the highest tool_seq dropped
	changed chan struct{}
	open    map[string][]openTool // by Session uid
	prefix  string
	minted  uint64
}

// wait is a channel closed at the next append.
func (l *toolLog) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// last is the newest tool_seq.
func (l *toolLog) last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// startAfter is the tool_seq just before the first call recorded after
// lifecycle event base.
func (l *toolLog) startAfter(base uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	after := l.evicted
	for _, e := range l.ents {
		if e.base >= base {
			break
		}
		after = e.seq
	}
	return after
}

// read returns up to limit entries of uid ("": all) after tool_seq after,
// and whether entries after it were dropped.
func (l *toolLog) read(after uint64, uid string, limit int) (out []toolEntry, behind bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.ents {
		if len(out) >= limit {
			break
		}
		if e.seq > after && (uid == "" || e.uid == uid) {
			out = append(out, e)
		}
	}
	return out, after < l.evicted
}

// id is the call's id: the harness's own, else one minted at its start
// and found again at its end (the oldest open call of that name, with
// the same input when one has it).
func (l *toolLog) id(uid string, tc *harness.ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	input := compactJSON(tc.Input)
	if tc.Phase != harness.ToolStarted {
		open := l.open[uid]
		at := -1
		for i, o := range open {
			if o.name == tc.Name && (at < 0 || o.input == input && open[at].input != input) {
				at = i
			}
		}
		if at >= 0 {
			id := open[at].id
			l.open[uid] = append(open[:at:at], open[at+1:]...)
			if len(l.open[uid]) == 0 {
				delete(l.open, uid)
			}
			return id
		}
	}
	if l.prefix == "" {
		var b [4]byte
		rand.Read(b[:])
		l.prefix = "dlgt-tool-" + hex.EncodeToString(b[:]) + "-"
	}
	l.minted++
	id := fmt.Sprintf("%s%d", l.prefix, l.minted)
	if tc.Phase == harness.ToolStarted {
		if l.open == nil {
			l.open = map[string][]openTool{}
		}
		if _, ok := l.open[uid]; !ok && len(l.open) >= maxOpenSessions {
			for k := range l.open {
				delete(l.open, k) // any one: its calls end with no match
				break
			}
		}
		open := append(l.open[uid], openTool{id: id, name: tc.Name, input: input})
		if len(open) > maxOpenTools {
			open = open[len(open)-maxOpenTools:]
		}
		l.open[uid] = open
	}
	return id
}

// add records a tool call of Session uid (published as sessionID) in
// execution seq (0: none, a person's own turn), following lifecycle event
// base.
func (l *toolLog) add(uid, sessionID string, execSeq, base uint64, tc *harness.ToolCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := rpc.Event{
		SchemaVersion: rpc.SchemaVersion, Seq: base, Type: rpc.EventToolCall,
		SessionID: sessionID, ExecutionSeq: execSeq, Tool: tc.Name, Command: tc.Command,
		ToolSeq: l.seq + 1, ToolCall: &rpc.ToolCallEvent{ID: l.id(uid, tc), Status: tc.Phase, Error: clipBytes(tc.Error, 1024)},
	}
	ev.ToolCall.Input, ev.ToolCall.InputTruncated = boundRaw(tc.Input)
	ev.ToolCall.Output, ev.ToolCall.OutputTruncated = boundRaw(tc.Output)
	data, err := rpc.Marshal(ev)
	if err != nil {
		return
	}
	l.seq++
	l.ents = append(l.ents, toolEntry{seq: l.seq, base: base, uid: uid, data: data})
	l.bytes += len(data)
	drop := 0
	for len(l.ents)-drop > toolLogCap || l.bytes > toolLogBytes {
		l.bytes -= len(l.ents[drop].data)
		l.evicted = l.ents[drop].seq
		drop++
	}
	if drop > 0 {
		l.ents = append(l.ents[:0:0], l.ents[drop:]...)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// boundRaw is raw as compact JSON, or, past rpc.MaxToolRaw bytes, a JSON
// string of its first rpc.MaxToolRaw bytes, flagged truncated.
func boundRaw(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	text := compactJSON(raw)
	if len(text) <= rpc.MaxToolRaw && json.Valid([]byte(text)) {
		return json.RawMessage(text), false
	}
	cut := clipBytes(text, rpc.MaxToolRaw)
	b, _ := json.Marshal(cut)
	return b, len(cut) < len(text)
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// clipBytes is s cut to at most n bytes, at a rune boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// recordToolCall keeps the tool call of one hook of launch for s, if
// launch is s's live generation and the hook names s's provider session.
func (rt *runtime) recordToolCall(s *session, launch string, ev harness.Evidence) {
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
	rt.tools.add(uid, id, execSeq, rt.db.LastEventSeq(), ev.ToolCall)
}

// toolStart is where a caller's tool.call events start: its tool_after,
// else after the lifecycle event after, else (subscribe from now) the
// newest.
func (rt *runtime) toolStart(p rpc.EventReadParams, now bool) uint64 {
	switch {
	case p.ToolAfter != nil:
		return *p.ToolAfter
	case p.After != nil:
		return rt.tools.startAfter(*p.After)
	case now:
		return rt.tools.last()
	}
	return 0
}

// mergeTools interleaves lifecycle events and tool calls in recording
// order: a call goes before the first event recorded after it. When evs
// filled its page, calls recorded after its last event wait for the next
// page. It returns the lines and the new positions.
func mergeTools(evs []store.Event, tools []toolEntry, full bool, after, toolAfter uint64) ([][]byte, uint64, uint64) {
	out := make([][]byte, 0, len(evs)+len(tools))
	i, j := 0, 0
	for i < len(evs) || j < len(tools) {
		if j < len(tools) && (i < len(evs) && tools[j].base < evs[i].Seq || i == len(evs) && !full) {
			out = append(out, tools[j].data)
			toolAfter = tools[j].seq
			j++
			continue
		}
		if i == len(evs) {
			break
		}
		out = append(out, evs[i].Data)
		after = evs[i].Seq
		i++
	}
	return out, after, toolAfter
}

// withToolCalls is event.read's page evs with the tool calls between
// (tool_calls).
func (rt *runtime) withToolCalls(uid string, p rpc.EventReadParams, evs []store.Event) rpc.Reply[[]rpc.Event] {
	tools, _ := rt.tools.read(rt.toolStart(p, false), uid, maxEventRead-len(evs))
	lines, _, _ := mergeTools(evs, tools, len(evs) == maxEventRead, 0, 0)
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
		toolsChanged := rt.tools.wait()
		for {
			if ev := rt.db.EventsEvictedThrough(); ev > ts.after {
				return errors.New("subscriber fell behind event retention")
			}
			// Calls first: every lifecycle event a call follows is
			// readable by the time the events are read.
			tools, behind := rt.tools.read(ts.toolAfter, ts.uid, page)
			if behind {
				return errors.New("subscriber fell behind tool call retention")
			}
			evs, err := rt.db.ReadEvents(ts.after, page, ts.uid)
			if err != nil {
				return err
			}
			var lines [][]byte
			lines, ts.after, ts.toolAfter = mergeTools(evs, tools, len(evs) == page, ts.after, ts.toolAfter)
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
