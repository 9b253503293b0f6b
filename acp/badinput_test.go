package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/client"
)

// rawAgent is `dlgt acp` driven line by line, for the input no ACP
// client library sends.
type rawAgent struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan struct{}
}

func startRaw(t *testing.T, c *client.Client, opts acp.Options) *rawAgent {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		acp.Serve(context.Background(), c, opts, inR, outW)
		outW.Close()
		close(done)
	}()
	r := &rawAgent{t: t, in: inW, out: bufio.NewReader(outR), done: done}
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-done
	})
	return r
}

type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data"`
	} `json:"error"`
}

// send writes line and reads the next message.
func (r *rawAgent) send(line string) rawReply {
	r.t.Helper()
	go r.in.Write([]byte(line + "\n"))
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := r.out.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case got := <-ch:
		if got.err != nil {
			r.t.Fatalf("reading the answer to %.80q: %v", line, got.err)
		}
		var rep rawReply
		if err := json.Unmarshal([]byte(got.s), &rep); err != nil {
			r.t.Fatalf("answer %q is not JSON: %v", got.s, err)
		}
		return rep
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no answer to %.80q", line)
	}
	return rawReply{}
}

// Every bad input gets its JSON-RPC error and the connection goes on.
func TestBadInput(t *testing.T) {
	w := newWorld(t)
	r := startRaw(t, w.c, acp.Options{Launch: claude(), Version: "test", MaxLineBytes: 4096})
	for _, tc := range []struct {
		name, line string
		code       int
		id         string
		message    string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null", ""},
		{"not an object", `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, -32600, "null", ""},
		{"no method nor id", `{"jsonrpc":"2.0"}`, -32600, "null", ""},
		{"over the size limit", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, -32600, "null", "exceeds 4096 bytes"},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"session/fly","params":{}}`, -32601, "3", ""},
		{"bad params", `{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":7,"mcpServers":[]}}`, -32602, "4", ""},
		{"unknown session", `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"acp-nosuch","prompt":[{"type":"text","text":"hi"}]}}`, -32002, "5", "acp-nosuch"},
		{"load of no Session", `{"jsonrpc":"2.0","id":6,"method":"session/load","params":{"sessionId":"claude:nosuch","cwd":"/","mcpServers":[]}}`, -32002, "6", "claude:nosuch"},
		{"empty prompt", `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"acp-nosuch","prompt":[]}}`, -32002, "7", ""},
	} {
		rep := r.send(tc.line)
		if rep.Error == nil || rep.Error.Code != tc.code || string(rep.ID) != tc.id || !strings.Contains(rep.Error.Message, tc.message) {
			t.Errorf("%s: answered id %s %+v, want code %d id %s message with %q", tc.name, rep.ID, rep.Error, tc.code, tc.id, tc.message)
		}
	}
	// The connection goes on.
	rep := r.send(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}`)
	if rep.Error != nil || string(rep.ID) != "9" || !strings.Contains(string(rep.Result), `"protocolVersion":1`) {
		t.Errorf("initialize after the bad input: %s %+v %s", rep.ID, rep.Error, rep.Result)
	}
}

// With no daemon to reach, a method that needs one says to run dlgt doctor.
func TestNoDaemon(t *testing.T) {
	home := t.TempDir()
	c, err := client.New(client.Options{Getenv: func(k string) string {
		if k == "DLGT_HOME" {
			return home
		}
		return ""
	}, Environ: func() []string { return nil }, NoAutostart: true, Host: "local"})
	if err != nil {
		t.Fatal(err)
	}
	r := startRaw(t, c, acp.Options{Launch: claude(), Version: "test"})
	rep := r.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	if rep.Error == nil || !strings.Contains(rep.Error.Message, "dlgt doctor") {
		t.Errorf("session/new without a daemon: %+v", rep.Error)
	}
	rep = r.send(`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	if rep.Error == nil || !strings.Contains(rep.Error.Message, "dlgt doctor") {
		t.Errorf("session/list without a daemon: %+v", rep.Error)
	}
}
