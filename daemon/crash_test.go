package daemon

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// childDaemonMain is the "daemon" test role: the test binary runs a daemon
// with startTestDaemon's options on the paths named by DLGT_CHILD_HOME and
// DLGT_CHILD_SOCKET, prints "ready" once serving, and stops on SIGTERM.
func childDaemonMain() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := statedir.ResolvePaths(func(k string) string {
		switch k {
		case "DLGT_HOME":
			return os.Getenv("DLGT_CHILD_HOME")
		case "DLGT_SOCKET":
			return os.Getenv("DLGT_CHILD_SOCKET")
		}
		return ""
	}, "test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Info: a failed test shows the child's deliveries (dumpOnFailure).
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err = Run(ctx, Config{Paths: p, Logger: log, Ready: func() { fmt.Println("ready") },
		Options: Options{HookCommand: []string{"env", "DLGT_TEST_ROLE=hook", exe}, StopGrace: 2 * time.Second}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	return 0
}

// daemonProc is a daemon in a child process of the test binary (so it
// can be SIGKILLed). Its stderr is kept in one file across restarts.
type daemonProc struct {
	t        testing.TB
	name     string        // in messages
	args     []string      // the test binary's arguments
	env      []string      // added to the test's environment
	stopWait time.Duration // how long SIGTERM may take

	cmd    *exec.Cmd
	stderr *os.File
	exited chan struct{}
}

// childDaemon is a plain daemon in a child process (DLGT_TEST_ROLE=daemon).
type childDaemon struct{ daemonProc }

// newChildDaemon prepares a child daemon on a fresh home (not started),
// with a client for it whose create and send pass env on.
func newChildDaemon(t *testing.T, env map[string]string) (*testDaemon, *childDaemon) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "state")
	sockDir, err := os.MkdirTemp("", "dlgt-k") // short: socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket := filepath.Join(sockDir, "d.sock")
	cd := &childDaemon{daemonProc{t: t, name: "child daemon", stopWait: lifecycleGuard,
		env: []string{"DLGT_TEST_ROLE=daemon", "DLGT_CHILD_HOME=" + home, "DLGT_CHILD_SOCKET=" + socket, "GORACE=atexit_sleep_ms=0"}}}
	// A test that ends with the daemon still running (a failure, or on
	// purpose) kills it; cleanups registered before this one run after.
	t.Cleanup(func() {
		if cd.cmd != nil && cd.exited != nil {
			select {
			case <-cd.exited:
			default:
				cd.cmd.Process.Kill()
				<-cd.exited
			}
		}
	})
	return &testDaemon{t: t, paths: testPaths(t, home, socket), env: env}, cd
}

// start runs the daemon and waits until it serves.
func (d *daemonProc) start() {
	t := d.t
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if d.stderr == nil {
		if d.stderr, err = os.CreateTemp(t.TempDir(), "daemon-stderr"); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe, d.args...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stderr = d.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	exited := make(chan struct{})
	d.exited = exited
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if sc.Text() == "ready" && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		cmd.Wait()
		close(exited)
	}()
	select {
	case ok := <-ready:
		if !ok {
			<-exited
			t.Fatalf("%s exited before ready: %s", d.name, d.log())
		}
	case <-time.After(lifecycleGuard):
		t.Fatalf("%s not ready: %s", d.name, d.log())
	}
}

// dumpOnFailure logs the daemon's stderr (every start's) when the test
// fails, so a failure that runs once in CI shows what the daemon did.
func (d *daemonProc) dumpOnFailure() {
	d.t.Cleanup(func() {
		if d.t.Failed() && d.stderr != nil {
			d.t.Logf("%s log:\n%s", d.name, d.log())
		}
	})
}

func (d *daemonProc) log() string {
	b, _ := os.ReadFile(d.stderr.Name())
	return string(b)
}

// kill9 SIGKILLs the daemon process and reaps it.
func (d *daemonProc) kill9() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-d.exited:
	case <-time.After(lifecycleGuard):
		d.t.Fatal("SIGKILLed daemon not reaped")
	}
}

// stop ends the daemon with SIGTERM and checks it exited 0 (a race report
// exits 66).
func (d *daemonProc) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(d.stopWait):
		d.cmd.Process.Kill()
		<-d.exited
		d.t.Fatalf("%s ignored SIGTERM: %s", d.name, d.log())
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		d.t.Fatalf("%s exited %d: %s", d.name, code, d.log())
	}
}

