package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Transport limits. Each is a named default that Limits can override
// (tests shrink them); docs/rpc.md carries the same table.
const (
	// DefaultMaxConnections caps live connections; one more gets a single
	// error line and is closed.
	DefaultMaxConnections = 16
	// DefaultMaxLineBytes caps one request line. A longer line is discarded
	// as it streams in (never buffered whole) and answered with
	// INVALID_ARGUMENT; the connection stays usable.
	DefaultMaxLineBytes = 1 << 20
	// DefaultRateLimit requests per DefaultRateWindow per connection,
	// counted over a sliding window. An agent long-polling session.fetch
	// makes at most a few requests a second; this bound only stops floods.
	DefaultRateLimit  = 1000
	DefaultRateWindow = 10 * time.Second
	// DefaultPendingBytes is the per-connection budget of responses and
	// events written but not yet read by the client. Exceeding it
	// disconnects that client; nobody else waits.
	DefaultPendingBytes = 1 << 20
	// DefaultWriteTimeout bounds one socket write; a client that stops
	// reading is disconnected after it.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxInFlight caps concurrently executing requests of one
	// connection (long polls included); further lines wait to be read.
	DefaultMaxInFlight = 256
)

// Limits are the transport bounds of a Server. Zero fields take defaults.
type Limits struct {
	MaxConnections int
	MaxLineBytes   int
	RateLimit      int
	RateWindow     time.Duration
	PendingBytes   int
	WriteTimeout   time.Duration
	MaxInFlight    int
}

func (l Limits) withDefaults() Limits {
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = DefaultMaxLineBytes
	}
	if l.RateLimit <= 0 {
		l.RateLimit = DefaultRateLimit
	}
	if l.RateWindow <= 0 {
		l.RateWindow = DefaultRateWindow
	}
	if l.PendingBytes <= 0 {
		l.PendingBytes = DefaultPendingBytes
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	return l
}

// Peer identifies the process on the other end of a connection, from the
// kernel's SO_PEERCRED. It is attached to every request for audit logs.
type Peer struct {
	UID int
	PID int
}

// Handler serves decoded requests. A result that implements Stream turns
// the request into a stream: its Ack is the response line, then Run emits
// lines until ctx ends (the connection closed or the server stopped).
type Handler interface {
	ServeRPC(ctx context.Context, peer Peer, req *Request) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, peer Peer, req *Request) (any, error)

// ServeRPC calls f.
func (f HandlerFunc) ServeRPC(ctx context.Context, peer Peer, req *Request) (any, error) {
	return f(ctx, peer, req)
}

// Stream is a result that keeps writing after its initial response.
type Stream interface {
	Ack() any
	// Run emits one line per call of emit (without the newline). It
	// returns when ctx is done or emit fails (the client was dropped).
	Run(ctx context.Context, emit func(line []byte) error) error
}

// Deferred is a result that is not ready when the handler returns: a long
// poll. The server keeps the request in flight (it counts against
// MaxInFlight) without a goroutine parked for it, so a change that answers
// a thousand long polls does not have to wake a thousand goroutines. Start
// is called once; the Deferred then calls respond exactly once, from any
// goroutine. stop asks it to respond at once because the connection ended
// (the response is then discarded).
type Deferred interface {
	Start(respond func(result any, err error)) (stop func())
}

// Server serves the JSONL protocol on a Unix listener. Its shape follows
// net/http: Serve blocks, Close stops it and every connection.
type Server struct {
	Handler Handler
	Logger  *slog.Logger
	Limits  Limits

	// mu guards the fields that follow.
	mu       sync.Mutex
	conns    map[*conn]struct{}
	closed   bool
	listener net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("rpc: server closed")

// Serve accepts connections until ctx is done or Close is called.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	lim := s.Limits.withDefaults()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return ErrServerClosed
	}
	s.listener = l
	s.cancel = cancel
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || ctx.Err() != nil {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.accept(ctx, nc, lim)
	}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (s *Server) accept(ctx context.Context, nc net.Conn, lim Limits) {
	peer, err := peerCred(nc)
	if err != nil {
		s.logger().Warn("peer credentials unavailable; refusing", "err", err)
		nc.Close()
		return
	}
	if peer.UID != unix.Getuid() {
		s.logger().Warn("refused peer with another uid", "peer_uid", peer.UID, "peer_pid", peer.PID)
		refuse(nc, lim, Errorf(CodeRPCUnavailable, "connection refused: peer uid %d is not the daemon's owner", peer.UID))
		return
	}
	s.mu.Lock()
	if s.closed || len(s.conns) >= lim.MaxConnections {
		n := len(s.conns)
		s.mu.Unlock()
		s.logger().Warn("connection cap reached", "live", n, "peer_pid", peer.PID)
		refuse(nc, lim, Errorf(CodeRPCUnavailable, "too many connections: the daemon serves at most %d at once", lim.MaxConnections))
		return
	}
	c := newConn(s, nc, peer, lim)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.serve(ctx)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

func refuse(nc net.Conn, lim Limits, e *Error) {
	nc.SetWriteDeadline(time.Now().Add(lim.WriteTimeout))
	nc.Write(MarshalResponse(nil, nil, e))
	nc.Close()
}

// Close stops accepting, closes every connection and waits for their
// goroutines to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	// The listener closes here, not only in Serve's goroutine that watches
	// the context: a dial that follows Close must be refused.
	if s.listener != nil {
		s.listener.Close()
	}
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// ConnCount reports live connections (for status and tests).
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func peerCred(nc net.Conn) (Peer, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, cerr
	}
	return Peer{UID: int(cred.Uid), PID: int(cred.Pid)}, nil
}

