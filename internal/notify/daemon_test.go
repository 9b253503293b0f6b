package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/follow"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The test binary doubles as the fake Claude Code and the hook forwarder
// (testkit.Main).
func TestMain(m *testing.M) { testkit.Main(m) }

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// notifier is one run of Run.
type notifier struct {
	out, stderr *syncBuf
	stop        func()
}

func startNotifier(t *testing.T, c *client.Client, opts Options) *notifier {
	t.Helper()
	n := &notifier{out: &syncBuf{}, stderr: &syncBuf{}}
	opts.Out, opts.Stderr = n.out, n.stderr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, c, opts) }()
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("notify did not stop")
			}
		})
	}
	t.Cleanup(n.stop)
	return n
}

func (n *notifier) lines() []string {
	s := strings.TrimSpace(n.out.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// A Session that becomes blocked is told exactly once, with its --exec
// command given the details; a notifier stopped and started again on the
// same state file does not tell it again, and tells the one that became
// blocked while it was down.
func TestNotifyBlockedAcrossRestart(t *testing.T) {
	dir, err := os.MkdirTemp("", "dln")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "h")
	testkit.StartDaemon(t, home)
	c, err := client.New(client.Options{Home: home, Getenv: func(string) string { return "" }, NoAutostart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	launchEnv := testkit.FakeClaudeEnv(dir)
	ctx := context.Background()
	no := false
	create := func(alias, cmd string) rpc.Receipt {
		t.Helper()
		r, err := c.SessionCreate(ctx, rpc.SessionCreateParams{
			Title: "notify " + alias, Alias: alias, Harness: "claude", Cwd: t.TempDir(),
			Prompt: "[[tool " + cmd + "]] run it", RequestID: "notify-" + alias, Environment: launchEnv,
			AutoApprove: &no, HarnessOptions: []string{"permission-mode=default"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	waitBlocked := func(r rpc.Receipt) {
		t.Helper()
		cursor, _ := json.Marshal(r.Cursor)
		doc, err := c.SessionFetch(ctx, rpc.SessionFetchParams{Session: r.Session.ID, Cursor: cursor, Until: "result", WaitMS: 30000})
		if err != nil || doc.Reason != rpc.ReasonBlocked {
			t.Fatalf("fetch until blocked: %+v %v", doc, err)
		}
	}

	state := filepath.Join(dir, "notify.seq")
	execOut := filepath.Join(dir, "exec.log")
	cmdline := `{ printf '%s|%s|%s|%s|%s|' "$DLGT_EVENT" "$DLGT_SESSION" "$DLGT_ALIAS" "$DLGT_HARNESS" "$DLGT_MESSAGE"; tr -d '\n'; echo; } >> "` + execOut + `"`
	opts := Options{StateFile: state, Exec: cmdline, ExecTimeout: 30 * time.Second, RetryMin: 50 * time.Millisecond}
	n := startNotifier(t, c, opts)
	// Subscribed (the state file holds where it started) before the
	// Session is created, so its blocked event is after the start.
	waitFor(t, "the state file", func() bool { _, ok, _ := follow.ReadState(state); return ok })

	a := create("nta", "echo first")
	waitBlocked(a)
	waitFor(t, "the notification of nta", func() bool { return len(n.lines()) >= 1 })
	waitFor(t, "the --exec of nta", func() bool { b, _ := os.ReadFile(execOut); return strings.Count(string(b), "\n") >= 1 })
	handled(t, state, execOut, 1)
	n.stop()
	if got := n.lines(); len(got) != 1 || got[0] != "nta (claude) is blocked: Bash echo first" && !strings.HasPrefix(got[0], "nta (claude) is waiting: Bash echo first") {
		t.Fatalf("notifications %q, want exactly nta's", got)
	}
	b, _ := os.ReadFile(execOut)
	fields := strings.SplitN(strings.TrimSpace(string(b)), "|", 6)
	if len(fields) != 6 || fields[0] != rpc.EventSessionBlocked || fields[1] != a.Session.ID || fields[2] != "nta" || fields[3] != "claude" ||
		fields[4] != n.lines()[0] || !strings.Contains(fields[5], `"type":"session.blocked"`) || !strings.Contains(fields[5], `"session_id":"`+a.Session.ID+`"`) {
		t.Fatalf("--exec got %q", b)
	}

	// Down: another Session becomes blocked.
	bb := create("ntb", "echo second")
	waitBlocked(bb)
	n2 := startNotifier(t, c, opts)
	waitFor(t, "the notification of ntb", func() bool { return len(n2.lines()) >= 1 })
	handled(t, state, execOut, 2)
	n2.stop()
	if got := n2.lines(); len(got) != 1 || !strings.HasPrefix(got[0], "ntb (claude) is ") || !strings.Contains(got[0], "echo second") {
		t.Fatalf("after the restart: %q, want only ntb's (nta's not again)", got)
	}
	b, _ = os.ReadFile(execOut)
	t.Logf("told: %q then %q; --exec:\n%s", n.lines(), n2.lines(), b)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "|"+bb.Session.ID+"|ntb|") {
		t.Fatalf("--exec log %q", b)
	}
}

// handled waits until the n-th --exec command has run and the state file
// says its event was handled (a notifier stopped while the command still
// runs tells the event again after a restart, by design).
func handled(t *testing.T, state, execOut string, n int) {
	t.Helper()
	var seq uint64
	waitFor(t, fmt.Sprintf("--exec command %d", n), func() bool {
		b, _ := os.ReadFile(execOut)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < n {
			return false
		}
		var ev rpc.Event
		f := strings.SplitN(lines[n-1], "|", 6)
		if len(f) != 6 || json.Unmarshal([]byte(f[5]), &ev) != nil {
			return false
		}
		seq = ev.Seq
		return true
	})
	waitFor(t, fmt.Sprintf("the state file at %d", seq), func() bool { got, _, _ := follow.ReadState(state); return got >= seq })
}

// Started before any daemon (at login), dlgt notify waits for one, never
// starts one, and tells what happens once it runs.
func TestNotifyWaitsForDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("", "dln")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "h")
	c, err := client.New(client.Options{Home: home, Getenv: func(string) string { return "" }, NoAutostart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	state := filepath.Join(dir, "notify.seq")
	n := startNotifier(t, c, Options{StateFile: state, RetryMin: 20 * time.Millisecond})
	waitFor(t, "the waiting notice", func() bool { return strings.Contains(n.stderr.String(), "dlgt notify: no daemon to follow yet") })
	if _, ok, _ := follow.ReadState(state); ok {
		t.Fatal("a state stored with no daemon")
	}
	testkit.StartDaemon(t, home)
	waitFor(t, "the subscription", func() bool { _, ok, _ := follow.ReadState(state); return ok })
	no := false
	r, err := c.SessionCreate(context.Background(), rpc.SessionCreateParams{
		Title: "late", Alias: "late", Harness: "claude", Cwd: t.TempDir(), Prompt: "[[tool echo late]] run it",
		RequestID: "notify-late", Environment: testkit.FakeClaudeEnv(dir), AutoApprove: &no, HarnessOptions: []string{"permission-mode=default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the notification", func() bool { return len(n.lines()) >= 1 })
	n.stop()
	if got := n.lines(); len(got) != 1 || !strings.HasPrefix(got[0], "late (claude) is ") || !strings.Contains(got[0], "echo late") {
		t.Fatalf("told %q for %s", got, r.Session.ID)
	}
}
