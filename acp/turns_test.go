package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A failed turn is a JSON-RPC error whose message is the result's error.
func TestFailedTurn(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	_, err := e.prompt(ctx, id, "[[fail]]")
	rd, rerr := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if rerr != nil || rd.Result == nil || rd.Result.Status != rpc.StatusFailed || rd.Result.Error == nil {
		t.Fatalf("the dlgt result: %+v, %v", rd.Result, rerr)
	}
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != -32603 || re.Message != rd.Result.Error.Message {
		t.Errorf("prompt answered %v, want -32603 with %q", err, rd.Result.Error.Message)
	}
	// The session goes on.
	if r, err := e.prompt(ctx, id, "[[reply after]]"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("the next prompt: %+v, %v", r, err)
	}
}

func asRequestError(err error, re **sdk.RequestError) bool {
	if err == nil {
		return false
	}
	r, ok := err.(*sdk.RequestError)
	*re = r
	return ok
}

// askingClaude is the fake Claude Code in a permission mode that asks.
func askingClaude() acp.Options {
	spec := claude("permission-mode=default")
	spec.NoAutoApprove = true
	return acp.Options{Launch: spec, Version: "test"}
}

// Someone else answers first: the editor's request is withdrawn, and its
// late answer changes nothing.
func TestLateAnswerChangesNothing(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connectWith(askingClaude())
	withdrawn := make(chan struct{})
	release := make(chan struct{})
	e.stub.answer = func(ctx context.Context, p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		<-ctx.Done()
		close(withdrawn)
		<-release
		return sdk.NewRequestPermissionOutcomeSelected("allow")
	}
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	ch := e.promptAsync(ctx, id, "[[tool echo ran > late.txt]]")
	e.waitAsked(1)
	// A person answers from the terminal side.
	if _, err := w.c.SessionRespond(ctx, rpc.SessionRespondParams{Session: string(id), Decision: rpc.DecisionDeny, Message: "no from the terminal", RequestID: "cli-deny"}); err != nil {
		t.Fatalf("session.respond: %v", err)
	}
	select {
	case <-withdrawn:
	case <-ctx.Done():
		t.Fatal("the editor's request was not withdrawn")
	}
	close(release)
	a := <-ch
	if a.err != nil || a.r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", a.r, a.err)
	}
	if _, err := os.Stat(filepath.Join(w.cwd, "late.txt")); err == nil {
		t.Error("the command ran: the late allow was taken")
	}
	if got := e.agentText(id); !strings.HasPrefix(got, "MOCK-DENIED: no from the terminal") {
		t.Errorf("answer %q, want the terminal's denial", got)
	}
}

// session/cancel while a permission request is open: the request is
// withdrawn and the prompt answers cancelled.
func TestCancelWithOpenPermission(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connectWith(askingClaude())
	withdrawn := make(chan struct{})
	e.stub.answer = func(ctx context.Context, p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		<-ctx.Done()
		close(withdrawn)
		return sdk.NewRequestPermissionOutcomeCancelled()
	}
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	ch := e.promptAsync(ctx, id, "[[tool echo ran > cancelled.txt]]")
	e.waitAsked(1)
	if err := e.conn.Cancel(ctx, sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-withdrawn:
	case <-ctx.Done():
		t.Fatal("the permission request was not withdrawn")
	}
	a := <-ch
	if a.err != nil || a.r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("prompt: %+v, %v; want cancelled", a.r, a.err)
	}
	if _, err := os.Stat(filepath.Join(w.cwd, "cancelled.txt")); err == nil {
		t.Error("the command ran after the cancel")
	}
}

// session/list pages with its cursor.
func TestListPaging(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connectWith(acp.Options{Launch: claude(), Version: "test", ListPage: 2})
	e.initialize(ctx)
	made := map[sdk.SessionId]bool{}
	for i := 0; i < 3; i++ {
		id := e.newSession(ctx, w.cwd)
		if _, err := e.prompt(ctx, id, "[[reply x]]"); err != nil {
			t.Fatal(err)
		}
		made[id] = true
	}
	seen := map[sdk.SessionId]bool{}
	var cursor *string
	for page := 0; ; page++ {
		l, err := e.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: &w.cwd, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{2, 1}[min(page, 1)]; len(l.Sessions) != want {
			t.Fatalf("page %d has %d sessions, want %d", page, len(l.Sessions), want)
		}
		for _, s := range l.Sessions {
			seen[s.SessionId] = true
		}
		if l.NextCursor == nil {
			break
		}
		cursor = l.NextCursor
	}
	if len(seen) != 3 {
		t.Errorf("listed %v, want the 3 made %v", seen, made)
	}
	for id := range made {
		if !seen[id] {
			t.Errorf("%s not listed", id)
		}
	}
}

// session/new starts a spare of its launch at once; the first prompt
// claims it, and the replacement the daemon starts is stopped: no harness
// is left waiting for a thread nobody opened.
func TestSpareClaimedAndNotReplaced(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	spares := func() (ready, starting int) {
		st, _, err := w.c.DaemonStatus(ctx)
		if err != nil || st == nil {
			t.Fatalf("daemon status: %v", err)
		}
		return st.SparesReady, st.SparesStarting
	}
	id := e.newSession(ctx, w.cwd)
	e.waitFor("the spare to be ready", func() bool { r, _ := spares(); return r == 1 })
	if _, err := e.prompt(ctx, id, "[[reply warm]]"); err != nil {
		t.Fatal(err)
	}
	// The daemon starts the replacement about a second after the claim
	// (1.5 s here, unloaded); past a window well beyond that, there is
	// none, starting or ready. (Under load it could come later, which
	// would let this pass, never fail, without the fix.)
	time.Sleep(4 * time.Second)
	if r, s := spares(); r != 0 || s != 0 {
		t.Errorf("spares after the first prompt: %d ready, %d starting; want none", r, s)
	}
}
