package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// socketPair returns the two ends of a connected Unix stream socketpair:
// one for the proxy, one for the fake daemon.
func socketPair(t testing.TB) (net.Conn, *tconn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	d := conns[1].(*net.UnixConn)
	return conns[0], &tconn{t: t, nc: d, br: bufio.NewReaderSize(d, 64<<10)}
}

// lineSink collects what the proxy writes to Out, line by line.
type lineSink struct {
	mu    sync.Mutex
	buf   []byte
	lines chan []byte
}

func newLineSink() *lineSink { return &lineSink{lines: make(chan []byte, 1024)} }

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		s.lines <- append([]byte(nil), s.buf[:i+1]...)
		s.buf = s.buf[i+1:]
	}
}

// next returns the next line written to Out, newline included.
func (s *lineSink) next(t testing.TB) []byte {
	t.Helper()
	select {
	case l := <-s.lines:
		return l
	case <-time.After(ioTimeout):
		t.Fatal("no output line from the proxy")
		return nil
	}
}

func (s *lineSink) nextResp(t testing.TB) Response {
	t.Helper()
	line := s.next(t)
	var r Response
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("output %q: %v", line, err)
	}
	return r
}

// proxyHarness runs a Proxy between an input pipe, a line sink and a fake
// daemon.
type proxyHarness struct {
	in     *io.PipeWriter
	out    *lineSink
	daemon *tconn
	done   chan error
	local  chan string // params seen by Local
}

func startProxy(t testing.TB, configure func(*Proxy)) *proxyHarness {
	t.Helper()
	pr, pw := io.Pipe()
	conn, daemon := socketPair(t)
	h := &proxyHarness{in: pw, out: newLineSink(), daemon: daemon, done: make(chan error, 1), local: make(chan string, 16)}
	p := &Proxy{
		In: pr, Out: h.out, Conn: conn,
		Local: func(method string, params json.RawMessage) (any, error) {
			h.local <- method + " " + string(params)
			var lp ProfileListParams
			if err := Decode(params, &lp); err != nil {
				return nil, err
			}
			return ProfileListResult{Profiles: []Profile{{Name: "review", Harness: "claude"}}}, nil
		},
	}
	if configure != nil {
		configure(p)
	}
	go func() { h.done <- p.Run(context.Background()) }()
	t.Cleanup(func() {
		pw.Close()
		pr.Close()
		conn.Close()
	})
	return h
}

func (h *proxyHarness) send(t testing.TB, s string) {
	t.Helper()
	if _, err := io.WriteString(h.in, s); err != nil {
		t.Fatal(err)
	}
}

func (h *proxyHarness) wait(t testing.TB) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(ioTimeout):
		t.Fatal("proxy Run did not return")
		return nil
	}
}

func (h *proxyHarness) running() bool {
	select {
	case err := <-h.done:
		h.done <- err
		return false
	default:
		return true
	}
}

func TestProxyNonPublicAnsweredLocally(t *testing.T) {
	h := startProxy(t, nil)
	for _, m := range []string{MethodDaemonStatus, MethodDaemonShutdown, MethodHookDeliver, MethodTerminalInput, MethodTerminalResize, MethodTerminalAttach, "internal.anything", "bogus", "Session.list", ""} {
		h.send(t, `{"id":"x","method":"`+m+`"}`+"\n")
		r := h.out.nextResp(t)
		if r.Error == nil || r.Error.Code != CodeInvalidArgument || string(r.ID) != `"x"` {
			t.Fatalf("%q: got %+v %+v, want INVALID_ARGUMENT for id \"x\"", m, r, r.Error)
		}
		if !strings.Contains(r.Error.Message, "method") {
			t.Fatalf("%q: message %q does not name the method", m, r.Error.Message)
		}
	}
	// None of them reached the daemon: the first line it sees is this one.
	pub := `{"id":"p","method":"session.list"}` + "\n"
	h.send(t, pub)
	if got := h.daemon.readLine(); string(got)+"\n" != pub {
		t.Fatalf("daemon got %q, want %q", got, pub)
	}
}

