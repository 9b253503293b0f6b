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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ioTimeout bounds every blocking read or write of these tests. It is a
// hang guard, never a timing assertion.
const ioTimeout = 20 * time.Second

// mux is a trivial Handler: it serves the methods in its map and answers
// anything else with INVALID_ARGUMENT, as the daemon's runtime does.
type mux map[string]func(ctx context.Context, peer Peer, req *Request) (any, error)

func (m mux) ServeRPC(ctx context.Context, peer Peer, req *Request) (any, error) {
	if f, ok := m[req.Method]; ok {
		return f(ctx, peer, req)
	}
	return nil, InvalidField("method", "unknown method %q", req.Method)
}

// echoResult is what the "echo" method answers.
type echoResult struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	UID    int             `json:"uid"`
}

func baseMux() mux {
	return mux{
		"echo": func(ctx context.Context, peer Peer, req *Request) (any, error) {
			return echoResult{Method: req.Method, Params: req.Params, UID: peer.UID}, nil
		},
		"panic": func(ctx context.Context, peer Peer, req *Request) (any, error) {
			panic("handler bug")
		},
	}
}

// startServer serves h on a fresh socket in a temporary directory and
// stops the server when the test ends.
func startServer(t testing.TB, h Handler, lim Limits) (*Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	return startServerAt(t, h, lim, path), path
}

func startServerAt(t testing.TB, h Handler, lim Limits, path string) *Server {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: h, Limits: lim}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		srv.Close()
		select {
		case err := <-done:
			if !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		case <-time.After(ioTimeout):
			t.Errorf("Serve did not return after Close")
		}
	})
	return srv
}

// tconn is a raw test client of the socket.
type tconn struct {
	t  testing.TB
	nc *net.UnixConn
	br *bufio.Reader
}

func dialT(t testing.TB, path string) *tconn {
	t.Helper()
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &tconn{t: t, nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
}

func (c *tconn) write(s string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readLine reads one line (without its newline) under a deadline.
func (c *tconn) readLine() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	line, err := c.br.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read: %v (partial %q)", err, line)
	}
	return bytes.TrimSuffix(line, []byte("\n"))
}

func (c *tconn) readResp() Response {
	c.t.Helper()
	line := c.readLine()
	var r Response
	if err := json.Unmarshal(line, &r); err != nil {
		c.t.Fatalf("response %q: %v", line, err)
	}
	if (r.Error == nil) == (r.Result == nil) {
		c.t.Fatalf("response %q must carry exactly one of result and error", line)
	}
	return r
}

// call sends one request line and returns its response.
func (c *tconn) call(line string) Response {
	c.t.Helper()
	c.write(line + "\n")
	return c.readResp()
}

// expectEOF reads until the server closes the connection, discarding
// whatever it still had queued.
func (c *tconn) expectEOF() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	_, err := io.Copy(io.Discard, c.br)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatalf("want EOF, got %v", err)
	}
}

func wantCode(t testing.TB, r Response, code Code) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("response %+v (error %+v), want %s", r, r.Error, code)
	}
}

func wantResult(t testing.TB, r Response, id string) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("id %s: error %v", r.ID, r.Error)
	}
	if string(r.ID) != id {
		t.Fatalf("id = %s, want %s", r.ID, id)
	}
}

// waitFor polls cond until it holds or the hang guard expires.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerBlankLinesIgnored(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	c := dialT(t, path)
	c.write("\n\r\n   \n\t\r\n")
	r := c.call(`{"id":"after-blanks","method":"echo"}`)
	wantResult(t, r, `"after-blanks"`)
	// CRLF framing is accepted too.
	c.write(`{"id":"crlf","method":"echo"}` + "\r\n")
	wantResult(t, c.readResp(), `"crlf"`)
}

