package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/rpc"
)

// KeepRaw: a typed call decodes the answer and also keeps it as the
// daemon sent it, members this client does not know included; the
// Client it came from keeps nothing.
func TestKeepRaw(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, json.RawMessage(`{"sessions":[{"id":"claude:1","state":"idle","future":"kept"}],"next":7}`))
	c := newClient(t, client.Options{Home: t.TempDir(), Socket: d.Socket, NoAutostart: true})
	var raw json.RawMessage
	res, err := c.KeepRaw(&raw).SessionList(context.Background(), rpc.SessionListParams{All: true})
	if err != nil || len(res.Sessions) != 1 || res.Sessions[0].ID != "claude:1" {
		t.Fatalf("SessionList = %+v, %v", res, err)
	}
	if !strings.Contains(string(raw), `"future":"kept"`) || !strings.Contains(string(raw), `"next":7`) {
		t.Errorf("raw answer %s lost the unknown members", raw)
	}
	raw = nil
	if _, err := c.SessionList(context.Background(), rpc.SessionListParams{}); err != nil || raw != nil {
		t.Errorf("the original Client kept an answer: %s, %v", raw, err)
	}
	// A result that does not decode is INTERNAL, naming the method.
	d.Set(rpc.MethodSessionRead, json.RawMessage(`{"session":"not an object"}`))
	_, err = c.KeepRaw(&raw).SessionRead(context.Background(), rpc.SessionReadParams{Session: "x"})
	if re := rpc.AsError(err); re == nil || re.Code != rpc.CodeInternal || !strings.Contains(re.Message, "session.read") {
		t.Errorf("undecodable result: %v", err)
	}
}

// WithoutHost drops --host and its value, in either spelling, and keeps
// every word after "--" as it is.
func TestWithoutHost(t *testing.T) {
	got := client.WithoutHost([]string{"--host", "devbox", "daemon", "--host=x", "status", "--", "--host", "y"})
	want := []string{"daemon", "status", "--", "--host", "y"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("WithoutHost = %q, want %q", got, want)
	}
}
