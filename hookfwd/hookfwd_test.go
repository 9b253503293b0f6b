package hookfwd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestRequestIsOneValidLine(t *testing.T) {
	payload := []byte("{\n  \"session_id\": \"s\",\r\n  \"prompt\": \"two\\nlines \\\"quoted\\\"\",\n  \"n\": [1, 2]\n}\n")
	line, err := Request("internal:ab\"c\x01", "Stop\\", payload)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(line, '\n') != len(line)-1 {
		t.Fatalf("not one line: %q", line)
	}
	var req struct {
		ID     string         `json:"id"`
		Method string         `json:"method"`
		Params rpc.HookParams `json:"params"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if req.Method != rpc.MethodHookDeliver || req.ID == "" || req.Params.LaunchID != "internal:ab\"c\x01" || req.Params.Event != "Stop\\" {
		t.Fatalf("request %+v", req)
	}
	var got, want any
	json.Unmarshal(req.Params.Payload, &got)
	json.Unmarshal(payload, &want)
	if !equalJSON(got, want) {
		t.Fatalf("payload %s, want %s", req.Params.Payload, payload)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestRequestRefusesNonJSON(t *testing.T) {
	for _, p := range []string{"", "  \n", "not json", `{"a":1}, "launch_id":"other"`, `{"a":1}}`, "{\"a\":\"\x00\"}"} {
		if _, err := Request("internal:1", "Stop", []byte(p)); err == nil {
			t.Errorf("payload %q accepted", p)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args                  []string
		socket, launch, event string
		bad                   bool
	}{
		{args: []string{"--socket", "/s", "--launch", "internal:1", "Stop"}, socket: "/s", launch: "internal:1", event: "Stop"},
		{args: []string{"Stop", "--launch=internal:1", "--socket=/s=x"}, socket: "/s=x", launch: "internal:1", event: "Stop"},
		{args: []string{"--socket", "/s", "Stop"}, bad: true},
		{args: []string{"--socket", "/s", "--launch", "l"}, bad: true},
		{args: []string{"--socket", "/s", "--launch", "l", "A", "B"}, bad: true},
		{args: []string{"--socket", "/s", "--launch", "l", "--verbose", "A"}, bad: true},
		{args: []string{"--socket", "/s", "--launch"}, bad: true},
	} {
		s, l, e, err := parseArgs(c.args)
		if c.bad != (err != nil) || s != c.socket || l != c.launch || e != c.event {
			t.Errorf("parseArgs(%q) = %q %q %q %v", c.args, s, l, e, err)
		}
	}
}

// hookServer is an rpc.Server on a private socket whose handler answers
// with answer; it records the params it received.
func hookServer(t *testing.T, answer func(rpc.HookParams) (any, error)) (string, func() []rpc.HookParams) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []rpc.HookParams
	srv := &rpc.Server{Handler: rpc.HandlerFunc(func(ctx context.Context, peer rpc.Peer, req *rpc.Request) (any, error) {
		var p rpc.HookParams
		if err := rpc.Decode(req.Params, &p); err != nil {
			return nil, err
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		return answer(p)
	})}
	go srv.Serve(context.Background(), l)
	t.Cleanup(func() { srv.Close() })
	return path, func() []rpc.HookParams {
		mu.Lock()
		defer mu.Unlock()
		return append([]rpc.HookParams(nil), got...)
	}
}

func TestForwardDelivers(t *testing.T) {
	socket, got := hookServer(t, func(rpc.HookParams) (any, error) { return map[string]bool{"accepted": true}, nil })
	var stderr bytes.Buffer
	payload := "{\"session_id\":\"abc\",\n\"prompt\":\"x\"}"
	if rc := Main([]string{"--socket", socket, "--launch", "internal:42", "UserPromptSubmit"}, strings.NewReader(payload), io.Discard, &stderr); rc != 0 || stderr.Len() != 0 {
		t.Fatalf("rc %d, stderr %q", rc, stderr.String())
	}
	p := got()
	if len(p) != 1 || p[0].LaunchID != "internal:42" || p[0].Event != "UserPromptSubmit" {
		t.Fatalf("daemon got %+v", p)
	}
	var v map[string]string
	if err := json.Unmarshal(p[0].Payload, &v); err != nil || v["session_id"] != "abc" || v["prompt"] != "x" {
		t.Fatalf("payload %s (%v)", p[0].Payload, err)
	}
}

func TestForwardReportsFailures(t *testing.T) {
	socket, _ := hookServer(t, func(rpc.HookParams) (any, error) {
		return nil, rpc.InvalidField("launch_id", "no such launch")
	})
	if err := Forward(socket, "internal:1", "Stop", []byte(`{}`), time.Second); err == nil || !strings.Contains(err.Error(), "no such launch") {
		t.Fatalf("daemon error: %v", err)
	}
	if err := Forward(filepath.Join(t.TempDir(), "none.sock"), "internal:1", "Stop", []byte(`{}`), time.Second); err == nil {
		t.Fatal("no daemon: no error")
	}
	// A daemon that never answers: the timeout ends the wait.
	path := filepath.Join(t.TempDir(), "mute.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
			time.Sleep(2 * time.Second)
		}
	}()
	if err := Forward(path, "internal:1", "Stop", []byte(`{}`), 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("mute daemon: %v", err)
	}
	// Main still exits 0 and says why on stderr; bad input reaches no daemon.
	var stderr bytes.Buffer
	if rc := Main([]string{"--socket", socket, "--launch", "internal:1", "Stop"}, strings.NewReader("oops"), io.Discard, &stderr); rc != 0 || !strings.Contains(stderr.String(), "dlgt hook: hook input is not JSON") {
		t.Fatalf("rc %d, stderr %q", rc, stderr.String())
	}
	stderr.Reset()
	if rc := Main([]string{"Stop"}, strings.NewReader("{}"), io.Discard, &stderr); rc != 0 || !strings.Contains(stderr.String(), "--socket and --launch are required") {
		t.Fatalf("rc %d, stderr %q", rc, stderr.String())
	}
}

// A hook whose delivery opened a pending request waits for its answer and
// prints it on stdout, the harness's decision; with no answer it prints
// nothing (the harness's own dialog stays).
func TestForwardWaitsForDecision(t *testing.T) {
	for _, c := range []struct{ output, want string }{
		{`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`, `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}` + "\n"},
		{"", ""},
	} {
		path := filepath.Join(t.TempDir(), "hooks.sock")
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var methods []string
		srv := &rpc.Server{Handler: rpc.HandlerFunc(func(ctx context.Context, peer rpc.Peer, req *rpc.Request) (any, error) {
			mu.Lock()
			methods = append(methods, req.Method)
			mu.Unlock()
			switch req.Method {
			case rpc.MethodHookDeliver:
				return map[string]any{"accepted": true, "pending_id": "prq_1"}, nil
			case rpc.MethodHookDecision:
				var p rpc.HookDecisionParams
				if err := rpc.Decode(req.Params, &p); err != nil || p.PendingID != "prq_1" || p.LaunchID != "internal:7" || p.WaitMS <= 0 {
					return nil, fmt.Errorf("decision params %s", req.Params)
				}
				return rpc.HookDecision{State: "answered", Output: c.output}, nil
			}
			return nil, fmt.Errorf("unexpected %s", req.Method)
		})}
		go srv.Serve(context.Background(), l)
		var stdout, stderr bytes.Buffer
		Main([]string{"--socket", path, "--launch", "internal:7", "PermissionRequest"}, strings.NewReader(`{"tool_name":"Bash"}`), &stdout, &stderr)
		srv.Close()
		if stdout.String() != c.want || stderr.Len() != 0 {
			t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
		}
		if strings.Join(methods, ",") != "internal.hook,internal.hook.decision" {
			t.Fatalf("methods %v", methods)
		}
	}
}
