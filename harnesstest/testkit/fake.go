package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// FakeDaemon serves canned results on a Unix socket and records the
// requests it gets.
type FakeDaemon struct {
	// Socket is where it listens (DLGT_SOCKET for a client of it).
	Socket string

	mu       sync.Mutex
	requests []rpc.Request
	results  map[string]any   // method -> result
	pages    map[string][]any // method -> results in order (last repeats)
}

// NewFakeDaemon starts a FakeDaemon until the test ends. A method with no
// canned result is INVALID_ARGUMENT.
func NewFakeDaemon(t testing.TB) *FakeDaemon {
	t.Helper()
	d := &FakeDaemon{Socket: filepath.Join(ShortDir(t), "s"), results: map[string]any{}, pages: map[string][]any{}}
	l, err := net.Listen("unix", d.Socket)
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

func (d *FakeDaemon) serve(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
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
	if _, ok := res.(BlockUntilClosed); ok {
		d.mu.Unlock()
		<-ctx.Done()
		d.mu.Lock()
		return nil, ctx.Err()
	}
	return res, nil
}

// BlockUntilClosed as a canned result holds the request until the client
// goes away (a long poll that never ends).
type BlockUntilClosed struct{}

// Set cans the result of method: a value, an *rpc.Error,
// BlockUntilClosed, or an EventStream.
func (d *FakeDaemon) Set(method string, result any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.results[method] = result
}

// SetPages cans results of method returned in order, the last repeating.
func (d *FakeDaemon) SetPages(method string, pages ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pages[method] = pages
}

// Params returns the raw params of every recorded request of method.
func (d *FakeDaemon) Params(method string) []json.RawMessage {
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

// Count is how many requests it got.
func (d *FakeDaemon) Count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requests)
}

// EventStream is a canned event.subscribe answer: an ack, then Lines, then
// it holds the stream until the connection ends (a minute at most).
type EventStream struct{ Lines []string }

// Ack is the subscription's acknowledgement.
func (s EventStream) Ack() any { return rpc.SubscribeAck{Subscribed: true} }

// Run sends the lines.
func (s EventStream) Run(ctx context.Context, emit func([]byte) error) error {
	for _, l := range s.Lines {
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

// RelaySSH is a DLGT_SSH_COMMAND whose every host is d: the test binary
// in its relay role (Main). argsFile receives each connection's ssh
// arguments.
func RelaySSH(t testing.TB, d *FakeDaemon) (cmd, argsFile string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argsFile = filepath.Join(t.TempDir(), "ssh-args")
	return fmt.Sprintf("%s=relay DLGT_RELAY_SOCKET=%s DLGT_RELAY_ARGS=%s exec %s", RoleEnv, d.Socket, argsFile, exe), argsFile
}
