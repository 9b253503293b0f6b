package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// restartingDaemon serves event.subscribe from a growing event log and can
// be stopped and started again on the same socket, as a daemon restart.
type restartingDaemon struct {
	socket string
	mu     sync.Mutex
	events []rpc.Event
	grew   chan struct{}
	srv    *rpc.Server
	done   chan struct{}
	cancel context.CancelFunc
}

type fakeEventStream struct {
	d     *restartingDaemon
	after uint64
}

func (s *fakeEventStream) Ack() any { return rpc.SubscribeAck{Subscribed: true, After: s.after} }

func (s *fakeEventStream) Run(ctx context.Context, emit func([]byte) error) error {
	for {
		s.d.mu.Lock()
		var out [][]byte
		for _, e := range s.d.events {
			if e.Seq > s.after {
				b, _ := rpc.Marshal(e)
				out = append(out, b)
				s.after = e.Seq
			}
		}
		grew := s.d.grew
		s.d.mu.Unlock()
		for _, b := range out {
			if err := emit(b); err != nil {
				return err
			}
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (d *restartingDaemon) add(evs ...rpc.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, evs...)
	close(d.grew)
	d.grew = make(chan struct{})
}

func (d *restartingDaemon) start(t *testing.T) {
	t.Helper()
	os.Remove(d.socket)
	l, err := net.Listen("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	d.srv = &rpc.Server{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Handler: rpc.HandlerFunc(func(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		if req.Method != rpc.MethodEventSubscribe {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "fake: %s", req.Method)
		}
		var p rpc.EventReadParams
		if err := rpc.Decode(req.Params, &p); err != nil {
			return nil, err
		}
		st := &fakeEventStream{d: d}
		if p.After != nil {
			st.after = *p.After
		} else {
			d.mu.Lock()
			if n := len(d.events); n > 0 {
				st.after = d.events[n-1].Seq
			}
			d.mu.Unlock()
		}
		return st, nil
	})}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan struct{})
	go func() { defer close(d.done); d.srv.Serve(ctx, l) }()
}

