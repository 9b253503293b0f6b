package mockapi

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBody bounds a recorded request body; the CLIs send tens of KB of system
// prompt and tool schemas plus whatever the test types.
const maxBody = 64 << 20

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		rd = zr
	}
	b, err := io.ReadAll(io.LimitReader(rd, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("request body over %d bytes", maxBody)
	}
	return b, nil
}

// sse writes a text/event-stream response, flushing after every event. Its
// error is sticky: once the client has gone away every later call is a no-op, so callers can write a whole stream linearly and
// check once.
type sse struct {
	w   http.ResponseWriter
	ctx context.Context
	err error
}

func startSSE(w http.ResponseWriter, r *http.Request) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, ctx: r.Context()}
}

// event writes one "event: name" / "data: json" frame and flushes it.
func (e *sse) event(name string, data any) {
	if e.err == nil {
		e.err = e.ctx.Err()
	}
	if e.err != nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		e.err = err
		return
	}
	if _, e.err = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); e.err != nil {
		return
	}
	e.err = http.NewResponseController(e.w).Flush()
}

// sleep waits d, or less if the client disconnects.
func (e *sse) sleep(d time.Duration) {
	if e.err != nil || d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.ctx.Done():
		e.err = e.ctx.Err()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// obj is shorthand for JSON objects in event payloads.
type obj = map[string]any

// data writes one unnamed "data: json" frame, ended by CRLF CRLF as the
// Gemini API's SSE is, and flushes it.
func (e *sse) data(v any) {
	if e.err == nil {
		e.err = e.ctx.Err()
	}
	if e.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.err = err
		return
	}
	if _, e.err = fmt.Fprintf(e.w, "data: %s\r\n\r\n", b); e.err != nil {
		return
	}
	e.err = http.NewResponseController(e.w).Flush()
}
