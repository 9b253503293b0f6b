package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/rpc"
)

// send steer reads the running execution and steers it; send queue
// passes queue on; both say what the receipt means.
func TestMCPSendSteerAndQueue(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: rpc.Session{ID: "codex:01", Harness: "codex", State: rpc.StateBusy, ActiveExecution: 4}})
	d.Set(rpc.MethodSessionSend, rpc.Receipt{Session: rpc.Session{ID: "codex:01", Harness: "codex"}, ExecutionSeq: 4, Cursor: "12", Submission: rpc.SubmissionConfirmed, Steered: true})
	cs := testServer(t, d, nil, nil, 5*time.Second)
	text, _, isErr := callTool(t, cs, "send", map[string]any{"session": "codex:01", "prompt": "use v2", "request_id": "r1", "steer": true})
	if isErr || !strings.Contains(text, "Steered the running execution") {
		t.Fatalf("steer: %s", text)
	}
	var p rpc.SessionSendParams
	json.Unmarshal(d.Params(rpc.MethodSessionSend)[0], &p)
	if p.Steer == nil || p.Steer.ExecutionSeq != 4 || p.Queue {
		t.Fatalf("steer params = %+v", p)
	}

	d.Set(rpc.MethodSessionSend, rpc.Receipt{Session: rpc.Session{ID: "codex:01", Harness: "codex"}, ExecutionSeq: 5, Cursor: "13", Submission: rpc.SubmissionPending, Queued: true})
	text, _, isErr = callTool(t, cs, "send", map[string]any{"session": "codex:01", "prompt": "then this", "request_id": "r2", "queue": true})
	if isErr || !strings.Contains(text, "Queued: it runs when the current execution ends") || !strings.Contains(text, `cursor "13"`) {
		t.Fatalf("queue: %s", text)
	}
	p = rpc.SessionSendParams{}
	json.Unmarshal(d.Params(rpc.MethodSessionSend)[1], &p)
	if !p.Queue || p.Steer != nil {
		t.Fatalf("queue params = %+v", p)
	}

	n := d.Count()
	if text, _, isErr := callTool(t, cs, "send", map[string]any{"session": "codex:01", "prompt": "x", "request_id": "r3", "steer": true, "queue": true}); !isErr || !strings.Contains(text, "steer") {
		t.Fatalf("steer and queue: %v %s", isErr, text)
	}
	if d.Count() != n {
		t.Fatal("a refused send reached the daemon")
	}
}