// pgrepGroup lists live members of a process group with pgrep.
func pgrepGroup(t testing.TB, pgid int) []int {
	t.Helper()
	out, err := exec.Command("pgrep", "-g", strconv.Itoa(pgid)).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return nil // no match
		}
		t.Logf("pgrep: %v (falling back to /proc)", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		if st := procState(pid); st != 0 && st != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGroupGone waits until no live process is left in group pgid,
// SIGKILLing the group while it has members.
func waitGroupGone(t testing.TB, pgid int) { waitGroup(t, pgid, true) }

// waitGroup waits until group pgid is empty; kill says whether to help.
func waitGroup(t testing.TB, pgid int, kill bool) {
	t.Helper()
	deadline := time.Now().Add(lifecycleGuard)
	for {
		pids := pgrepGroup(t, pgid)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has %v", pgid, pids)
		}
		if kill {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A daemon killed with SIGKILL mid-turn: the next daemon on the same
// home marks the Session failed with an interrupted result, keeps its
// history, events, scrollback and receipt, and resumes it by id.
func TestDaemonKill9MidTurn(t *testing.T) {
	env := startTestDaemon(t).env // the fake harness's client environment
	var groups []int
	var mu sync.Mutex
	t.Cleanup(func() { // after the child daemon is killed
		mu.Lock()
		defer mu.Unlock()
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	})
	td, cd := newChildDaemon(t, env)
	cd.start()
	firstPID := cd.cmd.Process.Pid

	cwd := t.TempDir()
	create := rpc.SessionCreateParams{Title: "doomed daemon", Harness: "claude", Cwd: cwd,
		Prompt: "[[flood 100]] [[slow 30000]] long turn", RequestID: "k9-1", Environment: env}
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, create, &r)
	id := r.Session.ID
	// Wait until flooded rows are committed (fetch returns committed
	// stable rows only) and the turn is spinning.
	deadline := time.Now().Add(lifecycleGuard)
	cursor := r.Cursor
	var stable []string
	for !strings.Contains(strings.Join(stable, "\n"), "FLOOD 000050") {
		if time.Now().After(deadline) {
			t.Fatalf("flood rows never committed; got %d rows", len(stable))
		}
		var doc rpc.FetchDocument
		td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "screen": true, "wait_ms": 1000}, &doc)
		if s := doc.Sessions[0].Screen; s != nil {
			stable = append(stable, s.Stable...)
		}
		cursor = doc.Cursor
	}
	td.waitScreen(t, id, "Working")
	harness := harnessPID(t, cwd)
	mu.Lock()
	groups = append(groups, harness)
	mu.Unlock()
	before := td.events(t, id)
	var lastSeq uint64
	for _, e := range before {
		if e.Seq <= lastSeq {
			t.Fatalf("events out of order: %v", before)
		}
		lastSeq = e.Seq
	}

	cd.kill9()
	// The harness group outlives the daemon as an orphan (it may also end
	// itself on the terminal hangup): kill it by group.
	syscall.Kill(-harness, syscall.SIGKILL)
	waitGroupGone(t, harness)
	waitNoProcs(t, cwd)

	cd.start()
	if cd.cmd.Process.Pid == firstPID {
		t.Fatal("daemon not restarted")
	}
	rd := td.read(t, id)
	if rd.Session.State != rpc.StateFailed {
		t.Fatalf("state after kill -9 = %s", rd.Session.State)
	}
	checkInterrupted(t, rd, 1, "daemon_restarted")
	after := td.events(t, id)
	if len(after) != len(before)+1 {
		t.Fatalf("events %v -> %v", eventTypes(before), eventTypes(after))
	}
	for i := range before {
		if after[i] != before[i] {
			t.Fatalf("history changed at %d: %+v -> %+v", i, before[i], after[i])
		}
	}
	failed := after[len(after)-1]
	if failed.Type != rpc.EventSessionFailed || failed.ExecutionSeq != 1 || failed.Seq <= lastSeq || failed.SessionID != id {
		t.Fatalf("failed event = %+v (previous seq %d)", failed, lastSeq)
	}
	var page rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: id, Lines: 1000}, &page)
	if !strings.Contains(strings.Join(page.Lines, "\n"), "FLOOD 000050") {
		t.Fatalf("scrollback lost committed rows: %q", page.Lines)
	}
	// The receipt replays.
	var again rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, create, &again)
	if !again.Replayed || again.Session.ID != id || again.ExecutionSeq != 1 {
		t.Fatalf("replay = %+v", again)
	}
	// The Session resumes by its id; event seqs keep increasing.
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "back again", RequestID: "k9-2", Resume: true, Environment: env}, &r2)
	if r2.Session.ID != id || r2.ExecutionSeq != 2 {
		t.Fatalf("resume = %+v", r2)
	}
	_, res := td.waitResult(t, id, r2.Cursor)
	if res.Status != rpc.StatusCompleted || *res.FinalText != "MOCK-REPLY: back again" {
		t.Fatalf("resumed result = %+v", res)
	}
	final := td.events(t, id)
	for i := 1; i < len(final); i++ {
		if final[i].Seq <= final[i-1].Seq {
			t.Fatalf("event seq not increasing: %v", final)
		}
	}
	harness2 := harnessPID(t, cwd)
	mu.Lock()
	groups = append(groups, harness2)
	mu.Unlock()

	cd.stop()
	for _, g := range []int{harness, harness2, cd.cmd.Process.Pid, firstPID} {
		waitGroup(t, g, false) // fails if anything outlives the bound
	}
	waitNoProcs(t, cwd)
}