// conn is one client connection: a reader loop that parses requests and
// starts handlers, and one writer loop that owns the socket's write side.
// All mutable state of the connection lives here.
type conn struct {
	srv  *Server
	nc   net.Conn
	peer Peer
	lim  Limits

	// mu guards the fields that follow.
	mu       sync.Mutex
	queue    [][]byte // lines waiting for the writer
	pending  int      // bytes in queue
	dead     bool
	deadWhy  string
	wake     chan struct{} // signalled when queue grows or dead is set
	inflight chan struct{} // semaphore of running requests
	rate     slidingWindow
}

func newConn(s *Server, nc net.Conn, peer Peer, lim Limits) *conn {
	return &conn{
		srv: s, nc: nc, peer: peer, lim: lim,
		wake:     make(chan struct{}, 1),
		inflight: make(chan struct{}, lim.MaxInFlight),
		rate:     slidingWindow{window: lim.RateWindow, limit: lim.RateLimit},
	}
}

func (c *conn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var handlers sync.WaitGroup
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
		cancel() // a dead writer ends the connection's handlers too
	}()
	c.readLoop(ctx, &handlers)
	cancel()
	handlers.Wait()
	c.closeAfterFlush()
	<-writerDone
	c.nc.Close()
}

// readLoop reads lines with a bounded buffer. It returns on EOF, a read
// error, or when the connection dies.
func (c *conn) readLoop(ctx context.Context, handlers *sync.WaitGroup) {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var line []byte
	oversized := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !oversized && len(line)+len(chunk) > c.lim.MaxLineBytes+1 {
				oversized = true
				line = nil
			}
			if !oversized {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		complete := err == nil
		if complete {
			if oversized {
				c.send(MarshalResponse(nil, nil, InvalidField("request", "request line exceeds %d bytes", c.lim.MaxLineBytes)))
			} else {
				c.dispatch(ctx, bytes.TrimRight(line, "\r\n"), handlers)
			}
			line, oversized = line[:0], false
			if cap(line) > 64<<10 {
				line = nil // do not pin a large buffer for the connection's life
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			// EOF: a final unterminated line is still a request.
			if len(bytes.TrimSpace(line)) > 0 && !oversized {
				c.dispatch(ctx, line, handlers)
			}
			return
		}
		if c.isDead() {
			return
		}
	}
}

func (c *conn) dispatch(ctx context.Context, line []byte, handlers *sync.WaitGroup) {
	if len(bytes.TrimSpace(line)) == 0 {
		return // blank lines are ignored
	}
	if !c.rate.allow(time.Now()) {
		id := recoverID(line)
		c.send(MarshalResponse(id, nil, Errorf(CodeRPCUnavailable, "rate limit: at most %d requests per %s on one connection", c.lim.RateLimit, c.lim.RateWindow)))
		return
	}
	req, id, perr := ParseRequest(line)
	if perr != nil {
		c.send(MarshalResponse(id, nil, perr))
		return
	}
	select {
	case c.inflight <- struct{}{}:
	case <-ctx.Done():
		return
	}
	handlers.Add(1)
	go func() {
		release := func() {
			<-c.inflight
			handlers.Done()
		}
		if d := c.handle(ctx, req); d != nil {
			c.await(ctx, req.ID, d, release)
			return
		}
		release()
	}()
}

// await answers a Deferred result when it responds, then releases the
// request's in-flight slot.
func (c *conn) await(ctx context.Context, id json.RawMessage, d Deferred, release func()) {
	var (
		once      sync.Once
		responded atomic.Bool
		unreg     atomic.Pointer[func() bool]
	)
	stop := d.Start(func(res any, err error) {
		once.Do(func() {
			responded.Store(true)
			if u := unreg.Load(); u != nil {
				(*u)()
			}
			if err != nil {
				c.send(MarshalResponse(id, nil, AsError(err)))
			} else {
				c.send(MarshalResponse(id, res, nil))
			}
			release()
		})
	})
	u := context.AfterFunc(ctx, stop)
	unreg.Store(&u)
	if responded.Load() {
		u() // it responded before the registration was stored
	}
}

// handle serves one request; a Deferred result is returned for await
// instead of being answered.
func (c *conn) handle(ctx context.Context, req *Request) (deferred Deferred) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.logger().Error("handler panic", "method", req.Method, "panic", r, "stack", string(debug.Stack()))
			c.send(MarshalResponse(req.ID, nil, Errorf(CodeInternal, "internal error serving %s", req.Method)))
			deferred = nil
		}
	}()
	res, err := c.srv.Handler.ServeRPC(ctx, c.peer, req)
	if err != nil {
		c.send(MarshalResponse(req.ID, nil, AsError(err)))
		return nil
	}
	if d, ok := res.(Deferred); ok {
		return d
	}
	st, ok := res.(Stream)
	if !ok {
		c.send(MarshalResponse(req.ID, res, nil))
		return
	}
	if !c.send(MarshalResponse(req.ID, st.Ack(), nil)) {
		return
	}
	st.Run(ctx, func(line []byte) error {
		if !c.send(append(append(make([]byte, 0, len(line)+1), line...), '\n')) {
			return errors.New("client disconnected")
		}
		return nil
	})
	return nil
}

