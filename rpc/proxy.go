package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy is `dlgt rpc --stdio`: it reads JSONL requests from In, forwards
// those on the public allowlist to the daemon byte for byte, and copies
// every daemon line to Out byte for byte. Anything else is answered
// locally with INVALID_ARGUMENT and never reaches the daemon. Local, when
// set, answers methods the proxy implements itself (profile.list).
type Proxy struct {
	In    io.Reader
	Out   io.Writer
	Conn  net.Conn
	Local func(method string, params json.RawMessage) (any, error)
	// Rewrite, when set, may replace the params of a public request before
	// it is forwarded (nil keeps the line as read). An error answers the
	// request locally, as INVALID_ARGUMENT would be.
	Rewrite func(method string, params json.RawMessage) (json.RawMessage, error)
	// MaxLineBytes bounds one input line (default DefaultMaxLineBytes).
	MaxLineBytes int

	// outMu serializes whole lines on Out.
	outMu sync.Mutex
	// mu guards the fields that follow.
	mu          sync.Mutex
	outstanding int // forwarded requests not yet answered
	// streams counts event.subscribe requests forwarded and not refused;
	// subscribeIDs holds the ids of those whose ack has not arrived, so an
	// error ack (no stream follows) does not keep the proxy waiting.
	streams      int
	subscribeIDs map[string]int
	inputDone    bool
	idle         chan struct{}
}

// ErrProxyInput is returned by Run when the input was not valid JSONL; the
// proxy has answered the bad line and must exit non-zero.
var ErrProxyInput = errors.New("rpc proxy: invalid input")

// Run proxies until the input ends and every forwarded request has been
// answered (or, with a stream open, until the daemon closes), or until a
// framing or JSON error in the input.
func (p *Proxy) Run(ctx context.Context) error {
	if p.MaxLineBytes <= 0 {
		p.MaxLineBytes = DefaultMaxLineBytes
	}
	p.idle = make(chan struct{}, 1)
	daemonDone := make(chan error, 1)
	go func() { daemonDone <- p.copyDaemon() }()
	// The input is read on its own goroutine so that a closed daemon
	// connection or ctx ends Run even while the input is idle; the reader
	// is abandoned then (the process is about to exit).
	inputDone := make(chan error, 1)
	go func() { inputDone <- p.readInput() }()
	var inErr error
	select {
	case inErr = <-inputDone:
	case err := <-daemonDone:
		// The transport closed while the input is still open (or its EOF
		// is not read yet): end as after input EOF.
		p.Conn.Close()
		if p.pending() {
			return fmt.Errorf("daemon closed the connection with requests unanswered: %w", err)
		}
		return nil
	case <-ctx.Done():
		p.Conn.Close()
		<-daemonDone
		return ctx.Err()
	}
	p.mu.Lock()
	p.inputDone = true
	p.mu.Unlock()
	// Every request read before the end of the input (or before the bad
	// line) gets its one response line. After a bad line the proxy does not
	// stay for open streams: their ack is their response.
	streams := inErr == nil
	for {
		p.mu.Lock()
		finished := p.outstanding == 0 && (!streams || p.streams == 0)
		p.mu.Unlock()
		if finished {
			p.Conn.Close()
			<-daemonDone
			return inErr
		}
		select {
		case <-p.idle:
		case err := <-daemonDone:
			if p.pending() {
				return fmt.Errorf("daemon closed the connection with requests unanswered: %w", err)
			}
			return inErr
		case <-ctx.Done():
			p.Conn.Close()
			<-daemonDone
			return ctx.Err()
		}
	}
}

func (p *Proxy) pending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outstanding > 0
}

func (p *Proxy) writeOut(line []byte) error {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	_, err := p.Out.Write(line)
	return err
}

