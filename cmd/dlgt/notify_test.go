package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// dlgt notify tells the selected events (blocked by default, not idle)
// one line each, stores its state, and refuses a bad --on.
func TestNotifyCommand(t *testing.T) {
	dir, err := os.MkdirTemp("", "dlgt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &restartingDaemon{socket: filepath.Join(dir, "s"), grew: make(chan struct{})}
	d.add(ev(1, "session.created", 0, ""))
	d.start(t)
	defer d.stop()
	state := filepath.Join(dir, "state")

	e, out, errb := testEnv(t, map[string]string{"DLGT_SOCKET": d.socket}, "")
	if code := run([]string{"notify", "--on", "busy", "--state", state}, e); code != cli.ExitError || !strings.Contains(out.String(), `\"busy\" is not one of blocked, failed, idle`) {
		t.Fatalf("--on busy: exit %d, %q %q", code, out, errb)
	}

	e, _, _ = testEnv(t, map[string]string{"DLGT_SOCKET": d.socket}, "")
	stdout, stderr := &syncBuf{}, &syncBuf{}
	e.Stdout, e.Stderr = stdout, stderr
	e.Signals = make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() { done <- run([]string{"notify", "--state", state, "--bell"}, e) }()
	waitFor(t, "the state file", func() bool { b, _ := os.ReadFile(state); return strings.TrimSpace(string(b)) == "1" })
	blocked := rpc.Event{SchemaVersion: 1, Seq: 3, Type: "session.blocked", SessionID: "claude:1111", ExecutionSeq: 1, Reason: "permission", Tool: "Bash", Command: "make test"}
	d.add(ev(2, "session.idle", 1, "completed"), blocked)
	waitFor(t, "the notification", func() bool { return strings.Contains(stdout.String(), "\n") })
	waitFor(t, "the state file at 3", func() bool { b, _ := os.ReadFile(state); return strings.TrimSpace(string(b)) == "3" })
	e.Signals <- os.Interrupt
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("dlgt notify did not stop")
	}
	if got := stdout.String(); got != "claude:1111 is blocked: Bash make test\a\n" {
		t.Fatalf("stdout %q (stderr %q)", got, stderr)
	}
}