// send queues a line for the writer. When the client's unread backlog would
// exceed the pending budget the connection is dropped instead, so a slow
// reader costs only itself. It reports whether the line was queued.
func (c *conn) send(line []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return false
	}
	if c.pending+len(line) > c.lim.PendingBytes && c.pending > 0 {
		c.killLocked("slow client: more than the pending-output budget unread")
		return false
	}
	c.queue = append(c.queue, line)
	c.pending += len(line)
	c.signal()
	return true
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) killLocked(why string) {
	if c.dead {
		return
	}
	c.dead, c.deadWhy = true, why
	c.srv.logger().Warn("dropping connection", "reason", why, "peer_pid", c.peer.PID)
	// Closing (not just a read deadline) also unblocks a writer stalled on
	// a client that stopped reading, so a dropped client frees its slot
	// and Server.Close returns without waiting out the write timeout.
	c.nc.Close()
	c.signal()
}

func (c *conn) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// close drops the connection immediately (server shutdown).
func (c *conn) close() {
	c.mu.Lock()
	c.killLocked("server closing")
	c.mu.Unlock()
}

// closeAfterFlush lets the writer drain what is queued, then stop.
func (c *conn) closeAfterFlush() {
	c.mu.Lock()
	if !c.dead {
		c.dead, c.deadWhy = true, "done"
	}
	c.signal()
	c.mu.Unlock()
}

func (c *conn) writeLoop() {
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		c.pending = 0
		dead, why := c.dead, c.deadWhy
		c.mu.Unlock()
		if len(batch) > 0 && (!dead || why == "done") {
			bufs := net.Buffers(batch)
			c.nc.SetWriteDeadline(time.Now().Add(c.lim.WriteTimeout))
			if _, err := bufs.WriteTo(c.nc); err != nil {
				c.mu.Lock()
				c.killLocked("write failed: " + err.Error())
				c.mu.Unlock()
				return
			}
			// Disarmed once written: a deadline left set wakes the
			// process when it passes, long after the write.
			c.nc.SetWriteDeadline(time.Time{})
			continue
		}
		if dead {
			return
		}
		<-c.wake
	}
}

// slidingWindow approximates a sliding-window rate limit with two fixed
// windows weighted by overlap: constant memory, no bursts of 2x at window
// edges.
type slidingWindow struct {
	window    time.Duration
	limit     int
	start     time.Time
	cur, prev int
}

func (w *slidingWindow) allow(now time.Time) bool {
	if w.start.IsZero() {
		w.start = now
	}
	if elapsed := now.Sub(w.start); elapsed >= w.window {
		if elapsed >= 2*w.window {
			w.prev = 0
		} else {
			w.prev = w.cur
		}
		w.cur = 0
		w.start = now.Add(-(elapsed % w.window))
	}
	frac := 1 - float64(now.Sub(w.start))/float64(w.window)
	if float64(w.prev)*frac+float64(w.cur) >= float64(w.limit) {
		return false
	}
	w.cur++
	return true
}
