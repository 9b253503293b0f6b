package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// attachClient is one attach stream with the output it has seen.
type attachClient struct {
	t    *testing.T
	c    *rpc.Client
	ack  rpc.TerminalAttachAck
	mu   sync.Mutex
	out  bytes.Buffer
	end  string
	done chan struct{}
}

func (td *testDaemon) attach(t *testing.T, session, mode string) (*attachClient, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := rpc.Dial(ctx, td.paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	raw, next, err := c.Subscribe(ctx, rpc.MethodTerminalAttach, rpc.TerminalAttachParams{Session: session, Mode: mode})
	if err != nil {
		c.Close()
		return nil, err
	}
	a := &attachClient{t: t, c: c, done: make(chan struct{})}
	if err := json.Unmarshal(raw, &a.ack); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(a.done)
		for {
			line, err := next()
			if err != nil {
				return
			}
			var o rpc.TerminalOutput
			if err := json.Unmarshal(line, &o); err != nil {
				t.Errorf("stream line %q: %v", line, err)
				return
			}
			data, _ := base64.StdEncoding.DecodeString(o.DataBase64)
			a.mu.Lock()
			a.out.Write(data)
			if o.End != "" {
				a.end = o.End
			}
			a.mu.Unlock()
			if o.End != "" {
				return
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return a, nil
}

// waitOutput waits until the stream's output contains want.
func (a *attachClient) waitOutput(want string) {
	a.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		got := a.out.String()
		a.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.Fatalf("attach output never showed %q; got %q", want, a.out.String())
}

func (a *attachClient) waitEnd() string {
	a.t.Helper()
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		a.t.Fatal("attach stream did not end")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.end
}

func (td *testDaemon) input(session, token, data string) error {
	return td.call(rpc.MethodTerminalInput, rpc.TerminalInputParams{Session: session, Token: token, DataBase64: base64.StdEncoding.EncodeToString([]byte(data))}, nil)
}

func (td *testDaemon) state(t *testing.T, id string) string {
	t.Helper()
	var read rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
	return read.Session.State
}

func TestAttachLeaseInputObserveDetach(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "att-1", "hello attach")
	td.waitResult(t, r.Session.ID, r.Cursor)
	id := r.Session.ID

	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	if w.ack.Token == "" || w.ack.Mode != rpc.AttachWrite || w.ack.SessionID != id || w.ack.State != rpc.StateIdle {
		t.Fatalf("ack = %+v", w.ack)
	}
	paint, _ := base64.StdEncoding.DecodeString(w.ack.RepaintBase64)
	if !bytes.HasPrefix(paint, []byte("\x1b[0m\x1b[H\x1b[2J")) || !bytes.Contains(paint, []byte("MOCK-REPLY: hello attach")) {
		t.Fatalf("repaint = %q", paint)
	}

	// While the lease is held a semantic send is refused, and so is a
	// second writer; an observer may watch.
	err = td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "x", RequestID: "att-2"}, nil)
	if !errors.Is(err, rpc.ErrSessionAttached) {
		t.Fatalf("send while attached: %v", err)
	}
	if _, err := td.attach(t, id, rpc.AttachWrite); !errors.Is(err, rpc.ErrAlreadyAttached) {
		t.Fatalf("second writer: %v", err)
	}
	obs, err := td.attach(t, id, rpc.AttachRead)
	if err != nil {
		t.Fatalf("observer: %v", err)
	}
	if obs.ack.Token != "" || obs.ack.Mode != rpc.AttachRead {
		t.Fatalf("observer ack = %+v", obs.ack)
	}

	// Input needs the token.
	if err := td.input(id, "bogus", "x"); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("input with a bad token: %v", err)
	}
	if err := td.call(rpc.MethodTerminalInput, rpc.TerminalInputParams{Session: id, Token: w.ack.Token, DataBase64: base64.StdEncoding.EncodeToString(make([]byte, maxAttachInput+1))}, nil); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("oversized input: %v", err)
	}
	// A human types a prompt (bracketed paste, then Enter): both viewers
	// see the harness echo it and answer.
	if err := td.input(id, w.ack.Token, "\x1b[200~typed by a human\x1b[201~"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := td.input(id, w.ack.Token, "\r"); err != nil {
		t.Fatal(err)
	}
	w.waitOutput("MOCK-REPLY: typed by a human")
	obs.waitOutput("MOCK-REPLY: typed by a human")
	// The human's turn is an execution of its own: the Session is busy
	// while the harness works on it, and its result is retained.
	var read rpc.SessionReadResult
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Result != nil && read.Result.ExecutionSeq == 2 && read.Session.State == rpc.StateIdle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result for the typed turn: %+v", read)
		}
	}
	if read.Result.FinalText == nil || *read.Result.FinalText != "MOCK-REPLY: typed by a human" {
		t.Fatalf("typed turn result = %+v", read.Result)
	}
	// Its prompt is the one the harness's UserPromptSubmit hook reported.
	if read.Result.Prompt == nil || *read.Result.Prompt != "typed by a human" {
		t.Fatalf("typed turn prompt = %q", strp(read.Result.Prompt))
	}
	var evs []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: id}, &evs)
	busy := 0
	for _, e := range evs {
		if e.Type == rpc.EventSessionBusy && e.ExecutionSeq == 2 {
			busy++
		}
	}
	if busy != 1 {
		t.Fatalf("session.busy events for the typed turn: %d", busy)
	}

	// Resize needs the token too and is applied to the PTY.
	if err := td.call(rpc.MethodTerminalResize, rpc.TerminalResizeParams{Session: id, Token: "bogus", Rows: 30, Cols: 100}, nil); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("resize with a bad token: %v", err)
	}
	td.mustCall(rpc.MethodTerminalResize, rpc.TerminalResizeParams{Session: id, Token: w.ack.Token, Rows: 30, Cols: 100}, nil)

	// Detach ends the writer's stream, keeps the process, and restores
	// semantic sends; the observer keeps watching.
	td.mustCall(rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
	if end := w.waitEnd(); end != "detached" {
		t.Fatalf("writer stream end = %q", end)
	}
	if err := td.input(id, w.ack.Token, "x"); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("input after detach: %v", err)
	}
	if st := td.state(t, id); st != rpc.StateIdle {
		t.Fatalf("state after detach = %s", st)
	}
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "after detach", RequestID: "att-3"}, &r2)
	_, res := td.waitResult(t, id, r2.Cursor)
	if *res.FinalText != "MOCK-REPLY: after detach" {
		t.Fatalf("result after detach = %q", *res.FinalText)
	}
	obs.waitOutput("MOCK-REPLY: after detach")
}