func TestServerInvalidJSONKeepsConnection(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	c := dialT(t, path)
	r := c.call(`{"id":"r1","method":"echo","params":{`)
	wantCode(t, r, CodeInvalidArgument)
	if string(r.ID) != `"r1"` {
		t.Fatalf("id = %s, want the recovered \"r1\"", r.ID)
	}
	r = c.call(`not json at all`)
	wantCode(t, r, CodeInvalidArgument)
	if string(r.ID) != `""` {
		t.Fatalf("id = %s, want \"\"", r.ID)
	}
	r = c.call(`{"id":7,"method":"echo","extra":true}`)
	wantCode(t, r, CodeInvalidArgument)
	if string(r.ID) != `7` || !strings.Contains(r.Error.Message, "extra") {
		t.Fatalf("got %s %q, want id 7 naming extra", r.ID, r.Error.Message)
	}
	wantResult(t, c.call(`{"id":8,"method":"echo","params":{"a":1}}`), `8`)
}

func TestServerUnknownMethod(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	c := dialT(t, path)
	r := c.call(`{"id":"u","method":"no.such.method"}`)
	wantCode(t, r, CodeInvalidArgument)
	if string(r.ID) != `"u"` || !strings.Contains(r.Error.Message, "no.such.method") {
		t.Fatalf("got %s %q", r.ID, r.Error.Message)
	}
	wantResult(t, c.call(`{"id":"v","method":"echo"}`), `"v"`)
}

func TestServerIDBound(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	c := dialT(t, path)
	ok := strings.Repeat("k", MaxIDBytes)
	wantResult(t, c.call(`{"id":"`+ok+`","method":"echo"}`), `"`+ok+`"`)

	long := strings.Repeat("x", MaxIDBytes+1)
	r := c.call(`{"id":"` + long + `","method":"echo"}`)
	wantCode(t, r, CodeInvalidArgument)
	var echoed string
	if err := json.Unmarshal(r.ID, &echoed); err != nil {
		t.Fatalf("echoed id %s: %v", r.ID, err)
	}
	if echoed == "" || len(echoed) >= MaxIDBytes || !strings.HasPrefix(long, echoed) {
		t.Fatalf("echoed id %q is not a truncated prefix", echoed)
	}
	wantResult(t, c.call(`{"id":1,"method":"echo"}`), `1`)
}

func TestServerOversizedLine(t *testing.T) {
	t.Run("2 MiB line at default limits", func(t *testing.T) {
		_, path := startServer(t, baseMux(), Limits{})
		c := dialT(t, path)
		big := `{"id":"big","method":"echo","params":{"pad":"` + strings.Repeat("p", 2<<20) + `"}}` + "\n"
		c.write(big)
		r := c.readResp()
		wantCode(t, r, CodeInvalidArgument)
		wantResult(t, c.call(`{"id":"next","method":"echo"}`), `"next"`)
	})
	t.Run("discarded as it streams", func(t *testing.T) {
		// A 16 MiB line against a 64 KiB limit: if the server buffered the
		// line it would allocate at least 16 MiB. The client writes one
		// reused chunk, so nearly all allocation is the server's.
		_, path := startServer(t, baseMux(), Limits{MaxLineBytes: 64 << 10})
		c := dialT(t, path)
		wantResult(t, c.call(`{"id":"warm","method":"echo"}`), `"warm"`)
		chunk := bytes.Repeat([]byte("z"), 64<<10)
		const total = 16 << 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
		for n := 0; n < total; n += len(chunk) {
			if _, err := c.nc.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		c.write("\n")
		r := c.readResp()
		runtime.ReadMemStats(&after)
		wantCode(t, r, CodeInvalidArgument)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > total/4 {
			t.Fatalf("reading a %d-byte line allocated %d bytes; it must not be buffered whole", total, grew)
		}
		wantResult(t, c.call(`{"id":"after","method":"echo"}`), `"after"`)
	})
}

func TestServerConnectionCap(t *testing.T) {
	srv, path := startServer(t, baseMux(), Limits{})
	var conns []*tconn
	for i := 0; i < DefaultMaxConnections; i++ {
		c := dialT(t, path)
		wantResult(t, c.call(fmt.Sprintf(`{"id":%d,"method":"echo"}`, i)), strconv.Itoa(i))
		conns = append(conns, c)
	}
	extra := dialT(t, path)
	r := extra.readResp()
	wantCode(t, r, CodeRPCUnavailable)
	if string(r.ID) != `""` {
		t.Fatalf("refusal id = %s, want \"\"", r.ID)
	}
	extra.expectEOF()

	// Every admitted connection still works; closing one frees a slot.
	for i, c := range conns {
		wantResult(t, c.call(fmt.Sprintf(`{"id":%d,"method":"echo"}`, 100+i)), strconv.Itoa(100+i))
	}
	conns[0].nc.Close()
	waitFor(t, "the closed connection to be released", func() bool { return srv.ConnCount() == DefaultMaxConnections-1 })
	wantResult(t, dialT(t, path).call(`{"id":"again","method":"echo"}`), `"again"`)
}

func TestServerRateLimit(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{RateLimit: 3, RateWindow: time.Hour})
	c := dialT(t, path)
	var lines strings.Builder
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&lines, `{"id":"r%d","method":"echo"}`+"\n", i)
	}
	c.write(lines.String())
	got := map[string]Response{}
	for i := 0; i < 5; i++ {
		r := c.readResp()
		got[string(r.ID)] = r
	}
	for i := 0; i < 3; i++ {
		wantResult(t, got[fmt.Sprintf(`"r%d"`, i)], fmt.Sprintf(`"r%d"`, i))
	}
	for i := 3; i < 5; i++ {
		wantCode(t, got[fmt.Sprintf(`"r%d"`, i)], CodeRPCUnavailable)
	}
	// The budget is per connection.
	wantResult(t, dialT(t, path).call(`{"id":"other","method":"echo"}`), `"other"`)
}

