package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// hangGuard bounds every wait of these tests; it is never a timing
// assertion.
const hangGuard = 30 * time.Second

// Tests here never run in parallel: listen changes the process umask
// while it binds.

func daemonPaths(t testing.TB, env map[string]string) statedir.Paths {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["DLGT_HOME"]; !ok {
		env["DLGT_HOME"] = filepath.Join(t.TempDir(), "home")
	}
	p, err := statedir.ResolvePaths(func(k string) string { return env[k] }, statedir.Version)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type runningDaemon struct {
	cancel   context.CancelFunc
	finished chan struct{} // closed when Run has returned
	err      error         // Run's result, set before finished closes
}

// stop cancels the daemon and returns Run's result.
func (r *runningDaemon) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

// wait returns Run's result.
func (r *runningDaemon) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-r.finished:
		return r.err
	case <-time.After(hangGuard):
		t.Fatal("Run did not return")
		return nil
	}
}

// startDaemon runs a daemon on p. When it fails to start, the returned
// error is Run's; otherwise the daemon is serving and is stopped at
// cleanup.
func startDaemon(t testing.TB, p statedir.Paths) (*runningDaemon, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	r := &runningDaemon{cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(r.finished)
		r.err = Run(ctx, Config{
			Paths:  p,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready:  func() { close(ready) },
		})
	}()
	select {
	case <-ready:
		t.Cleanup(func() {
			cancel()
			select {
			case <-r.finished:
			case <-time.After(hangGuard):
				t.Error("Run did not return at cleanup")
			}
		})
		return r, nil
	case <-r.finished:
		cancel()
		if r.err == nil {
			t.Fatal("Run returned nil before it was ready")
		}
		return nil, r.err
	case <-time.After(hangGuard):
		cancel()
		t.Fatal("daemon never became ready")
		return nil, nil
	}
}

func mustStartDaemon(t testing.TB, p statedir.Paths) *runningDaemon {
	t.Helper()
	r, err := startDaemon(t, p)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

func dialDaemon(t testing.TB, socket string) *rpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func callDaemon(t testing.TB, c *rpc.Client, method string, params, out any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	return c.Call(ctx, method, params, out)
}

func wantMode(t testing.TB, path string, want os.FileMode) os.FileInfo {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Fatalf("%s has mode %#o, want %#o", path, got, want)
	}
	return fi
}

func TestRunLayoutStatusAndCancel(t *testing.T) {
	p := daemonPaths(t, nil)
	// A pre-existing home with a loose mode is tightened.
	if err := os.MkdirAll(p.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p.Home, 0o755)
	r := mustStartDaemon(t, p)

	wantMode(t, p.Home, 0o700)
	wantMode(t, p.RunDir, 0o700)
	wantMode(t, p.DataDir, 0o700)
	if fi := wantMode(t, p.Socket, 0o600); fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("%s is not a socket", p.Socket)
	}
	if !strings.HasPrefix(p.Socket, p.RunDir+string(filepath.Separator)) {
		t.Fatalf("socket %s is not in the run dir %s", p.Socket, p.RunDir)
	}

	c := dialDaemon(t, p.Socket)
	var st rpc.DaemonStatus
	if err := callDaemon(t, c, rpc.MethodDaemonStatus, struct{}{}, &st); err != nil {
		t.Fatalf("status: %v", err)
	}
	if st.Version != statedir.Version || st.Commit != statedir.CommitID() || st.PID != os.Getpid() || st.Socket != p.Socket || st.Home != p.Home || st.InstanceID == "" || st.Connections != 1 {
		t.Fatalf("status %+v", st)
	}
	// Strict params on internal methods too.
	if err := callDaemon(t, c, rpc.MethodDaemonStatus, map[string]int{"x": 1}, nil); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("status with params = %v, want INVALID_ARGUMENT", err)
	}
	// The runtime answers unknown methods with INVALID_ARGUMENT naming them.
	err := callDaemon(t, c, "no.such.method", nil, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || !strings.Contains(re.Message, "no.such.method") {
		t.Fatalf("unknown method = %v", err)
	}
	// A fresh daemon holds no Sessions.
	var list rpc.SessionListResult
	if err := callDaemon(t, c, rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list); err != nil || list.Sessions == nil || len(list.Sessions) != 0 {
		t.Fatalf("session.list = %+v, %v; want an empty list", list, err)
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v after cancel", err)
	}
	if _, err := os.Lstat(p.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind after a graceful stop: %v", err)
	}
}

