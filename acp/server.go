package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Options are what the agent needs beyond the Client.
type Options struct {
	// Launch is the command line's launch (profile, harness, model,
	// effort, harness options, auto-approve, worktree); each session/new
	// resolves it with the editor's cwd.
	Launch client.LaunchSpec
	// Version is agentInfo.version.
	Version string
	// Harnesses are the registry's harnesses (how each takes MCP
	// servers); nil is harness.All().
	Harnesses []harness.Descriptor
	// MaxLineBytes bounds one input line; 0 is rpc.DefaultMaxLineBytes,
	// the bound of `dlgt rpc --stdio`.
	MaxLineBytes int
	// Stderr receives diagnostics; nil discards them.
	Stderr io.Writer
	// ListPage is session/list's page size (0: 50).
	ListPage int
	// WarmSpares is how many spares session/new asks the daemon to keep
	// of its launch (0: 1; negative: none, so the first prompt starts the
	// harness cold), so the first prompt finds the harness up.
	WarmSpares int
}

// Serve runs the ACP agent on in/out until in ends (the editor closed
// the connection) or ctx ends. Sessions stay with the daemon: a running
// turn finishes there and its result is retained for the next load.
func Serve(ctx context.Context, c *client.Client, opts Options, in io.Reader, out io.Writer) error {
	if opts.Harnesses == nil {
		opts.Harnesses = harness.All()
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = rpc.DefaultMaxLineBytes
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.WarmSpares == 0 {
		opts.WarmSpares = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	a := newAgent(ctx, c, opts)
	conn := sdk.NewAgentSideConnection(a, w, pr)
	conn.SetLogger(slog.New(slog.NewTextHandler(opts.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	a.conn = conn
	inputDone := make(chan error, 1)
	go func() { inputDone <- guard(in, pw, w, opts.MaxLineBytes) }()
	var inErr error
	select {
	case inErr = <-inputDone:
	case <-conn.Done():
	case <-ctx.Done():
	}
	// The editor is gone: end the waits of running prompts (their turns go
	// on in the daemon), let the requests read so far answer, then stop.
	a.close()
	deadline := time.Now().Add(drainWait)
	for w.outstanding.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	pw.CloseWithError(inErr)
	return nil
}

// drainWait bounds how long requests read before the input ended may
// take to answer.
const drainWait = 5 * time.Second

// lineWriter serializes writes to the editor: the SDK writes each
// message with one Write, and so does guard, so no two interleave. It
// counts the editor's requests not answered yet (outstanding).
type lineWriter struct {
	mu          sync.Mutex
	w           io.Writer
	outstanding atomic.Int64
}

func (l *lineWriter) Write(p []byte) (int, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(p, &m) == nil && m.Method == "" && len(m.ID) > 0 && string(m.ID) != "null" {
		defer l.outstanding.Add(-1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// writeRaw writes a message that answers no counted request.
func (l *lineWriter) writeRaw(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(p)
}

// guard reads the editor's lines, bounded, and passes the well-formed
// ones on to the SDK's connection; a line that is not JSON, not a
// JSON-RPC message, or over the bound is answered here with the JSON-RPC
// error (id null) and dropped, and the connection goes on.
func guard(in io.Reader, pass io.Writer, out *lineWriter, max int) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := rpc.ReadBoundedLine(br, max)
		if errors.Is(err, rpc.ErrLineTooLong) {
			out.writeError(invalidRequest(fmt.Sprintf("the line exceeds %d bytes (the bound of `dlgt rpc --stdio` too)", max)))
			continue
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			request, rerr := checkLine(t)
			switch {
			case rerr != nil:
				out.writeError(rerr)
			default:
				if request {
					out.outstanding.Add(1)
				}
				if _, werr := pass.Write(append(t, '\n')); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// checkLine is the JSON-RPC error of a line the SDK would only log: not
// JSON (-32700), or not a request, notification or response (-32600).
// request: the line is a request, which the agent answers.
func checkLine(line []byte) (request bool, rerr *sdk.RequestError) {
	if !json.Valid(line) {
		return false, &sdk.RequestError{Code: -32700, Message: "Parse error: the line is not JSON"}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return false, invalidRequest("a message is one JSON-RPC 2.0 object")
	}
	if m.Method == nil && m.ID == nil {
		return false, invalidRequest("the message has neither a method nor an id")
	}
	if m.Method != nil && *m.Method == "" {
		return false, invalidRequest("the method is empty")
	}
	return m.Method != nil && m.ID != nil && string(m.ID) != "null", nil
}

// writeError answers a line that names no request it could answer.
func (l *lineWriter) writeError(e *sdk.RequestError) {
	b, _ := json.Marshal(struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      *int              `json:"id"`
		Error   *sdk.RequestError `json:"error"`
	}{"2.0", nil, e})
	l.writeRaw(append(b, '\n'))
}

func invalidRequest(why string) *sdk.RequestError {
	return &sdk.RequestError{Code: -32600, Message: "Invalid request: " + why}
}
