package notify

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestParseOn(t *testing.T) {
	if got, err := ParseOn("blocked, idle"); err != nil || strings.Join(got, ",") != "blocked,idle" {
		t.Fatalf("ParseOn = %v, %v", got, err)
	}
	for _, bad := range []string{"", "busy", "blocked,blocked", "blocked,"} {
		if _, err := ParseOn(bad); !errors.Is(err, rpc.ErrInvalidArgument) {
			t.Errorf("ParseOn(%q) = %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}

// Describe names the Session by alias (else title, else id) and its
// harness, and says what a blocked one asks: the pending request when the
// read carries one (the shape session.read gains for it), else the
// event's tool and command, else just that it is blocked.
func TestDescribe(t *testing.T) {
	blocked := rpc.Event{Seq: 7, Type: rpc.EventSessionBlocked, SessionID: "claude:11", Reason: "permission", Tool: "Bash", Command: "echo hi"}
	read := func(extra string) json.RawMessage {
		return json.RawMessage(`{"session":{"id":"claude:11","alias":"rev","title":"Review","harness":"claude","state":"blocked"` + extra + `},"result":null}`)
	}
	for _, tc := range []struct {
		name string
		ev   rpc.Event
		read json.RawMessage
		want string
	}{
		{"pending permission", blocked, read(`,"pending":{"id":"prq_1","kind":"permission","tool":"Bash","input":"rm -rf build\nand more","asked_at_ms":5}`),
			"rev (claude) is waiting: Bash rm -rf build …"},
		{"pending question", blocked, read(`,"pending":{"id":"prq_2","kind":"question","question":"Which branch?","options":[{"id":"a","label":"main"},{"id":"b","label":"dev"}]}`),
			"rev (claude) is waiting: Which branch? [main | dev]"},
		{"no pending field", blocked, read(``), "rev (claude) is blocked: Bash echo hi"},
		{"an unknown pending shape", blocked, read(`,"pending":"later"`), "rev (claude) is blocked: Bash echo hi"},
		{"no read", rpc.Event{Seq: 8, Type: rpc.EventSessionBlocked, SessionID: "claude:11"}, nil, "claude:11 is blocked"},
		{"answered since", blocked, json.RawMessage(`{"session":{"id":"claude:11","title":"Review","harness":"claude","state":"busy"}}`),
			"Review (claude) is blocked: Bash echo hi (now busy)"},
		{"another Session's read", blocked, json.RawMessage(`{"session":{"id":"claude:22","alias":"x","harness":"codex"}}`), "claude:11 is blocked: Bash echo hi"},
		{"escapes and controls", rpc.Event{Type: rpc.EventSessionBlocked, SessionID: "claude:11", Tool: "Bash", Command: "echo \x1b[31mred\x07"}, read(``),
			"rev (claude) is blocked: Bash echo [31mred"},
		{"failed", rpc.Event{Type: rpc.EventSessionFailed, SessionID: "claude:11", ExecutionSeq: 2, Reason: "crashed"},
			json.RawMessage(`{"session":{"id":"claude:11","alias":"rev","harness":"claude"},"result":{"execution_seq":2,"status":"failed","error":{"code":"HARNESS_CRASHED","message":"exit status 1"}}}`),
			"rev (claude) failed: exit status 1"},
		{"idle", rpc.Event{Type: rpc.EventSessionIdle, SessionID: "claude:11", ExecutionSeq: 3, ResultStatus: "completed"},
			json.RawMessage(`{"session":{"id":"claude:11","alias":"rev","harness":"claude"},"result":{"execution_seq":3,"status":"completed","final_text":"All done.\nDetails"}}`),
			"rev (claude) finished #3 (completed): All done. …"},
	} {
		if got := Describe(tc.ev, tc.read).Message; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	long := Describe(blocked, read(`,"pending":{"kind":"permission","tool":"Bash","input":"`+strings.Repeat("é", 5000)+`"}`)).Message
	if len(long) > maxMessage || !strings.HasSuffix(long, "…") {
		t.Errorf("a long input is not bounded: %d bytes", len(long))
	}
}

// A command's output is bounded, a slow one is killed after its timeout
// and reported, and neither stops the notifier; --desktop runs its
// program with the title and the message; --bell rings.
func TestDeliverBounds(t *testing.T) {
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	fake := filepath.Join(dir, "notify-send")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+args+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, stderr strings.Builder
	opts := Options{Out: &out, Stderr: &stderr, Bell: true, Desktop: true, DesktopBin: fake,
		Exec: "head -c 100000 /dev/zero | tr '\\0' x; sleep 30", ExecTimeout: 300 * time.Millisecond}
	n := Notice{Seq: 3, Event: rpc.EventSessionBlocked, SessionID: "claude:1", Alias: "rev", Harness: "claude", Message: "rev (claude) is blocked"}
	if err := deliver(context.Background(), opts, n, []byte(`{"seq":3}`)); err != nil {
		t.Fatal(err)
	}
	if out.String() != "rev (claude) is blocked\a\n" {
		t.Errorf("line %q", out.String())
	}
	if b, _ := os.ReadFile(args); string(b) != "-a\ndlgt\n--\ndlgt: rev\nrev (claude) is blocked\n" {
		t.Errorf("notify-send args %q", b)
	}
	if s := stderr.String(); len(s) > execOutputCap+200 || !strings.Contains(s, "--exec for event 3 (session.blocked) failed: killed after 300ms") {
		t.Errorf("stderr (%d bytes) ends %q", len(s), s[max(0, len(s)-120):])
	}
	// A follow that ends while the command runs leaves the event
	// unhandled.
	ctx, cancel := context.WithCancel(context.Background())
	opts.Desktop, opts.Exec, opts.ExecTimeout = false, "sleep 30", time.Minute
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if err := deliver(ctx, opts, n, []byte(`{"seq":3}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("deliver cut short: %v", err)
	}
}

// A second notifier on the same state file is refused at once (it would
// tell every event twice); the first one's end frees it.
func TestStateFileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.seq")
	unlock, err := lockState(path)
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), nil, Options{StateFile: path})
	if !errors.Is(err, rpc.ErrInvalidArgument) || !strings.Contains(err.Error(), "in use by another dlgt notify") {
		t.Fatalf("second notifier: %v", err)
	}
	unlock()
	again, err := lockState(path)
	if err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
	again()
}
