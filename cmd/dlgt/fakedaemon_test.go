package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

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

func (d *fakeDaemon) serve(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
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
	if _, ok := res.(blockUntilClosed); ok {
		d.mu.Unlock()
		<-ctx.Done()
		d.mu.Lock()
		return nil, ctx.Err()
	}
	return res, nil
}

// blockUntilClosed as a canned result makes the fake daemon hold the
// request until the client goes away (a long poll that never ends).
type blockUntilClosed struct{}

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

// cliEnv builds an env pointed at the fake daemon with a fixed client
// environment.
func cliEnv(t *testing.T, d *fakeDaemon, vars map[string]string, environ []string, stdin string) (*env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	if vars == nil {
		vars = map[string]string{}
	}
	vars["DLGT_SOCKET"] = d.socket
	if _, ok := vars["DLGT_PROFILES"]; !ok {
		vars["DLGT_PROFILES"] = filepath.Join(t.TempDir(), "none.toml")
	}
	e, out, errb := testEnv(t, vars, stdin)
	e.environ = func() []string { return environ }
	return e, out, errb
}

// runCLI runs args and returns the exit status and stdout.
func runCLI(t *testing.T, e *env, out *bytes.Buffer, args ...string) (int, string) {
	t.Helper()
	code := run(args, e)
	return code, out.String()
}

// oneJSONLine checks that s is exactly one compact JSON object line and
// returns it decoded.
func oneJSONLine(t *testing.T, s string) map[string]any {
	t.Helper()
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Fatalf("stdout %q is not exactly one line", s)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("stdout %q: %v", s, err)
	}
	return m
}

// lineWriter is a goroutine-safe buffer that signals when n lines arrived.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	n    int
	done chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.done != nil && bytes.Count(w.buf.Bytes(), []byte("\n")) >= w.n {
		close(w.done)
		w.done = nil
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// eventStream is a fake event.subscribe stream: an ack, then lines, then it
// blocks until the connection ends.
type eventStream struct {
	lines []string
}

func (s eventStream) Ack() any { return rpc.SubscribeAck{Subscribed: true} }

func (s eventStream) Run(ctx context.Context, emit func([]byte) error) error {
	for _, l := range s.lines {
		if err := emit([]byte(l)); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
	}
	return nil
}
