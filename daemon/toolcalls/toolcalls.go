package toolcalls

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// Bounds of the tool call log.
const (
	LogCap   = 4096    // events kept
	LogBytes = 8 << 20 // bytes of events kept
	// maxOpenTools bounds the started calls without a harness id (Gemini
	// CLI) waiting for their end, per Session; maxOpenSessions the
	// Sessions with any.
	maxOpenTools    = 64
	maxOpenSessions = 256
)

// Entry is one recorded tool.call event.
type Entry struct {
	Seq  uint64 // tool_seq
	Base uint64 // the lifecycle seq it follows
	UID  string // the Session's uid
	Data []byte // the event's JSON
}

// openTool is a started call with a minted id awaiting its end.
type openTool struct {
	id, name, input string
}

// Log is the tool call log. The zero value is ready.
type Log struct {
	mu      sync.Mutex
	seq     uint64
	ents    []Entry // ascending seq
	bytes   int
	evicted uint64 // the highest tool_seq dropped
	changed chan struct{}
	open    map[string][]openTool // by Session uid
	prefix  string
	minted  uint64
}

// Wait is a channel closed at the next append.
func (l *Log) Wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// Last is the newest tool_seq.
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// StartAfter is the tool_seq just before the first call recorded after
// lifecycle event base.
func (l *Log) StartAfter(base uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	after := l.evicted
	for _, e := range l.ents {
		if e.Base >= base {
			break
		}
		after = e.Seq
	}
	return after
}

// Read returns up to limit entries of uid ("": all) after tool_seq after,
// and whether entries after it were dropped.
func (l *Log) Read(after uint64, uid string, limit int) (out []Entry, behind bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.ents {
		if len(out) >= limit {
			break
		}
		if e.Seq > after && (uid == "" || e.UID == uid) {
			out = append(out, e)
		}
	}
	return out, after < l.evicted
}

// id is the call's id: the harness's own, else one minted at its start
// and found again at its end (the oldest open call of that name, with
// the same input when one has it).
func (l *Log) id(uid string, tc *harness.ToolCall) string {
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

// Add records a tool call of Session uid (published as sessionID) in
// execution seq (0: none, a person's own turn), following lifecycle event
// base, and returns the event it recorded (nil: none).
func (l *Log) Add(uid, sessionID string, execSeq, base uint64, tc *harness.ToolCall) *rpc.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := rpc.Event{
		SchemaVersion: rpc.SchemaVersion, Seq: base, Type: rpc.EventToolCall,
		SessionID: sessionID, ExecutionSeq: execSeq, Tool: tc.Name, Command: tc.Command,
		ToolSeq: l.seq + 1, ToolCall: &rpc.ToolCallEvent{ID: l.id(uid, tc), Status: tc.Phase, Error: clipBytes(tc.Error, 1024)},
	}
	ev.ToolCall.Input, ev.ToolCall.InputTruncated = boundRaw(tc.Input, rpc.MaxToolRaw)
	ev.ToolCall.Output, ev.ToolCall.OutputTruncated = boundRaw(tc.Output, rpc.MaxToolRaw)
	data, err := rpc.Marshal(ev)
	if err != nil {
		return nil
	}
	l.seq++
	l.ents = append(l.ents, Entry{Seq: l.seq, Base: base, UID: uid, Data: data})
	l.bytes += len(data)
	drop := 0
	for len(l.ents)-drop > LogCap || l.bytes > LogBytes {
		l.bytes -= len(l.ents[drop].Data)
		l.evicted = l.ents[drop].Seq
		drop++
	}
	if drop > 0 {
		l.ents = append(l.ents[:0:0], l.ents[drop:]...)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return &ev
}

// boundRaw is raw as compact JSON, or, past max bytes, a JSON string of
// its first max bytes, flagged truncated.
func boundRaw(raw json.RawMessage, max int) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	text := compactJSON(raw)
	if len(text) <= max && json.Valid([]byte(text)) {
		return json.RawMessage(text), false
	}
	cut := clipBytes(text, max)
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

// Merge interleaves lifecycle events and tool calls in recording
// order: a call goes before the first event recorded after it. When evs
// filled its page, calls recorded after its last event wait for the next
// page. It returns the lines and the new positions.
func Merge(evs []store.Event, tools []Entry, full bool, after, toolAfter uint64) ([][]byte, uint64, uint64) {
	out := make([][]byte, 0, len(evs)+len(tools))
	i, j := 0, 0
	for i < len(evs) || j < len(tools) {
		if j < len(tools) && (i < len(evs) && tools[j].Base < evs[i].Seq || i == len(evs) && !full) {
			out = append(out, tools[j].Data)
			toolAfter = tools[j].Seq
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
