// HTTP hooks (opt-in, DLGT_HOOKS=http): the harness posts a hook's JSON
// to the daemon itself, with no forwarder process. Claude Code runs
// "http" hooks for every event but SessionStart; starting `dlgt hook` for
// each is most of the time from a turn's end to the client's answer (see
// docs/design.md, "HTTP hooks").

package hookhttp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Server serves HTTP hooks on an ephemeral port of 127.0.0.1. A
// connection from a socket another user owns is closed at accept (see
// peeruid.go), and each request carries a bearer token: HMAC-SHA256 of
// its launch id under a key drawn when the daemon starts. The token
// reaches the harness only through its environment (harness.HookTokenEnv),
// never its command line, which other local users can read.
type Server struct {
	log     *slog.Logger
	deliver func(context.Context, rpc.HookParams) bool
	key     [32]byte
	base    string // "http://127.0.0.1:PORT"
	srv     *http.Server

	// logMu guards the refusal log's rate limit.
	logMu    sync.Mutex
	lastLog  time.Time
	unlogged int
}

// Bounds of the HTTP hook server. A harness posts one hook at a time per
// Session but keeps its connection open between hooks (Claude Code does),
// so the cap is counted in Sessions, not hooks, and an idle connection is
// closed after a few seconds: a connection over the cap waits in the
// listen backlog until one closes.
const (
	hookHTTPConnections   = 1024
	hookHTTPHeaderBytes   = 16 << 10
	hookHTTPHeaderTimeout = 5 * time.Second
	// hookHTTPTimeout bounds a whole exchange: reading a payload of up to
	// hookfwd.MaxPayload, and the Stop hook's wait for its transcript.
	hookHTTPTimeout = 30 * time.Second
	hookHTTPIdle    = 5 * time.Second
)

// Listen binds 127.0.0.1:0 and starts serving: each hook a request
// carries is handed to deliver (the daemon's internal.hook), which
// returns once the hook is applied; log receives the refusals.
func Listen(log *slog.Logger, deliver func(context.Context, rpc.HookParams) bool) (*Server, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &Server{log: log, deliver: deliver, base: "http://" + l.Addr().String()}
	if _, err := rand.Read(h.key[:]); err != nil {
		l.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hook/{launch}/{event}", h.serveHook)
	h.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: hookHTTPHeaderTimeout,
		ReadTimeout:       hookHTTPTimeout,
		WriteTimeout:      hookHTTPTimeout,
		IdleTimeout:       hookHTTPIdle,
		MaxHeaderBytes:    hookHTTPHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	peers := &sameUserListener{Listener: l, uid: os.Getuid(), refused: func(remote net.Addr, why string) {
		h.logRefusal(why, "", remote.String())
	}}
	go h.srv.Serve(newCappedListener(peers, hookHTTPConnections))
	return h, nil
}

// Close stops accepting and drops the open connections.
func (h *Server) Close() { h.srv.Close() }

// token is the bearer token of launch.
func (h *Server) token(launch string) string {
	m := hmac.New(sha256.New, h.key[:])
	m.Write([]byte(launch))
	return hex.EncodeToString(m.Sum(nil))
}

// ForLaunch is what a harness needs to post launch's hooks.
func (h *Server) ForLaunch(launch string) *harness.HTTPHook {
	return &harness.HTTPHook{URL: h.base + "/hook/" + url.PathEscape(launch), Token: h.token(launch)}
}

// serveHook takes one hook: POST /hook/{launch}/{event} with the hook's
// JSON as the body and the launch's token. It answers 200 with an empty
// body (to Claude Code: success, no output) once the hook is applied, as
// the forwarder's answer does; a refused request changes nothing.
func (h *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	launch, event := r.PathValue("launch"), r.PathValue("event")
	switch {
	case r.Method != http.MethodPost:
		h.refuse(w, http.StatusMethodNotAllowed, "not a POST", r)
		return
	case r.Header.Get("Origin") != "":
		// A web page's request (the harness sends no Origin): never ours.
		h.refuse(w, http.StatusForbidden, "a browser origin", r)
		return
	case !h.authorized(r.Header.Get("Authorization"), launch):
		h.refuse(w, http.StatusUnauthorized, "no valid token", r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, hookfwd.MaxPayload))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.refuse(w, http.StatusRequestEntityTooLarge, "a payload over the hook limit", r)
		return
	case err != nil:
		h.refuse(w, http.StatusBadRequest, "an unreadable body", r)
		return
	case !json.Valid(body):
		h.refuse(w, http.StatusBadRequest, "a body that is not JSON", r)
		return
	}
	h.deliver(r.Context(), rpc.HookParams{LaunchID: launch, Event: event, Payload: body})
	w.WriteHeader(http.StatusOK)
}

// authorized reports whether header is "Bearer " and launch's token.
func (h *Server) authorized(header, launch string) bool {
	const scheme = "Bearer "
	if len(header) <= len(scheme) || header[:len(scheme)] != scheme || launch == "" {
		return false
	}
	return hmac.Equal([]byte(header[len(scheme):]), []byte(h.token(launch)))
}

// refuse answers status and logs why.
func (h *Server) refuse(w http.ResponseWriter, status int, why string, r *http.Request) {
	http.Error(w, http.StatusText(status), status)
	h.logRefusal(why, r.URL.Path, r.RemoteAddr)
}

// logRefusal logs a refused request or connection, at most once a second
// (a local process probing the port cannot flood the log).
func (h *Server) logRefusal(why, path, remote string) {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	if now := time.Now(); now.Sub(h.lastLog) >= time.Second {
		h.log.Warn("HTTP hook refused", "why", why, "path", path, "remote", remote, "refused_unlogged", h.unlogged)
		h.lastLog, h.unlogged = now, 0
		return
	}
	h.unlogged++
}

// cappedListener holds at most n accepted connections open: Accept waits
// for one to close, leaving further connections in the kernel's backlog.
type cappedListener struct {
	net.Listener
	slots chan struct{}
}

func newCappedListener(l net.Listener, n int) *cappedListener {
	return &cappedListener{Listener: l, slots: make(chan struct{}, n)}
}

func (c *cappedListener) Accept() (net.Conn, error) {
	c.slots <- struct{}{}
	conn, err := c.Listener.Accept()
	if err != nil {
		<-c.slots
		return nil, err
	}
	return &slotConn{Conn: conn, free: func() { <-c.slots }}, nil
}

// slotConn gives its slot back once, on the first Close.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (s *slotConn) Close() error {
	err := s.Conn.Close()
	s.once.Do(s.free)
	return err
}