func (p *Proxy) readInput() error {
	br := bufio.NewReaderSize(p.In, 64<<10)
	for {
		line, err := readBoundedLine(br, p.MaxLineBytes)
		if errors.Is(err, errLineTooLong) {
			p.writeOut(MarshalResponse(nil, nil, InvalidField("request", "request line exceeds %d bytes", p.MaxLineBytes)))
			return ErrProxyInput
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := p.handleLine(line); ferr != nil {
				return ferr
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

func (p *Proxy) handleLine(line []byte) error {
	body := bytes.TrimRight(line, "\r\n")
	req, id, perr := ParseRequest(body)
	if perr != nil {
		p.writeOut(MarshalResponse(id, nil, perr))
		if !isJSONObject(body) {
			return ErrProxyInput // not a request at all: the stream is broken
		}
		// A JSON object that is not a valid request (an over-long id, a
		// field it does not know, a method that is not a string) is one bad
		// request, answered as the daemon answers it; the next line is read.
		return nil
	}
	if !IsPublic(req.Method) {
		return p.writeOut(MarshalResponse(req.ID, nil, InvalidField("method", "%q is not a public dlgt RPC method", req.Method)))
	}
	if req.Method == MethodProfileList && p.Local != nil {
		res, err := p.Local(req.Method, req.Params)
		if err != nil {
			return p.writeOut(MarshalResponse(req.ID, nil, AsError(err)))
		}
		return p.writeOut(MarshalResponse(req.ID, res, nil))
	}
	if p.Rewrite != nil {
		params, err := p.Rewrite(req.Method, req.Params)
		if err != nil {
			return p.writeOut(MarshalResponse(req.ID, nil, AsError(err)))
		}
		if params != nil {
			if line, err = Marshal(Request{ID: req.ID, Method: req.Method, Params: params}); err != nil {
				return p.writeOut(MarshalResponse(req.ID, nil, AsError(err)))
			}
		}
	}
	p.mu.Lock()
	p.outstanding++
	if req.Method == MethodEventSubscribe {
		p.streams++
		if p.subscribeIDs == nil {
			p.subscribeIDs = map[string]int{}
		}
		p.subscribeIDs[string(req.ID)]++
	}
	p.mu.Unlock()
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	if _, err := p.Conn.Write(line); err != nil {
		return fmt.Errorf("daemon connection: %w", err)
	}
	return nil
}

// isJSONObject reports whether line is one JSON object (with whitespace
// around it at most).
func isJSONObject(line []byte) bool {
	return json.Valid(line) && firstByte(line) == '{'
}

// copyDaemon forwards daemon lines to Out unchanged, counting responses
// (lines with an "id" member; stream events have none).
func (p *Proxy) copyDaemon() error {
	br := bufio.NewReaderSize(p.Conn, 64<<10)
	for {
		line, err := readBoundedLine(br, 1<<30)
		if len(line) > 0 {
			if werr := p.writeOut(line); werr != nil {
				return werr
			}
			var env struct {
				ID    json.RawMessage `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &env) == nil && env.ID != nil {
				p.mu.Lock()
				p.outstanding--
				if id := string(env.ID); p.subscribeIDs[id] > 0 {
					if p.subscribeIDs[id]--; p.subscribeIDs[id] == 0 {
						delete(p.subscribeIDs, id)
					}
					if env.Error != nil {
						p.streams-- // refused: no stream follows
					}
				}
				p.mu.Unlock()
				select {
				case p.idle <- struct{}{}:
				default:
				}
			}
		}
		if err != nil {
			return err
		}
	}
}

var errLineTooLong = errors.New("line too long")

// ErrLineTooLong is ReadBoundedLine's error for a line over its bound.
var ErrLineTooLong = errLineTooLong

// ReadBoundedLine is the stdio proxy's line reader, for other
// line-delimited front-ends (dlgt acp): one line including its newline
// (the last may lack it, with io.EOF); a line over max bytes is consumed
// to its end and reported as ErrLineTooLong without being buffered whole.
func ReadBoundedLine(br *bufio.Reader, max int) ([]byte, error) {
	return readBoundedLine(br, max)
}

// readBoundedLine returns one line including its newline (the last line
// may lack it, with io.EOF). A line over max bytes is consumed to its end
// and reported as errLineTooLong without being buffered whole.
func readBoundedLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return nil, errLineTooLong
		}
		return line, err
	}
}