// lineStream emits lines of one KiB: first `before` of them, then it waits
// for release and emits until the connection is dropped (or, with more
// set, `more` lines and then waits for the end of the stream).
type lineStream struct {
	before   int
	more     int
	emitted  chan struct{} // closed after the first `before` lines
	release  chan struct{}
	flooded  chan struct{} // closed after `more` further lines
	finished chan error    // Run's result
}

func newLineStream(before int) *lineStream {
	return &lineStream{before: before, emitted: make(chan struct{}), release: make(chan struct{}), flooded: make(chan struct{}), finished: make(chan error, 1)}
}

func (s *lineStream) Ack() any { return map[string]bool{"streaming": true} }

func (s *lineStream) Run(ctx context.Context, emit func([]byte) error) error {
	line := []byte(`{"event":"` + strings.Repeat("e", 1000) + `"}`)
	for i := 0; i < s.before; i++ {
		if err := emit(line); err != nil {
			s.finished <- err
			return err
		}
	}
	close(s.emitted)
	select {
	case <-s.release:
	case <-ctx.Done():
		s.finished <- ctx.Err()
		return ctx.Err()
	}
	for n := 1; ; n++ {
		if err := emit(line); err != nil {
			s.finished <- err
			return err
		}
		if n == s.more {
			close(s.flooded)
			<-ctx.Done()
		}
		if ctx.Err() != nil {
			s.finished <- ctx.Err()
			return ctx.Err()
		}
	}
}

func TestServerStream(t *testing.T) {
	st := newLineStream(3)
	m := baseMux()
	m["stream"] = func(ctx context.Context, peer Peer, req *Request) (any, error) { return st, nil }
	_, path := startServer(t, m, Limits{})
	c := dialT(t, path)
	r := c.call(`{"id":"s","method":"stream"}`)
	wantResult(t, r, `"s"`)
	if string(r.Result) != `{"streaming":true}` {
		t.Fatalf("ack = %s", r.Result)
	}
	for i := 0; i < 3; i++ {
		if line := c.readLine(); !bytes.HasPrefix(line, []byte(`{"event":`)) {
			t.Fatalf("stream line %q", line)
		}
	}
	c.nc.Close()
	select {
	case <-st.finished:
	case <-time.After(ioTimeout):
		t.Fatal("stream did not end when its client closed the connection")
	}
}

