package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// serveAt serves handler on a Unix socket at path until the test ends.
func serveAt(t *testing.T, path string, handler func(context.Context, rpc.Peer, *rpc.Request) (any, error)) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	srv := &rpc.Server{Handler: handlerFunc(handler)}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), l); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
}

type handlerFunc func(context.Context, rpc.Peer, *rpc.Request) (any, error)

func (f handlerFunc) ServeRPC(ctx context.Context, p rpc.Peer, r *rpc.Request) (any, error) {
	return f(ctx, p, r)
}

// versionDaemon is an in-process fake daemon on one version's socket that
// holds a fixed set of Sessions.
type versionDaemon struct {
	holds map[string]bool
	mu    sync.Mutex
	calls []string // "method session"
}

func (d *versionDaemon) serve(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
	var p struct {
		Session string `json:"session"`
	}
	json.Unmarshal(req.Params, &p)
	d.mu.Lock()
	d.calls = append(d.calls, req.Method+" "+p.Session)
	d.mu.Unlock()
	if !d.holds[p.Session] {
		return nil, &rpc.Error{Code: rpc.CodeNotFound, Message: "no Session " + p.Session}
	}
	s := rpc.Session{ID: p.Session, Title: "t", Harness: "claude", Cwd: "/w", State: "idle"}
	switch req.Method {
	case rpc.MethodSessionRead:
		return rpc.SessionReadResult{Session: s}, nil
	case rpc.MethodSessionSend:
		return rpc.Receipt{Session: s, ExecutionSeq: 2, Cursor: "5", Submission: rpc.SubmissionConfirmed}, nil
	}
	return nil, rpc.Errorf(rpc.CodeInvalidArgument, "fake: %s", req.Method)
}

func (d *versionDaemon) methods() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// twoVersions serves this version's daemon and an older version's, each
// on its versioned socket under one state directory.
func twoVersions(t *testing.T, ours, theirs map[string]bool) (home string, mine, old *versionDaemon) {
	home = shortDir(t)
	mine, old = &versionDaemon{holds: ours}, &versionDaemon{holds: theirs}
	if ours != nil {
		serveAt(t, filepath.Join(home, "run", statedir.Version, "dlgt.sock"), mine.serve)
	}
	serveAt(t, filepath.Join(home, "run", "0.0.9", "dlgt.sock"), old.serve)
	return home, mine, old
}

func newClient(t *testing.T, opts client.Options) *client.Client {
	t.Helper()
	if opts.Getenv == nil {
		opts.Getenv = env(nil)
	}
	if opts.Environ == nil {
		opts.Environ = environ(nil)
	}
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestQualifiedIDReachesTheOwningVersionsDaemon(t *testing.T) {
	home, mine, old := twoVersions(t, map[string]bool{"claude:mine": true}, map[string]bool{"claude:old": true})
	ctx := context.Background()
	c := newClient(t, client.Options{Home: home, NoAutostart: true})
	if r, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: "claude:old"}); err != nil || r.Session.ID != "claude:old" {
		t.Fatalf("read: %+v %v", r, err)
	}
	if r, err := c.SessionSend(ctx, rpc.SessionSendParams{Session: "claude:old", RequestID: "r", Prompt: "hi"}); err != nil || r.ExecutionSeq != 2 {
		t.Fatalf("send: %+v %v", r, err)
	}
	if got := strings.Join(old.methods(), ","); !strings.Contains(got, "session.send claude:old") {
		t.Fatalf("old daemon calls = %s", got)
	}
	for _, call := range mine.methods() {
		if call != "session.read claude:old" {
			t.Fatalf("this version's daemon served %q", call)
		}
	}
	// The decision is remembered: one probe of ours for both calls.
	if n := len(mine.methods()); n != 1 {
		t.Fatalf("this version's daemon was asked %d times: %v", n, mine.methods())
	}
	// A Session this version holds stays here without asking anyone else.
	before := len(old.methods())
	if _, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: "claude:mine"}); err != nil {
		t.Fatalf("read mine: %v", err)
	}
	if len(old.methods()) != before {
		t.Fatal("the other daemon was asked about our own Session")
	}
	// Nobody holds it: this version's daemon answers NOT_FOUND.
	if _, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: "claude:nobody"}); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("read nobody: %v", err)
	}
}