func (d *restartingDaemon) stop() {
	d.cancel()
	d.srv.Close()
	<-d.done
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func ev(seq uint64, typ string, exec uint64, status string) rpc.Event {
	return rpc.Event{SchemaVersion: 1, Seq: seq, Type: typ, SessionID: "claude:1111", ExecutionSeq: exec, ResultStatus: status}
}

// dlgt events --follow survives a daemon restart (every seq once, in
// order), runs --exec once per event with the event on stdin and its
// fields in the environment (a failing command is reported and the follow
// goes on), stores the last seq in --state, and a new follower on the same
// state file resumes after it.
func TestEventsFollowAcrossRestarts(t *testing.T) {
	dir, err := os.MkdirTemp("", "dlgt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &restartingDaemon{socket: filepath.Join(dir, "s"), grew: make(chan struct{})}
	d.add(ev(1, "session.created", 0, ""), ev(2, "session.busy", 1, ""), ev(3, "session.idle", 1, "completed"))
	d.start(t)
	out := t.TempDir()
	state := filepath.Join(out, "state")
	// Event 2's command fails; every command records its stdin and env.
	cmdline := `cat > "` + out + `/in.$DLGT_EVENT_SEQ"; echo "$DLGT_EVENT_TYPE|$DLGT_EVENT_SEQ|$DLGT_SESSION_ID|$DLGT_EXECUTION_SEQ|$DLGT_RESULT_STATUS" > "` + out + `/env.$DLGT_EVENT_SEQ"; test "$DLGT_EVENT_SEQ" != 2`
	follower := func(args ...string) (stdout, stderr *syncBuf, stop func() int) {
		e, _, _ := testEnv(t, map[string]string{"DLGT_SOCKET": d.socket}, "")
		stdout, stderr = &syncBuf{}, &syncBuf{}
		e.Stdout, e.Stderr = stdout, stderr
		e.Signals = make(chan os.Signal, 1)
		done := make(chan int, 1)
		go func() {
			done <- run(append([]string{"events", "--follow", "--state", state, "--exec", cmdline}, args...), e)
		}()
		return stdout, stderr, func() int {
			e.Signals <- os.Interrupt
			select {
			case code := <-done:
				return code
			case <-time.After(30 * time.Second):
				t.Fatal("the follower did not stop")
				return 0
			}
		}
	}
	seqs := func(s string) []uint64 {
		var out []uint64
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			var e rpc.Event
			if l != "" && json.Unmarshal([]byte(l), &e) == nil {
				out = append(out, e.Seq)
			}
		}
		return out
	}
	stdout, stderr, stop := follower("--after", "0")
	waitFor(t, "events 1-3", func() bool { return len(seqs(stdout.String())) == 3 })
	d.stop()
	d.add(ev(4, "session.stopping", 2, "interrupted"), ev(5, "session.stopped", 2, "interrupted"))
	d.start(t)
	d.add(ev(6, "session.restarting", 0, ""))
	waitFor(t, "events 4-6 after the restart", func() bool { return len(seqs(stdout.String())) >= 6 })
	waitFor(t, "the state file at 6", func() bool { b, _ := os.ReadFile(state); return strings.TrimSpace(string(b)) == "6" })
	stop()
	if got := fmt.Sprint(seqs(stdout.String())); got != "[1 2 3 4 5 6]" {
		t.Fatalf("printed seqs %s:\n%s", got, stdout)
	}
	if !strings.Contains(stderr.String(), "went away") || !strings.Contains(stderr.String(), "--exec for event 2 (session.busy) failed") {
		t.Fatalf("stderr %q", stderr)
	}
	for seq := 1; seq <= 6; seq++ {
		in, err := os.ReadFile(filepath.Join(out, fmt.Sprint("in.", seq)))
		var e rpc.Event
		if err != nil || json.Unmarshal(in, &e) != nil || e.Seq != uint64(seq) {
			t.Fatalf("--exec stdin of event %d: %q %v", seq, in, err)
		}
	}
	env, _ := os.ReadFile(filepath.Join(out, "env.4"))
	if strings.TrimSpace(string(env)) != "session.stopping|4|claude:1111|2|interrupted" {
		t.Fatalf("--exec environment of event 4: %q", env)
	}
	// A new follower resumes after the stored seq.
	d.add(ev(7, "session.ready", 0, ""))
	stdout, _, stop = follower()
	waitFor(t, "event 7", func() bool { return len(seqs(stdout.String())) >= 1 })
	stop()
	if got := fmt.Sprint(seqs(stdout.String())); got != "[7]" {
		t.Fatalf("resumed follower printed %s", got)
	}
	d.stop()
}

// A follower started at the latest event with --state stores that seq as
// soon as it has subscribed, so an event that happens while it is down
// is delivered by the next follower on the same file, even when none came
// before.
func TestEventsFollowStateBeforeAnyEvent(t *testing.T) {
	dir, err := os.MkdirTemp("", "dlgt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &restartingDaemon{socket: filepath.Join(dir, "s"), grew: make(chan struct{})}
	d.add(ev(1, "session.created", 0, ""), ev(2, "session.busy", 1, ""))
	d.start(t)
	defer d.stop()
	state := filepath.Join(t.TempDir(), "state")
	follower := func() (*syncBuf, func()) {
		e, _, _ := testEnv(t, map[string]string{"DLGT_SOCKET": d.socket}, "")
		stdout := &syncBuf{}
		e.Stdout, e.Stderr = stdout, &syncBuf{}
		e.Signals = make(chan os.Signal, 1)
		done := make(chan int, 1)
		go func() { done <- run([]string{"events", "--follow", "--state", state}, e) }()
		return stdout, func() {
			e.Signals <- os.Interrupt
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the follower did not stop")
			}
		}
	}
	_, stop := follower()
	waitFor(t, "the state file at 2", func() bool { b, _ := os.ReadFile(state); return strings.TrimSpace(string(b)) == "2" })
	stop()
	d.add(ev(3, "session.idle", 1, "completed"))
	stdout, stop := follower()
	waitFor(t, "event 3", func() bool { return strings.Contains(stdout.String(), `"seq":3`) })
	stop()
	if n := strings.Count(stdout.String(), "\n"); n != 1 {
		t.Fatalf("printed %q, want event 3 once", stdout)
	}
}
