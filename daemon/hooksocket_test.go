package daemon

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Clients holding every public connection (agents long-polling) must not
// starve the harness hooks that start and complete turns: hooks arrive on
// their own socket.
func TestHooksNotStarvedByClientConnections(t *testing.T) {
	td := startTestDaemon(t)
	var held []net.Conn
	for i := 0; i < rpc.DefaultMaxConnections-1; i++ {
		c, err := net.Dial("unix", td.paths.Socket)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// Give the server time to register the held connections.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st rpc.DaemonStatus
		td.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
		if st.Connections >= rpc.DefaultMaxConnections || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The status connection above may still hold the last slot for a
	// moment; retry until the create itself gets in.
	var r rpc.Receipt
	for {
		err := td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: "starve", Harness: "claude", Cwd: t.TempDir(), Prompt: "still served",
			RequestID: "starve-1", Environment: td.env,
		}, &r)
		if err == nil {
			break
		}
		if !isCode(err, rpc.CodeRPCUnavailable) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("submission = %s", r.Submission)
	}
	// The confirmed receipt already proves UserPromptSubmit got through;
	// free two slots so the test's own fetches fit, then read the result.
	held[0].Close()
	held[1].Close()
	held = held[2:]
	// Closed connections leave the server asynchronously: retry a refused
	// fetch rather than race them.
	for {
		var doc rpc.FetchDocument
		err := td.call(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "cursor": r.Cursor, "until": "result", "wait_ms": 20000}, &doc)
		if isCode(err, rpc.CodeRPCUnavailable) && time.Now().Before(deadline.Add(20*time.Second)) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		res := doc.Sessions[0].Results
		if len(res) != 1 || res[0].FinalText == nil || *res[0].FinalText != "MOCK-REPLY: still served" {
			t.Fatalf("results = %+v", res)
		}
		break
	}
}

// The hook socket serves only hook callbacks.
func TestHookSocketServesOnlyHooks(t *testing.T) {
	td := startTestDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, td.paths.HookSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(ctx, rpc.MethodSessionList, struct{}{}, nil); !isCode(err, rpc.CodeInvalidArgument) {
		t.Fatalf("session.list on the hook socket: %v", err)
	}
	var ack struct{ Accepted bool }
	if err := c.Call(ctx, rpc.MethodHookDeliver, rpc.HookParams{LaunchID: "internal:0", Event: "Stop", Payload: []byte(`{}`)}, &ack); err != nil || ack.Accepted {
		t.Fatalf("hook on the hook socket: %v %+v", err, ack)
	}
}

func isCode(err error, code rpc.Code) bool {
	re, ok := err.(*rpc.Error)
	return ok && re.Code == code
}
