package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The test binary doubles as the remote side of an ssh connection
// (DLGT_TEST_ROLE=relay): it greets as `dlgt rpc --stdio --remote` does
// and relays the connection to the socket DLGT_RELAY_SOCKET, recording
// its arguments (ssh's options and destination) in DLGT_RELAY_ARGS.
func TestMain(m *testing.M) {
	if os.Getenv("DLGT_TEST_ROLE") == "relay" {
		os.Exit(relayMain())
	}
	os.Exit(m.Run())
}

func relayMain() int {
	os.WriteFile(os.Getenv("DLGT_RELAY_ARGS"), []byte(strings.Join(os.Args[1:], "\n")+"\n"), 0o600)
	c, err := net.Dial("unix", os.Getenv("DLGT_RELAY_SOCKET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	os.Stdout.Write(client.HelloLine(rpc.SchemaVersion))
	go func() { io.Copy(c, os.Stdin); c.(*net.UnixConn).CloseWrite() }()
	io.Copy(os.Stdout, c)
	return 0
}

// relaySSH is a DLGT_SSH_COMMAND whose every host is the fake daemon d.
func relaySSH(t *testing.T, d *fakeDaemon) (cmd, argsFile string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argsFile = filepath.Join(t.TempDir(), "ssh-args")
	return fmt.Sprintf("DLGT_TEST_ROLE=relay DLGT_RELAY_SOCKET=%s DLGT_RELAY_ARGS=%s exec %s", d.socket, argsFile, exe), argsFile
}

// fakeDaemon serves canned results on a Unix socket and records requests.
type fakeDaemon struct {
	socket string

	mu       sync.Mutex
	requests []rpc.Request
	results  map[string]any // method -> result, or *rpc.Error
	// pages, when set for a method, are returned in order (last repeats).
	pages map[string][]any
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "dlgt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &fakeDaemon{socket: filepath.Join(dir, "s"), results: map[string]any{}, pages: map[string][]any{}}
	l, err := net.Listen("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &rpc.Server{Handler: rpc.HandlerFunc(d.serve), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		<-done
	})
	return d
}

func (d *fakeDaemon) serve(_ context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, *req)
	var res any
	if pages := d.pages[req.Method]; len(pages) > 0 {
		res = pages[0]
		if len(pages) > 1 {
			d.pages[req.Method] = pages[1:]
		}
	} else if r, ok := d.results[req.Method]; ok {
		res = r
	} else {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "fake daemon: no canned result for %s", req.Method)
	}
	if re, ok := res.(*rpc.Error); ok {
		return nil, re
	}
	return res, nil
}

func (d *fakeDaemon) set(method string, result any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.results[method] = result
}

// params returns the raw params of every recorded request of method.
func (d *fakeDaemon) params(method string) []json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []json.RawMessage
	for _, r := range d.requests {
		if r.Method == method {
			out = append(out, r.Params)
		}
	}
	return out
}

func (d *fakeDaemon) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requests)
}

// testClient is a Client of the fake daemon d (its socket pinned, no
// autostart, no profiles unless vars name a file) with the client
// environment environ.
func testClient(t *testing.T, d *fakeDaemon, vars map[string]string, environ []string) *client.Client {
	t.Helper()
	all := map[string]string{"DLGT_HOME": t.TempDir(), "DLGT_NO_AUTOSTART": "1", "DLGT_SOCKET": d.socket,
		"DLGT_PROFILES": filepath.Join(t.TempDir(), "none.toml")}
	for k, v := range vars {
		all[k] = v
	}
	c, err := client.New(client.Options{Getenv: func(k string) string { return all[k] }, Environ: func() []string { return environ }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testServer connects an MCP client to the server of a testClient.
func testServer(t *testing.T, d *fakeDaemon, vars map[string]string, environ []string, waitMax time.Duration) *sdk.ClientSession {
	t.Helper()
	return connect(t, NewServer(testClient(t, d, vars, environ), Options{WaitMax: waitMax}))
}

// connect runs s on in-memory transports and returns the client's end.
func connect(t *testing.T, s *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, st)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// callTool calls name with args and returns the result's first text block
// and the JSON document of its second. No structuredContent may be set: the
// CLIs would show it to the model in place of the text.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: structuredContent is set: %v", name, res.StructuredContent)
	}
	if len(res.Content) == 1 && res.IsError {
		// The SDK's own refusal of arguments that break the input schema
		// (a wrong type) carries no document.
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			return tc.Text, nil, true
		}
	}
	if len(res.Content) != 2 {
		t.Fatalf("%s: %d content blocks, want text and JSON", name, len(res.Content))
	}
	text, ok1 := res.Content[0].(*sdk.TextContent)
	doc, ok2 := res.Content[1].(*sdk.TextContent)
	if !ok1 || !ok2 {
		t.Fatalf("%s: content blocks %T %T, want two text blocks", name, res.Content[0], res.Content[1])
	}
	var structured map[string]any
	if err := json.Unmarshal([]byte(doc.Text), &structured); err != nil {
		t.Fatalf("%s: second block is not a JSON object: %v\n%s", name, err, doc.Text)
	}
	return text.Text, structured, res.IsError
}

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }
