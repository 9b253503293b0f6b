package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Client is a JSONL client of one daemon socket. Calls on one Client are
// serialized; open several Clients for concurrent long polls.
type Client struct {
	// mu serializes calls and guards the fields that follow.
	mu     sync.Mutex
	nc     net.Conn
	br     *bufio.Reader
	nextID int
}

// Dial connects to the daemon socket at path. A missing or dead socket is
// RPC_UNAVAILABLE.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, &Error{Code: CodeRPCUnavailable, Message: fmt.Sprintf("daemon socket %s: %v", path, err)}
	}
	return NewClient(nc), nil
}

// NewClient wraps an established connection.
func NewClient(nc net.Conn) *Client {
	return &Client{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// CallRaw sends one request and returns the raw response line (without its
// newline). ctx cancellation closes the connection, so a blocked read ends.
func (c *Client) CallRaw(ctx context.Context, method string, params any) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	p, err := Marshal(params)
	if err != nil {
		return nil, err
	}
	line, _ := Marshal(Request{ID: json.RawMessage(strconv.Quote(id)), Method: method, Params: p})
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.nc.Write(append(line, '\n')); err != nil {
		return nil, c.transportErr(ctx, err)
	}
	for {
		resp, err := c.readLine()
		if err != nil {
			return nil, c.transportErr(ctx, err)
		}
		var env struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(resp, &env) == nil && string(env.ID) == strconv.Quote(id) {
			return resp, nil
		}
		if json.Unmarshal(resp, &env) == nil && string(env.ID) == `""` {
			// A connection-level refusal (cap, peer) carries no id.
			return resp, nil
		}
	}
}

func (c *Client) transportErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &Error{Code: CodeRPCUnavailable, Message: "daemon connection: " + err.Error()}
}

// readLine reads one response line of any length.
func (c *Client) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := c.br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimRight(buf, "\n"), nil
	}
}

// Call sends a request and decodes its result into out (which may be nil).
// A wire error is returned as *Error.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	line, err := c.CallRaw(ctx, method, params)
	if err != nil {
		return err
	}
	return DecodeResponse(line, out)
}

// DecodeResponse splits a response line into its result or *Error.
func DecodeResponse(line []byte, out any) error {
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return &Error{Code: CodeInternal, Message: "malformed response from daemon: " + err.Error()}
	}
	if resp.Error != nil {
		return resp.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return &Error{Code: CodeInternal, Message: "unexpected result shape: " + err.Error()}
	}
	return nil
}

// Subscribe starts a stream (event.subscribe): it returns the initial
// response's result and a function yielding each following line. The
// Client must not be used for other calls afterwards.
func (c *Client) Subscribe(ctx context.Context, method string, params any) (json.RawMessage, func() ([]byte, error), error) {
	line, err := c.CallRaw(ctx, method, params)
	if err != nil {
		return nil, nil, err
	}
	var ack json.RawMessage
	if err := DecodeResponse(line, &ack); err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	next := func() ([]byte, error) {
		l, err := c.readLine()
		if err != nil {
			stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			return nil, c.transportErr(ctx, err)
		}
		return l, nil
	}
	return ack, next, nil
}