func TestQualifiedIDFoundWhenThisVersionIsNotRunning(t *testing.T) {
	home, _, old := twoVersions(t, nil, map[string]bool{"claude:old": true})
	c := newClient(t, client.Options{Home: home, NoAutostart: true})
	if _, err := c.SessionRead(context.Background(), rpc.SessionReadParams{Session: "claude:old"}); err != nil {
		t.Fatal(err)
	}
	if len(old.methods()) != 2 { // the probe, then the call
		t.Fatalf("old daemon calls = %v", old.methods())
	}
}

func TestAliasesAndPinnedSocketsAreNotRouted(t *testing.T) {
	home, mine, old := twoVersions(t, map[string]bool{}, map[string]bool{"review": true, "claude:old": true})
	ctx := context.Background()
	c := newClient(t, client.Options{Home: home, NoAutostart: true})
	if _, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: "review"}); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("alias: %v", err)
	}
	pinned := filepath.Join(home, "run", statedir.Version, "dlgt.sock")
	c = newClient(t, client.Options{Getenv: env(map[string]string{"DLGT_HOME": home, "DLGT_SOCKET": pinned})})
	if _, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: "claude:old"}); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("pinned: %v", err)
	}
	if n := len(old.methods()); n != 0 {
		t.Fatalf("the other daemon was asked %d times", n)
	}
	if n := len(mine.methods()); n != 2 {
		t.Fatalf("this daemon calls = %v", mine.methods())
	}
}

// wantCode checks err is an *rpc.Error of code whose message holds every
// one of wants.
func wantCode(t *testing.T, err error, code rpc.Code, wants ...string) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	for _, w := range wants {
		if !strings.Contains(re.Message, w) {
			t.Fatalf("message %q lacks %q", re.Message, w)
		}
	}
}

// Without autostart, RPC_UNAVAILABLE says which socket was tried, why no
// daemon was started and what to do; DLGT_NO_AUTOSTART is a boolean.
func TestNoAutostartSaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	home := shortDir(t)
	for _, v := range []string{"1", "true", "TRUE"} {
		c := newClient(t, client.Options{Getenv: env(map[string]string{"DLGT_HOME": home, "DLGT_NO_AUTOSTART": v})})
		_, err := c.SessionList(ctx, rpc.SessionListParams{})
		wantCode(t, err, rpc.CodeRPCUnavailable, home+"/run/", "DLGT_NO_AUTOSTART is true", "dlgt daemon")
	}
	c := newClient(t, client.Options{Home: home, NoAutostart: true})
	_, err := c.SessionList(ctx, rpc.SessionListParams{})
	wantCode(t, err, rpc.CodeRPCUnavailable, "DLGT_NO_AUTOSTART is true")

	c = newClient(t, client.Options{Getenv: env(map[string]string{"DLGT_HOME": home, "DLGT_NO_AUTOSTART": "maybe"})})
	_, err = c.SessionList(ctx, rpc.SessionListParams{})
	wantCode(t, err, rpc.CodeInvalidArgument, "is not a boolean")

	// 0/false start one: with no executable to run, that is said.
	for _, v := range []string{"0", "false"} {
		c = newClient(t, client.Options{Getenv: env(map[string]string{"DLGT_HOME": home, "DLGT_NO_AUTOSTART": v})})
		_, err = c.SessionList(ctx, rpc.SessionListParams{})
		wantCode(t, err, rpc.CodeRPCUnavailable, "cannot locate the dlgt executable")
	}

	sock := filepath.Join(shortDir(t), "pinned.sock")
	c = newClient(t, client.Options{Home: home, Socket: sock})
	_, err = c.SessionList(ctx, rpc.SessionListParams{})
	wantCode(t, err, rpc.CodeRPCUnavailable, sock, "DLGT_SOCKET pins this socket")
}