func TestServerSlowClient(t *testing.T) {
	t.Run("pending budget", func(t *testing.T) {
		// The write timeout is far beyond the test's hang guard, so the
		// disconnect below can only come from the pending-output budget.
		st := newLineStream(1024) // 1 MiB, well past the socket buffers
		m := baseMux()
		m["stream"] = func(ctx context.Context, peer Peer, req *Request) (any, error) { return st, nil }
		srv, path := startServer(t, m, Limits{PendingBytes: 2 << 20, WriteTimeout: time.Hour})

		slow := dialT(t, path)
		slow.write(`{"id":"sub","method":"stream"}` + "\n") // and never read
		select {
		case <-st.emitted:
		case <-time.After(ioTimeout):
			t.Fatal("stream did not start")
		}
		// Meanwhile the slow client has a megabyte unread; another client
		// is still answered, repeatedly.
		fast := dialT(t, path)
		for i := 0; i < 20; i++ {
			wantResult(t, fast.call(fmt.Sprintf(`{"id":%d,"method":"echo"}`, i)), strconv.Itoa(i))
		}
		close(st.release)
		select {
		case err := <-st.finished:
			if err == nil {
				t.Fatal("stream ended without an error")
			}
		case <-time.After(ioTimeout):
			t.Fatal("the slow client was never cut off")
		}
		waitFor(t, "the slow client to be disconnected", func() bool { return srv.ConnCount() == 1 })
		slow.expectEOF()
		wantResult(t, fast.call(`{"id":"still","method":"echo"}`), `"still"`)
	})
	t.Run("write timeout", func(t *testing.T) {
		st := newLineStream(1024)
		close(st.release)
		m := baseMux()
		m["stream"] = func(ctx context.Context, peer Peer, req *Request) (any, error) { return st, nil }
		srv, path := startServer(t, m, Limits{PendingBytes: 1 << 30, WriteTimeout: 50 * time.Millisecond})
		slow := dialT(t, path)
		slow.write(`{"id":"sub","method":"stream"}` + "\n")
		select {
		case <-st.finished:
		case <-time.After(ioTimeout):
			t.Fatal("the stalled writer was never cut off")
		}
		waitFor(t, "the slow client to be disconnected", func() bool { return srv.ConnCount() == 0 })
		slow.expectEOF()
	})
	t.Run("close does not wait for a stalled client", func(t *testing.T) {
		// 32 MiB unread is far more than any socket buffer holds, so the
		// server's writer is stalled on this client when Close is called.
		st := newLineStream(0)
		st.more = 32 << 10
		close(st.release)
		m := baseMux()
		m["stream"] = func(ctx context.Context, peer Peer, req *Request) (any, error) { return st, nil }
		srv, path := startServer(t, m, Limits{PendingBytes: 1 << 30, WriteTimeout: time.Hour})
		slow := dialT(t, path)
		slow.write(`{"id":"sub","method":"stream"}` + "\n")
		select {
		case <-st.flooded:
		case <-time.After(ioTimeout):
			t.Fatal("stream did not flood")
		}
		closed := make(chan struct{})
		go func() { srv.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(ioTimeout):
			t.Fatal("Server.Close blocked on a client that does not read")
		}
	})
}

func TestServerHandlerPanic(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	c := dialT(t, path)
	r := c.call(`{"id":"p","method":"panic"}`)
	wantCode(t, r, CodeInternal)
	if string(r.ID) != `"p"` || strings.Contains(r.Error.Message, "handler bug") {
		t.Fatalf("panic answer %s %q: want the id and no panic value", r.ID, r.Error.Message)
	}
	wantResult(t, c.call(`{"id":"same-conn","method":"echo"}`), `"same-conn"`)
	wantResult(t, dialT(t, path).call(`{"id":"new-conn","method":"echo"}`), `"new-conn"`)
}

