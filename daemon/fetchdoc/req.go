// The request: session.fetch parameters validated into a fetchReq, and
// the contract's bounds.

package fetchdoc

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Fetch bounds of the contract.
const (
	defaultBytes = 32 << 10
	HardBytes    = 256 << 10
	MaxEvents    = 64
	MaxResults   = 4
	Stable       = 128
	StableMax    = 512
	liveRows     = 40
	MaxWait      = 86_400_000
	AllPage      = 32
	AllSessions  = 256
	// cliWrapper is what the CLI adds around a document:
	// {"ok":true, + document without its "{" + newline.
	CLIWrapper = len(`{"ok":true,`) - 1 + 1
	// workableSlack is the headroom a named workable max_bytes keeps for
	// what may arrive between the failed call and the retry: the snapshot
	// gaining a field, or a lifecycle event (which cannot be chunked)
	// queued ahead of the chunk the value was verified with. Both the
	// value and value-slack are verified by rendering.
	workableSlack = 256
)

// fetchReq is a validated session.fetch.
type Req struct {
	Cursor      uint64
	HasCursor   bool
	Wait        time.Duration
	UntilResult bool
	Screen      bool
	ScreenSet   bool // screen explicitly requested (true or a count)
	StableCap   int
	MaxBytes    int
	Budget      int // bytes for the document itself
	// after: start from the retained results after this execution_seq.
	After    uint64
	HasAfter bool
	// ToolCalls: results carry their tool_calls (an extension).
	ToolCalls bool
}

func Parse(p *rpc.SessionFetchParams) (*Req, error) {
	fr := &Req{Screen: true, StableCap: Stable}
	var perr *rpc.Error
	fr.Cursor, fr.HasCursor, perr = rpc.ParsePosition(p.Cursor)
	if perr != nil {
		return nil, perr
	}
	if p.WaitMS < 0 || p.WaitMS > MaxWait {
		return nil, rpc.InvalidField("wait_ms", "must be between 0 and %d", MaxWait)
	}
	fr.Wait = time.Duration(p.WaitMS) * time.Millisecond
	switch p.Until {
	case "", "any":
	case "result":
		fr.UntilResult = true
	default:
		return nil, rpc.InvalidField("until", "must be \"any\" or \"result\"")
	}
	if raw := bytes.TrimSpace(p.Screen); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		var b bool
		var n int
		switch {
		case json.Unmarshal(raw, &b) == nil:
			fr.Screen, fr.ScreenSet = b, b
		case json.Unmarshal(raw, &n) == nil && n >= 0 && n <= StableMax:
			fr.StableCap, fr.ScreenSet = n, true
		default:
			return nil, rpc.InvalidField("screen", "must be a boolean or a stable-line count up to %d", StableMax)
		}
	}
	max := p.MaxBytes
	switch {
	case max == 0:
		max = defaultBytes
	case max < 0 || max > HardBytes:
		return nil, rpc.InvalidField("max_bytes", "must be between 1 and %d", HardBytes)
	}
	fr.MaxBytes = max
	fr.Budget = max - CLIWrapper
	fr.ToolCalls = p.ToolCalls
	if p.AfterExecution != nil {
		if fr.HasCursor {
			return nil, rpc.InvalidField("after_execution", "give cursor or after_execution, not both")
		}
		fr.After, fr.HasAfter = *p.AfterExecution, true
	}
	return fr, nil
}
