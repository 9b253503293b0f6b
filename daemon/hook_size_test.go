package daemon

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A hook payload carries the prompt JSON-escaped (Claude's UserPromptSubmit
// also wraps a paste in tags): a prompt at the 512 KiB limit made of
// characters JSON escapes (backslashes, quotes, line breaks) doubles. The
// hook socket takes any payload the forwarder sends.
func TestHookSocketTakesTheLargestPayload(t *testing.T) {
	td := startTestDaemon(t)
	prompt := strings.Repeat(`\"`+"\n", maxPromptBytes/3)
	var payload bytes.Buffer
	payload.WriteString(`{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":`)
	payload.Write(rpcString(prompt))
	payload.WriteString(`}`)
	if payload.Len() <= rpc.DefaultMaxLineBytes {
		t.Fatalf("payload %d bytes: not over the default line cap, the test proves nothing", payload.Len())
	}
	if payload.Len() > harness.MaxHookPayload {
		t.Fatalf("payload %d bytes: over the forwarder's own limit %d", payload.Len(), harness.MaxHookPayload)
	}
	n := payload.Len()
	if err := harness.ForwardHook(context.Background(), td.paths.HookSocket, "internal:000000000000", "UserPromptSubmit", &payload); err != nil {
		t.Fatalf("a %d-byte hook: %v", n, err)
	}
}

func rpcString(s string) []byte {
	b, _ := rpc.Marshal(s)
	return b
}