func TestServerConcurrentRequests(t *testing.T) {
	const n = 64
	var arrived sync.WaitGroup
	arrived.Add(n)
	allIn := make(chan struct{})
	go func() { arrived.Wait(); close(allIn) }()
	m := mux{"barrier": func(ctx context.Context, peer Peer, req *Request) (any, error) {
		// Each request answers only once all n run at once, proving the
		// connection serves them concurrently.
		arrived.Done()
		select {
		case <-allIn:
			return json.RawMessage(req.Params), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	_, path := startServer(t, m, Limits{})
	c := dialT(t, path)
	var lines strings.Builder
	want := map[string]string{}
	for i := 0; i < n; i++ {
		id := strconv.Itoa(i)
		if i%2 == 0 {
			id = strconv.Quote("req_" + id)
		}
		fmt.Fprintf(&lines, `{"id":%s,"method":"barrier","params":{"i":%d}}`+"\n", id, i)
		want[id] = fmt.Sprintf(`{"i":%d}`, i)
	}
	c.write(lines.String())
	for i := 0; i < n; i++ {
		r := c.readResp()
		w, ok := want[string(r.ID)]
		if !ok {
			t.Fatalf("unexpected or repeated id %s", r.ID)
		}
		if r.Error != nil || string(r.Result) != w {
			t.Fatalf("id %s: %s %v, want %s", r.ID, r.Result, r.Error, w)
		}
		delete(want, string(r.ID))
	}
}

func TestServerHalfClose(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	c := dialT(t, path)
	// The last line lacks its newline; it is still a request.
	c.write(`{"id":1,"method":"echo"}` + "\n" + `{"id":2,"method":"echo"}`)
	c.nc.CloseWrite()
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		r := c.readResp()
		if r.Error != nil {
			t.Fatalf("error %v", r.Error)
		}
		got[string(r.ID)] = true
	}
	if !got["1"] || !got["2"] {
		t.Fatalf("answered %v, want 1 and 2", got)
	}
	c.expectEOF()
}

func TestServerPeerUID(t *testing.T) {
	_, path := startServer(t, baseMux(), Limits{})
	r := dialT(t, path).call(`{"id":1,"method":"echo"}`)
	var res echoResult
	if err := json.Unmarshal(r.Result, &res); err != nil || res.UID != os.Getuid() {
		t.Fatalf("peer uid %d (%v), want %d", res.UID, err, os.Getuid())
	}
}

// TestServerRefusesOtherUID connects from uid 65534 through a re-executed
// test binary (see TestPeerCredHelper).
func TestServerRefusesOtherUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid")
	}
	const nobody = 65534
	// base (0755) holds a copy of the test binary the other uid can
	// execute; sockDir (0700) holds the socket, as the daemon's run dir.
	base, err := os.MkdirTemp("", "dlgt-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "rpc.test")
	copyExecutable(t, exe)
	sockDir := filepath.Join(base, "run")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sockDir, "s.sock")
	srv := startServerAt(t, baseMux(), Limits{}, path)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	dialAs := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "-test.run=^TestPeerCredHelper$", "-test.count=1")
		cmd.Dir = base
		cmd.Env = []string{"DLGT_RPC_PEER_HELPER=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		return string(out)
	}

	// The mode-0600 socket is the first boundary: connect fails.
	if out := dialAs(); !strings.Contains(out, "DIAL_ERROR") || !strings.Contains(out, "permission denied") {
		t.Fatalf("helper output %q, want a permission-denied dial", out)
	}

	// Open the filesystem boundary: SO_PEERCRED still refuses the peer
	// with one error line and closes.
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	out := dialAs()
	i := strings.Index(out, "LINE ")
	if i < 0 || !strings.Contains(out, "THEN CLOSED") {
		t.Fatalf("helper output %q, want one line then EOF", out)
	}
	line, _, _ := strings.Cut(out[i+len("LINE "):], "\n")
	var r Response
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("refusal line %q: %v", line, err)
	}
	wantCode(t, r, CodeRPCUnavailable)
	if !strings.Contains(r.Error.Message, strconv.Itoa(nobody)) {
		t.Fatalf("refusal %q does not name the peer uid", r.Error.Message)
	}
	if n := srv.ConnCount(); n != 0 {
		t.Fatalf("refused peer holds a connection slot (%d live)", n)
	}
	// The owner is still served.
	wantResult(t, dialT(t, path).call(`{"id":"owner","method":"echo"}`), `"owner"`)
}