// An unusable state directory is RPC_UNAVAILABLE naming it, and nothing
// is changed; a loose mode on our own directory is tightened, aloud.
func TestUnusableHomeIsUnavailable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, []byte("x"), 0o600)
	for _, tc := range []struct{ home, want string }{
		{file, "move " + file + " away"},
		{file + "/sub", file + " is not a directory"},
	} {
		c := newClient(t, client.Options{Home: tc.home, DaemonExe: "/nonexistent/dlgt"})
		_, err := c.SessionList(ctx, rpc.SessionListParams{})
		wantCode(t, err, rpc.CodeRPCUnavailable, "cannot start the daemon", tc.home, tc.want)
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != "x" {
		t.Fatalf("the file used as home changed: %q %v", data, err)
	}
	// No home at all.
	c := newClient(t, client.Options{})
	_, err := c.SessionList(ctx, rpc.SessionListParams{})
	wantCode(t, err, rpc.CodeRPCUnavailable, "neither DLGT_HOME, XDG_STATE_HOME nor HOME is set")

	loose := filepath.Join(dir, "loose")
	os.Mkdir(loose, 0o700)
	os.Chmod(loose, 0o755)
	var notices strings.Builder
	c = newClient(t, client.Options{Home: loose, Stderr: &notices})
	_, err = c.SessionList(ctx, rpc.SessionListParams{})
	wantCode(t, err, rpc.CodeRPCUnavailable, "cannot locate the dlgt executable")
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o700 || !strings.Contains(notices.String(), "tightened "+loose+" from mode 0755 to 0700") {
		t.Fatalf("loose home: mode %v, notices %q", fi.Mode(), notices.String())
	}
}

// With no daemon running, a call starts one (`DaemonExe daemon`, here
// this test binary in its daemon role) and is served by it; DaemonStop
// stops it and DaemonStatus then reports none, never starting one.
func TestAutostart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := filepath.Join(shortDir(t), "h")
	exe, _ := os.Executable()
	vars := map[string]string{"DLGT_TEST_ROLE": "daemon", "DLGT_HOST": "elsewhere", "PATH": os.Getenv("PATH"), "GORACE": "atexit_sleep_ms=0"}
	c := newClient(t, client.Options{Home: home, DaemonExe: exe, Environ: environ(vars)})
	st, sock, err := c.DaemonStatus(ctx)
	if err != nil || st != nil {
		t.Fatalf("status before: %+v %v", st, err)
	}
	if _, err := c.HarnessList(ctx, rpc.HarnessListParams{}); err != nil {
		t.Fatalf("harness.list with autostart: %v", err)
	}
	t.Cleanup(func() { c.DaemonStop(context.Background(), time.Minute) })
	st, sock2, err := c.DaemonStatus(ctx)
	if err != nil || st == nil || st.Home != home || sock2 != sock || st.Socket != sock {
		t.Fatalf("status after: %+v %s %v", st, sock2, err)
	}
	stopped, err := c.DaemonStop(ctx, time.Minute)
	if err != nil || !stopped {
		t.Fatalf("stop: %v %v", stopped, err)
	}
	if st, _, err := c.DaemonStatus(ctx); err != nil || st != nil {
		t.Fatalf("status after stop: %+v %v", st, err)
	}
	_, err = c.DaemonStop(ctx, time.Minute)
	wantCode(t, err, rpc.CodeRPCUnavailable, "no daemon is running")
	// A follower's dial does not bring it back.
	if _, err := c.DialExisting(ctx, ""); !errors.Is(err, rpc.ErrRPCUnavailable) {
		t.Fatalf("DialExisting with none running: %v", err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a daemon came back: %v", err)
	}
}