func TestRunShutdownMethod(t *testing.T) {
	p := daemonPaths(t, nil)
	r := mustStartDaemon(t, p)
	c := dialDaemon(t, p.Socket)
	if err := callDaemon(t, c, rpc.MethodDaemonShutdown, struct{}{}, nil); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if _, err := os.Lstat(p.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// staleSocket leaves a socket file at path with nothing listening.
func staleSocket(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
}

func TestRunReplacesStaleSocket(t *testing.T) {
	p := daemonPaths(t, nil)
	staleSocket(t, p.Socket)
	// A second link keeps the stale inode alive, so its number cannot be
	// reused by the new socket and SameFile below is meaningful.
	if err := os.Link(p.Socket, p.Socket+".old"); err != nil {
		t.Fatal(err)
	}
	old, err := os.Lstat(p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	mustStartDaemon(t, p)
	now := wantMode(t, p.Socket, 0o600)
	if os.SameFile(old, now) {
		t.Fatal("the stale socket was not replaced")
	}
	var st rpc.DaemonStatus
	if err := callDaemon(t, dialDaemon(t, p.Socket), rpc.MethodDaemonStatus, nil, &st); err != nil {
		t.Fatalf("status on the new socket: %v", err)
	}
}

func TestRunRefusesLiveSocket(t *testing.T) {
	p := daemonPaths(t, nil)
	if err := os.MkdirAll(p.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.Socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before, _ := os.Lstat(p.Socket)

	_, err = startDaemon(t, p)
	if !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("Run = %v, want ErrSocketInUse", err)
	}
	after, err := os.Lstat(p.Socket)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the live socket was touched: %v", err)
	}
	// The live listener still accepts.
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.DialTimeout("unix", p.Socket, hangGuard)
	if err != nil {
		t.Fatalf("live listener no longer reachable: %v", err)
	}
	c.Close()
}

func TestRunRefusesNonSocket(t *testing.T) {
	p := daemonPaths(t, nil)
	if err := os.MkdirAll(p.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	const content = "not a socket\n"
	if err := os.WriteFile(p.Socket, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Lstat(p.Socket)
	if _, err := startDaemon(t, p); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Run = %v, want a not-a-socket error", err)
	}
	after, err := os.Lstat(p.Socket)
	if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
		t.Fatalf("the file was touched: %v", err)
	}
	if b, _ := os.ReadFile(p.Socket); string(b) != content {
		t.Fatalf("content changed to %q", b)
	}
}

func TestRunRefusesStaleSocketOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to own a socket as another uid")
	}
	p := daemonPaths(t, nil)
	staleSocket(t, p.Socket)
	if err := os.Lchown(p.Socket, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Lstat(p.Socket)
	if _, err := startDaemon(t, p); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("Run = %v, want a foreign-owner error", err)
	}
	after, err := os.Lstat(p.Socket)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the foreign socket was touched: %v", err)
	}
}

func TestRunRefusesForeignStateDir(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to create a directory owned by another uid")
	}
	p := daemonPaths(t, nil)
	if err := os.MkdirAll(p.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p.Home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := startDaemon(t, p); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("Run = %v, want a foreign-owner error", err)
	}
}

func TestRunSecondDaemonFailsOnLock(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	p1 := daemonPaths(t, map[string]string{"DLGT_HOME": home})
	// Same home, a different socket: only the store lock stops it.
	p2 := daemonPaths(t, map[string]string{"DLGT_HOME": home, "DLGT_SOCKET": filepath.Join(t.TempDir(), "other.sock")})
	if p1.DB != p2.DB || p1.Socket == p2.Socket {
		t.Fatalf("paths: %+v vs %+v", p1, p2)
	}
	mustStartDaemon(t, p1)
	_, err := startDaemon(t, p2)
	// The running daemon is found on its own socket (the home's default).
	checkAlreadyRunning(t, err, p1)
	if _, err := os.Lstat(p2.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed daemon bound its socket: %v", err)
	}
	// The first daemon is unaffected.
	var st rpc.DaemonStatus
	if err := callDaemon(t, dialDaemon(t, p1.Socket), rpc.MethodDaemonStatus, nil, &st); err != nil {
		t.Fatalf("first daemon: %v", err)
	}
}

// A second daemon on the same home and socket (a second `dlgt daemon`)
// is refused with a typed error naming the running daemon, once.
func TestRunSecondDaemonSameSocket(t *testing.T) {
	p := daemonPaths(t, nil)
	mustStartDaemon(t, p)
	_, err := startDaemon(t, p)
	checkAlreadyRunning(t, err, p)
	var st rpc.DaemonStatus
	if err := callDaemon(t, dialDaemon(t, p.Socket), rpc.MethodDaemonStatus, nil, &st); err != nil {
		t.Fatalf("first daemon: %v", err)
	}
}

// checkAlreadyRunning: err is INVALID_ARGUMENT naming the running daemon
// (this process, its socket first.Socket), the state directory and the
// way forward, each once.
func checkAlreadyRunning(t *testing.T, err error, first statedir.Paths) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument {
		t.Fatalf("second Run = %v, want INVALID_ARGUMENT", err)
	}
	for _, want := range []string{
		fmt.Sprintf("a dlgt daemon (pid %d, socket %s) is already running", os.Getpid(), first.Socket),
		first.DataDir, "`dlgt daemon status`", "`dlgt daemon stop`",
	} {
		if n := strings.Count(re.Message, want); n != 1 {
			t.Errorf("message %q has %q %d times, want once", re.Message, want, n)
		}
	}
}

func TestRunSocketPathTooLong(t *testing.T) {
	p := daemonPaths(t, map[string]string{"DLGT_SOCKET": filepath.Join(t.TempDir(), strings.Repeat("s", 120)+".sock")})
	if _, err := startDaemon(t, p); err == nil {
		t.Fatal("Run succeeded on a socket path the kernel cannot bind")
	}
}