// TestPeerCredHelper is the client half of TestServerRefusesOtherUID: it
// runs only in the re-executed binary, dials, sends one request and prints
// what it got.
func TestPeerCredHelper(t *testing.T) {
	path := os.Getenv("DLGT_RPC_PEER_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	defer os.Exit(0)
	nc, err := net.DialTimeout("unix", path, ioTimeout)
	if err != nil {
		fmt.Printf("DIAL_ERROR %v\n", err)
		return
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(ioTimeout))
	io.WriteString(nc, `{"id":"intruder","method":"echo"}`+"\n")
	br := bufio.NewReader(nc)
	line, err := br.ReadString('\n')
	if err != nil {
		fmt.Printf("READ_ERROR %v\n", err)
		return
	}
	fmt.Printf("LINE %s", line)
	// A server that closes with our request unread makes the kernel
	// report ECONNRESET rather than EOF; both mean closed.
	if _, err := br.ReadByte(); err == io.EOF || errors.Is(err, syscall.ECONNRESET) {
		fmt.Println("THEN CLOSED")
	} else {
		fmt.Printf("THEN %v\n", err)
	}
}

func copyExecutable(t testing.TB, dst string) {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestServerCloseEndsHandlers(t *testing.T) {
	var started atomic.Int32
	m := mux{"block": func(ctx context.Context, peer Peer, req *Request) (any, error) {
		started.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	srv, path := startServer(t, m, Limits{})
	c := dialT(t, path)
	c.write(`{"id":1,"method":"block"}` + "\n")
	waitFor(t, "the handler to start", func() bool { return started.Load() == 1 })
	srv.Close()
	c.expectEOF()
	if _, err := net.Dial("unix", path); err == nil {
		t.Fatal("listener still accepts after Close")
	}
}

// testDeferred reports its Start and stop, and responds when told.
type testDeferred struct {
	id      string
	started chan func(any, error)
	stopped chan struct{}
}

func (d *testDeferred) Start(respond func(any, error)) func() {
	d.started <- respond
	var once sync.Once
	return func() {
		once.Do(func() {
			close(d.stopped)
			respond(nil, context.Canceled)
		})
	}
}

// A Deferred result is answered when it responds, on its own id; it holds
// its in-flight slot until then; the connection ending stops it, and a
// response after that is discarded.
func TestServerDeferred(t *testing.T) {
	var defs []*testDeferred
	var mu sync.Mutex
	m := baseMux()
	m["later"] = func(ctx context.Context, peer Peer, req *Request) (any, error) {
		d := &testDeferred{id: string(req.ID), started: make(chan func(any, error), 1), stopped: make(chan struct{})}
		mu.Lock()
		defs = append(defs, d)
		mu.Unlock()
		return d, nil
	}
	_, path := startServer(t, m, Limits{MaxInFlight: 2})
	c := dialT(t, path)
	c.write(`{"id":"a","method":"later"}` + "\n" + `{"id":"b","method":"later"}` + "\n")
	var responds []func(any, error)
	for deadline := time.Now().Add(ioTimeout); len(responds) < 2; {
		mu.Lock()
		for _, d := range defs[len(responds):] {
			select {
			case r := <-d.started:
				responds = append(responds, r)
			case <-time.After(ioTimeout):
				t.Fatal("Start was not called")
			}
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the deferred requests did not start")
		}
	}
	if defs[0].id != `"a"` {
		defs[0], defs[1], responds[0], responds[1] = defs[1], defs[0], responds[1], responds[0]
	}
	// Both slots are held: echo waits until "a" responds.
	c.write(`{"id":"e","method":"echo"}` + "\n")
	time.Sleep(50 * time.Millisecond)
	responds[0](map[string]int{"n": 1}, nil)
	if r := c.readResp(); string(r.ID) != `"a"` || string(r.Result) != `{"n":1}` {
		t.Fatalf("first response %s %s %v, want a's", r.ID, r.Result, r.Error)
	}
	if r := c.readResp(); string(r.ID) != `"e"` {
		t.Fatalf("second response %s, want e's", r.ID)
	}
	c.nc.Close()
	select {
	case <-defs[1].stopped:
	case <-time.After(ioTimeout):
		t.Fatal("the connection ended without stopping the deferred request")
	}
	responds[1](nil, Errorf(CodeInternal, "after the end")) // discarded, releases the slot
}