func TestAttachReleasedWhenConnectionCloses(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "attc-1", "hi")
	td.waitResult(t, r.Session.ID, r.Cursor)
	id := r.Session.ID
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "x", RequestID: "attc-2"}, nil); !errors.Is(err, rpc.ErrSessionAttached) {
		t.Fatalf("send while attached: %v", err)
	}
	w.c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rc rpc.Receipt
		err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "after close", RequestID: "attc-3"}, &rc)
		if err == nil {
			_, res := td.waitResult(t, id, rc.Cursor)
			if *res.FinalText != "MOCK-REPLY: after close" {
				t.Fatalf("result = %q", *res.FinalText)
			}
			break
		}
		if !errors.Is(err, rpc.ErrSessionAttached) || time.Now().After(deadline) {
			t.Fatalf("send after the attach connection closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The lease is free for a new writer, and the token is dead.
	if err := td.input(id, w.ack.Token, "x"); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("old token: %v", err)
	}
	w2, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatalf("reattach: %v", err)
	}
	if w2.ack.Token == w.ack.Token {
		t.Fatal("token reused")
	}
}

func TestAttachPermissionPromptAnsweredByHuman(t *testing.T) {
	td := startTestDaemon(t)
	var r rpc.Receipt
	no := false
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "ask", Harness: "claude", Cwd: t.TempDir(), Prompt: "[[tool echo hi]] run it",
		RequestID: "attp-1", Environment: td.env, AutoApprove: &no,
		HarnessOptions: []string{"permission-mode=default"},
	}, &r)
	id := r.Session.ID
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": r.Cursor, "until": "result", "wait_ms": 15000}, &doc)
	if doc.Reason != rpc.ReasonBlocked {
		t.Fatalf("reason = %s", doc.Reason)
	}
	w, err := td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	if w.ack.State != rpc.StateBlocked {
		t.Fatalf("attach state = %s", w.ack.State)
	}
	// A person answers the dialog they see: the PermissionRequest hook can
	// arrive before the harness has drawn it, and a key pressed earlier
	// would not reach the dialog.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var base rpc.FetchDocument
		td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id}, &base)
		if strings.Contains(strings.Join(base.Sessions[0].Screen.Live, "\n"), "Do you want to proceed?") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dialog never drawn: %q", base.Sessions[0].Screen.Live)
		}
	}
	// Enter accepts the highlighted "Yes".
	if err := td.input(id, w.ack.Token, "\r"); err != nil {
		t.Fatal(err)
	}
	// The harness's PostToolUse moves the Session back to busy, then the
	// turn completes with a retained result.
	var read rpc.SessionReadResult
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &read)
		if read.Session.State == rpc.StateIdle && read.Result != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result after answering the prompt: %+v", read)
		}
	}
	if read.Result.Status != rpc.StatusCompleted || read.Result.ExecutionSeq != 1 {
		t.Fatalf("result after answering = %+v", read.Result)
	}
	w.waitOutput("MOCK-REPLY: [[tool echo hi]] run it")
	var evs []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: id}, &evs)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if !strings.Contains(strings.Join(types, ","), "session.blocked,session.resumed") {
		t.Fatalf("events = %v", types)
	}
	td.mustCall(rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
	if st := td.state(t, id); st != rpc.StateIdle {
		t.Fatalf("state after detach = %s", st)
	}
}

func TestAttachNeedsLiveSession(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "attn-1", "hi")
	td.waitResult(t, r.Session.ID, r.Cursor)
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, nil)
	_, err := td.attach(t, r.Session.ID, rpc.AttachRead)
	if !errors.Is(err, rpc.ErrSessionUnavailable) {
		t.Fatalf("attach to stopped: %v", err)
	}
	// The refusal names the command that makes the Session attachable,
	// and that command does.
	restart := "dlgt session restart " + r.Session.ID
	if re := rpc.AsError(err); !strings.HasSuffix(re.Message, restart) {
		t.Fatalf("attach to stopped says %q, want it to end in %q", re.Message, restart)
	}
	td.mustCall(rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: r.Session.ID, Environment: td.env}, nil)
	if _, err := td.attach(t, r.Session.ID, rpc.AttachRead); err != nil {
		t.Fatalf("attach after %s: %v", restart, err)
	}
	if _, err := td.attach(t, "claude:nope", rpc.AttachWrite); !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("attach to unknown: %v", err)
	}
	if _, err := td.attach(t, r.Session.ID, "admin"); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("bad mode: %v", err)
	}
}