func TestProxyForwardsBytesUnchanged(t *testing.T) {
	h := startProxy(t, nil)
	lines := []string{
		`{"id":"req_1","method":"session.fetch","params":{"session":"codex:019f6307-341e-7e81-8a33-7ab61e804345","until":"result","wait_ms":900000}}` + "\n",
		`{ "params" : {"all":true} ,  "method":"session.list", "id": 2 }` + "\n",
		`{"id":"\u0041","method":"session.send","params":{"session":"claude:8bc7859c","prompt":"<b>&amp;\u00e9 ünïcode\n","request_id":"r"}}` + "\r\n",
	}
	h.send(t, "\n  \n") // blank lines are not forwarded
	for _, l := range lines {
		h.send(t, l)
	}
	for _, l := range lines {
		h.daemon.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		got, err := h.daemon.br.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != l {
			t.Fatalf("daemon got %q, want %q", got, l)
		}
	}
	// Daemon lines, including an id-less stream event, come out unchanged.
	replies := []string{
		`{"id":"req_1","result":{"schema_version":1,"reason":"timeout","cursor":"4","sessions":[]}}` + "\n",
		`{"schema_version":1,"seq":101,"type":"session.created","session_id":"codex:019f6307-341e-7e81-8a33-7ab61e804345"}` + "\n",
		`{ "id" : 2 , "result" : [ ] , "info":{"code":"UPDATE_AVAILABLE","current_version":"0.1.4","latest_version":"0.2.0","command":"dlgt update"}}` + "\n",
		`{"id":"\u0041","error":{"code":"SESSION_BUSY","message":"<busy> & \u00e9"}}` + "\n",
	}
	for _, l := range replies {
		h.daemon.write(l)
		if got := h.out.next(t); string(got) != l {
			t.Fatalf("out got %q, want %q", got, l)
		}
	}
	h.in.Close()
	if err := h.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestProxyUnterminatedLastLine(t *testing.T) {
	h := startProxy(t, nil)
	h.send(t, `{"id":1,"method":"session.list"}`)
	h.in.Close()
	if got := h.daemon.readLine(); string(got) != `{"id":1,"method":"session.list"}` {
		t.Fatalf("daemon got %q", got)
	}
	h.daemon.write(`{"id":1,"result":{"sessions":[]}}` + "\n")
	if err := h.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestProxyProfileListLocal(t *testing.T) {
	h := startProxy(t, nil)
	h.send(t, `{"id":"pl","method":"profile.list","params":{}}`+"\n")
	r := h.out.nextResp(t)
	if r.Error != nil || string(r.ID) != `"pl"` || string(r.Result) != `{"profiles":[{"name":"review","harness":"claude"}]}` {
		t.Fatalf("profile.list answered %s %s %v", r.ID, r.Result, r.Error)
	}
	if got := <-h.local; got != "profile.list {}" {
		t.Fatalf("Local saw %q", got)
	}
	h.send(t, `{"id":"bad","method":"profile.list","params":{"x":1}}`+"\n")
	r = h.out.nextResp(t)
	if r.Error == nil || r.Error.Code != CodeInvalidArgument || string(r.ID) != `"bad"` {
		t.Fatalf("bad profile.list answered %+v", r)
	}
	<-h.local
	h.in.Close()
	if err := h.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	// Nothing was forwarded: the daemon end sees EOF at once.
	h.daemon.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	if b, err := io.ReadAll(h.daemon.br); err != nil || len(b) != 0 {
		t.Fatalf("daemon received %q (%v), want nothing", b, err)
	}
}

func TestProxyInvalidJSONEndsRun(t *testing.T) {
	h := startProxy(t, nil)
	h.send(t, `{"id":"broken","method":"session.list",`+"\n")
	r := h.out.nextResp(t)
	if r.Error == nil || r.Error.Code != CodeInvalidArgument || string(r.ID) != `"broken"` {
		t.Fatalf("got %+v, want INVALID_ARGUMENT for \"broken\"", r)
	}
	if err := h.wait(t); !errors.Is(err, ErrProxyInput) {
		t.Fatalf("Run = %v, want ErrProxyInput", err)
	}
	h.daemon.expectEOF()
}

// A bad line ends the proxy, but only after every request read before it
// has its one response line: the daemon connection stays open for them and
// nothing after the bad line is forwarded.
func TestProxyInvalidJSONAnswersEarlierRequests(t *testing.T) {
	for _, bad := range []string{"not json", `{"id":"broken","method":"session.list",`} {
		h := startProxy(t, nil)
		h.send(t, `{"id":1,"method":"session.list"}`+"\n"+`{"id":2,"method":"event.subscribe"}`+"\n"+bad+"\n"+`{"id":3,"method":"session.list"}`+"\n")
		if got := h.daemon.readLine(); !bytes.Contains(got, []byte(`"id":1`)) {
			t.Fatalf("daemon got %q", got)
		}
		if got := h.daemon.readLine(); !bytes.Contains(got, []byte(`"id":2`)) {
			t.Fatalf("daemon got %q", got)
		}
		if r := h.out.nextResp(t); r.Error == nil || r.Error.Code != CodeInvalidArgument {
			t.Fatalf("bad line answered %+v", r)
		}
		if !h.running() {
			t.Fatal("Run returned with two forwarded requests unanswered")
		}
		h.daemon.write(`{"id":1,"result":{"sessions":[]}}` + "\n")
		if got := h.out.next(t); !bytes.HasPrefix(got, []byte(`{"id":1,`)) {
			t.Fatalf("out %q", got)
		}
		if !h.running() {
			t.Fatal("Run returned with the subscribe unanswered")
		}
		// The subscribe's ack is its response; the proxy does not stay for
		// the stream after a bad line.
		h.daemon.write(`{"id":2,"result":{"subscribed":true,"after":0}}` + "\n")
		if got := h.out.next(t); !bytes.HasPrefix(got, []byte(`{"id":2,`)) {
			t.Fatalf("out %q", got)
		}
		if err := h.wait(t); !errors.Is(err, ErrProxyInput) {
			t.Fatalf("Run = %v, want ErrProxyInput", err)
		}
		h.daemon.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		if rest, err := io.ReadAll(h.daemon.br); err != nil || len(rest) > 0 {
			t.Fatalf("after the bad line the daemon got %q (%v)", rest, err)
		}
	}
}

func TestProxyLineTooLongEndsRun(t *testing.T) {
	h := startProxy(t, func(p *Proxy) { p.MaxLineBytes = 1024 })
	go io.WriteString(h.in, `{"id":"big","method":"session.list","params":{"pad":"`+strings.Repeat("x", 1<<20)+`"}}`+"\n")
	r := h.out.nextResp(t)
	if r.Error == nil || r.Error.Code != CodeInvalidArgument {
		t.Fatalf("got %+v, want INVALID_ARGUMENT", r)
	}
	if err := h.wait(t); !errors.Is(err, ErrProxyInput) {
		t.Fatalf("Run = %v, want ErrProxyInput", err)
	}
}

func TestProxyWaitsForOutstandingAtEOF(t *testing.T) {
	h := startProxy(t, nil)
	h.send(t, `{"id":1,"method":"session.fetch","params":{"all":true,"wait_ms":60000}}`+"\n"+`{"id":2,"method":"session.list"}`+"\n")
	h.in.Close()
	h.daemon.readLine()
	h.daemon.readLine()
	if !h.running() {
		t.Fatal("Run returned at input EOF with two requests unanswered")
	}
	h.daemon.write(`{"id":2,"result":{"sessions":[]}}` + "\n")
	if got := h.out.next(t); !bytes.HasPrefix(got, []byte(`{"id":2`)) {
		t.Fatalf("out %q", got)
	}
	if !h.running() {
		t.Fatal("Run returned with one request unanswered")
	}
	h.daemon.write(`{"id":1,"result":{"schema_version":1,"reason":"timeout","cursor":"1","sessions":[]}}` + "\n")
	if got := h.out.next(t); !bytes.HasPrefix(got, []byte(`{"id":1`)) {
		t.Fatalf("out %q", got)
	}
	if err := h.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	h.daemon.expectEOF()
}

func TestProxyDaemonCloses(t *testing.T) {
	t.Run("after input EOF", func(t *testing.T) {
		h := startProxy(t, nil)
		h.send(t, `{"id":1,"method":"session.list"}`+"\n")
		h.in.Close()
		h.daemon.readLine()
		h.daemon.nc.Close()
		if err := h.wait(t); err == nil {
			t.Fatal("Run = nil, want an error for the unanswered request")
		}
	})
	t.Run("while input is open", func(t *testing.T) {
		// A closed transport terminates the proxy even when the caller
		// keeps its input open.
		h := startProxy(t, nil)
		h.send(t, `{"id":1,"method":"session.list"}`+"\n")
		h.daemon.readLine()
		h.daemon.nc.Close()
		if err := h.wait(t); err == nil {
			t.Fatal("Run = nil, want an error for the closed transport")
		}
	})
	t.Run("idle with input open", func(t *testing.T) {
		h := startProxy(t, nil)
		h.send(t, `{"id":1,"method":"session.list"}`+"\n")
		h.daemon.readLine()
		h.daemon.write(`{"id":1,"result":{"sessions":[]}}` + "\n")
		h.out.next(t)
		h.daemon.nc.Close()
		if err := h.wait(t); err != nil {
			t.Fatalf("Run = %v, want nil: nothing was left unanswered", err)
		}
	})
}

func TestProxySubscribe(t *testing.T) {
	t.Run("stream runs until the daemon closes", func(t *testing.T) {
		h := startProxy(t, nil)
		h.send(t, `{"id":"sub_1","method":"event.subscribe","params":{"after":100}}`+"\n")
		h.in.Close()
		h.daemon.readLine()
		h.daemon.write(`{"id":"sub_1","result":{"subscribed":true,"after":100}}` + "\n")
		ev := `{"schema_version":1,"seq":101,"type":"session.created","session_id":"codex:019f6307-341e-7e81-8a33-7ab61e804345"}` + "\n"
		h.daemon.write(ev)
		h.out.next(t)
		if got := h.out.next(t); string(got) != ev {
			t.Fatalf("event %q", got)
		}
		if !h.running() {
			t.Fatal("Run returned while the stream is open")
		}
		h.daemon.nc.Close()
		if err := h.wait(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
	t.Run("refused subscribe does not hold the proxy", func(t *testing.T) {
		h := startProxy(t, nil)
		h.send(t, `{"id":"sub_2","method":"event.subscribe","params":{"after":-1}}`+"\n")
		h.in.Close()
		h.daemon.readLine()
		h.daemon.write(`{"id":"sub_2","error":{"code":"INVALID_ARGUMENT","message":"after: expected non-negative integer, got number -1","field":"after"}}` + "\n")
		h.out.next(t)
		if err := h.wait(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

func TestProxyContextCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	conn, _ := socketPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := &Proxy{In: pr, Out: io.Discard, Conn: conn}
	go func() { done <- p.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Run ignored its context while the input was idle")
	}
}

// A JSON object that is not a valid request is one bad request: the
// proxy answers it as the daemon would (INVALID_ARGUMENT, the id echoed
// or, when over-long, its prefix), forwards nothing of it, and goes on
// with the next line. Only a line that is not a JSON object ends it.
func TestProxyBadRequestObjectsKeepRunning(t *testing.T) {
	long := strings.Repeat("i", MaxIDBytes+1)
	h := startProxy(t, nil)
	bad := []struct{ line, id, field string }{
		{`{"id":"` + long + `","method":"session.list"}`, `"` + long[:32] + `"`, "id"},
		{`{"id":2,"method":"session.list","extra":true}`, `2`, "extra"},
		{`{"id":3}`, `3`, "method"},
		{`{"id":4,"method":7}`, `4`, "method"},
		{`{"id":5,"method":"session.list","params":[1]}`, `5`, "params"},
		{`{"id":6,"id":7,"method":"session.list"}`, ``, ""},
		{`{"id":{},"method":"session.list"}`, `""`, "id"},
	}
	var in strings.Builder
	for _, b := range bad {
		in.WriteString(b.line + "\n")
	}
	in.WriteString(`{"id":"ok","method":"session.list"}` + "\n")
	h.send(t, in.String())
	for _, b := range bad {
		r := h.out.nextResp(t)
		if r.Error == nil || r.Error.Code != CodeInvalidArgument || (b.id != "" && string(r.ID) != b.id) || (b.field != "" && r.Error.Field != b.field) {
			t.Fatalf("%s answered %+v (id %s), want INVALID_ARGUMENT on %q for id %s", b.line, r.Error, r.ID, b.field, b.id)
		}
	}
	if got := h.daemon.readLine(); string(got) != `{"id":"ok","method":"session.list"}` {
		t.Fatalf("the daemon got %q, want the one valid request", got)
	}
	if !h.running() {
		t.Fatal("Run returned with a request unanswered")
	}
	h.daemon.write(`{"id":"ok","result":{"sessions":[]}}` + "\n")
	if got := h.out.next(t); !bytes.HasPrefix(got, []byte(`{"id":"ok",`)) {
		t.Fatalf("out %q", got)
	}
	h.in.Close()
	if err := h.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil at the end of the input", err)
	}
}
