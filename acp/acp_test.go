package acp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestInitialize(t *testing.T) {
	w := newWorld(t)
	e := w.connect(claude())
	r := e.initialize(ctxT(t))
	if r.ProtocolVersion != 1 {
		t.Errorf("protocolVersion %d, want 1", r.ProtocolVersion)
	}
	if r.AgentInfo == nil || r.AgentInfo.Name != "dlgt" || r.AgentInfo.Version != "test" {
		t.Errorf("agentInfo %+v", r.AgentInfo)
	}
	c := r.AgentCapabilities
	if !c.LoadSession || c.SessionCapabilities.List == nil || c.SessionCapabilities.Close == nil || c.SessionCapabilities.Resume == nil {
		t.Errorf("session capabilities %+v (loadSession %v)", c.SessionCapabilities, c.LoadSession)
	}
	if !c.PromptCapabilities.EmbeddedContext || c.PromptCapabilities.Image || c.PromptCapabilities.Audio {
		t.Errorf("prompt capabilities %+v, want embedded context only", c.PromptCapabilities)
	}
	if len(r.AuthMethods) != 0 {
		t.Errorf("authMethods %+v, want none", r.AuthMethods)
	}
}

// A new session is a dlgt Session from its first prompt, named by the
// sessionId; the answer's chunks are the result's final_text byte for
// byte, and the turn ends end_turn.
func TestNewPromptAnswer(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	prompt := "first line\n  ünïcödé\ttabs `code` [[echo]]\n"
	r, err := e.prompt(ctx, id, prompt)
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q, want end_turn", r.StopReason)
	}
	rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil {
		t.Fatalf("session.read of the editor's session: %v", err)
	}
	if rd.Session.Alias != string(id) || rd.Session.Cwd != w.cwd || rd.Session.Harness != "claude" {
		t.Errorf("the dlgt Session: %+v", rd.Session)
	}
	if rd.Result == nil || rd.Result.FinalText == nil {
		t.Fatalf("no result: %+v", rd.Result)
	}
	if got := e.agentText(id); got != *rd.Result.FinalText || got != prompt {
		t.Errorf("agent text %q, final_text %q, want the prompt echoed %q", got, *rd.Result.FinalText, prompt)
	}
}

// Embedded resources reach the prompt as their path and text, resource
// links as their path.
func TestPromptContentBlocks(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	_, err := e.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{
		sdk.TextBlock("Look at"),
		sdk.ResourceLinkBlock("main.go", "file:///src/app/main.go"),
		sdk.TextBlock("and this: [[echo]]"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///src/app/a.txt", Text: "alpha\nbeta"}}),
	}})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	want := "Look at /src/app/main.go and this: [[echo]]\n/src/app/a.txt:\n```\nalpha\nbeta\n```\n"
	if got := e.agentText(id); got != want {
		t.Errorf("prompt as the harness got it:\n%q\nwant\n%q", got, want)
	}
	// An image is refused: the capabilities do not offer it.
	_, err = e.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.ImageBlock("AAAA", "image/png")}})
	if code(err) != -32602 {
		t.Errorf("an image prompt: %v, want -32602", err)
	}
}

// code is a JSON-RPC error's code (0 for none).
func code(err error) int {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// A pending permission becomes a tool_call and a request_permission;
// allow runs the tool, reject does not, and the tool call's status says
// which.
func TestPermissionAllowAndReject(t *testing.T) {
	for _, tc := range []struct {
		option     string
		ran        bool
		replyStart string
		status     sdk.ToolCallStatus
	}{
		{"allow", true, "MOCK-REPLY: ", sdk.ToolCallStatusCompleted},
		{"deny", false, "MOCK-DENIED: ", sdk.ToolCallStatusFailed},
	} {
		t.Run(tc.option, func(t *testing.T) {
			w := newWorld(t)
			ctx := ctxT(t)
			spec := claude("permission-mode=default")
			spec.NoAutoApprove = true
			e := w.connect(spec)
			e.stub.answer = func(_ context.Context, p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
				for _, o := range p.Options {
					if string(o.OptionId) == tc.option {
						return sdk.NewRequestPermissionOutcomeSelected(o.OptionId)
					}
				}
				return sdk.NewRequestPermissionOutcomeCancelled()
			}
			e.initialize(ctx)
			id := e.newSession(ctx, w.cwd)
			r, err := e.prompt(ctx, id, "[[tool echo ran > probe.txt]]")
			if err != nil {
				t.Fatalf("prompt: %v", err)
			}
			if r.StopReason != sdk.StopReasonEndTurn {
				t.Errorf("stopReason %q", r.StopReason)
			}
			_, statErr := os.Stat(filepath.Join(w.cwd, "probe.txt"))
			if ran := statErr == nil; ran != tc.ran {
				t.Errorf("the command ran: %v, want %v", ran, tc.ran)
			}
			if got := e.agentText(id); !strings.HasPrefix(got, tc.replyStart) {
				t.Errorf("answer %q, want it to start %q", got, tc.replyStart)
			}
			// The call's start (PreToolUse) and the request about it are
			// one tool call.
			ids := map[string]bool{}
			for _, u := range e.toolUpdates(id) {
				ids[u.id] = true
			}
			if len(ids) != 1 {
				t.Errorf("tool call ids %v, want one", ids)
			}
			e.stub.mu.Lock()
			defer e.stub.mu.Unlock()
			if len(e.stub.asked) != 1 {
				t.Fatalf("%d permission requests, want 1", len(e.stub.asked))
			}
			ask := e.stub.asked[0]
			kinds := map[sdk.PermissionOptionKind]bool{}
			for _, o := range ask.Options {
				kinds[o.Kind] = true
			}
			if !kinds[sdk.PermissionOptionKindAllowOnce] || !kinds[sdk.PermissionOptionKindRejectOnce] || kinds[sdk.PermissionOptionKindAllowAlways] || len(ask.Options) != 2 {
				t.Errorf("options %+v, want allow_once and reject_once", ask.Options)
			}
			if ask.ToolCall.Title == nil || *ask.ToolCall.Title != "echo ran > probe.txt" || ask.ToolCall.Kind == nil || *ask.ToolCall.Kind != sdk.ToolKindExecute {
				t.Errorf("the tool call asked about: %+v", ask.ToolCall)
			}
			var started bool
			var last sdk.ToolCallStatus
			for _, n := range e.stub.updates {
				switch u := n.Update; {
				case u.ToolCall != nil && u.ToolCall.ToolCallId == ask.ToolCall.ToolCallId:
					started = u.ToolCall.Status == sdk.ToolCallStatusPending
				case u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == ask.ToolCall.ToolCallId && u.ToolCallUpdate.Status != nil:
					last = *u.ToolCallUpdate.Status
				}
			}
			if !started || last != tc.status {
				t.Errorf("tool_call pending reported: %v; last status %q, want %q", started, last, tc.status)
			}
		})
	}
}

// session/cancel ends the running turn: the prompt answers cancelled.
func TestCancel(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	ch := e.promptAsync(ctx, id, "[[slow 30000]] take your time")
	e.waitFor("the turn to run", func() bool {
		rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
		return err == nil && rd.Session.State == rpc.StateBusy
	})
	// A second prompt while one runs is refused.
	if _, err := e.prompt(ctx, id, "another"); code(err) != -32600 {
		t.Errorf("a second prompt: %v, want -32600", err)
	}
	if err := e.conn.Cancel(ctx, sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil || a.r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("prompt answered %+v, %v; want cancelled", a.r, a.err)
	}
	rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil || rd.Result == nil || rd.Result.Status != rpc.StatusCanceled {
		t.Errorf("the dlgt result: %+v, %v; want canceled", rd.Result, err)
	}
}

// The editor quits; the Session stays, and a second connection loads it
// with its history and goes on.
func TestQuitThenLoad(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e, id := w.opened(ctx, "[[reply first answer]]")
	e.quit()

	e2 := w.loaded(ctx, id)
	if got := e2.agentText(id); got != "first answer" {
		t.Errorf("replayed %q, want the first answer", got)
	}
	// The prompt, from the daemon's record of the execution.
	if got := e2.userText(id); got != "[[reply first answer]]" {
		t.Errorf("replayed prompt %q, want the first prompt", got)
	}
	r, err := e2.prompt(ctx, id, "[[reply second answer]]")
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt after load: %+v, %v", r, err)
	}
	if got := e2.agentText(id); got != "first answersecond answer" {
		t.Errorf("agent text %q after the second turn", got)
	}
	// Loading a Session that does not exist is a clear error.
	_, err = e2.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "acp-nosuch", Cwd: w.cwd, McpServers: []sdk.McpServer{}})
	if code(err) != -32002 || !strings.Contains(err.Error(), "acp-nosuch") {
		t.Errorf("load of an unknown session: %v", err)
	}
}

// A turn sent from the CLI while the editor holds the session reaches the
// editor.
func TestTurnFromAnotherClient(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e, id := w.opened(ctx, "[[reply from the editor]]")
	// The terminal's prompt, byte for byte (its trailing newline too),
	// from the daemon's record, before its answer.
	const terminal = "[[reply from the terminal]]\n"
	if _, err := w.c.SessionSend(ctx, rpc.SessionSendParams{Session: string(id), Prompt: terminal, RequestID: "cli-1"}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the terminal's turn", func() bool { return e.agentText(id) == "from the editorfrom the terminal" })
	want := []string{"agent: from the editor", "user: " + terminal, "agent: from the terminal"}
	if got := e.conversation(id); !slices.Equal(got, want) {
		t.Errorf("the editor saw %q, want %q", got, want)
	}
	e2 := w.connect(claude())
	e2.initialize(ctx)
	if _, err := e2.conn.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: id, Cwd: w.cwd}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.prompt(ctx, id, "[[reply from another editor]]"); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the other editor's turn", func() bool {
		return e.userText(id) == terminal+"[[reply from another editor]]" && e.agentText(id) == "from the editorfrom the terminalfrom another editor"
	})
	if got := e2.userText(id); got != "" {
		t.Errorf("the sending editor got its own prompt back: %q", got)
	}
	// A third editor loads the session: every turn replays with its
	// prompt, the terminal's included.
	e3 := w.loaded(ctx, id)
	want = []string{
		"user: [[reply from the editor]]", "agent: from the editor",
		"user: " + terminal, "agent: from the terminal",
		"user: [[reply from another editor]]", "agent: from another editor",
	}
	if got := e3.conversation(id); !slices.Equal(got, want) {
		t.Errorf("load replayed %q, want %q", got, want)
	}
}

// A long prompt sent from the CLI (40 KiB, over what a default fetch page
// carries whole) reaches the editor whole, and a load replays it whole.
func TestLongPromptFromAnotherClient(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e, id := w.opened(ctx, "[[reply first]]")
	long := "[[reply second]] " + strings.Repeat("a line of the long prompt\n", 40<<10/26)
	if _, err := w.c.SessionSend(ctx, rpc.SessionSendParams{Session: string(id), Prompt: long, RequestID: "cli-long"}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the terminal's turn", func() bool { return e.agentText(id) == "firstsecond" })
	if got := e.userText(id); got != long {
		t.Errorf("the editor got a prompt of %d bytes, want the %d sent", len(got), len(long))
	}
	e2 := w.loaded(ctx, id)
	want := []string{"user: [[reply first]]", "agent: first", "user: " + long, "agent: second"}
	if got := e2.conversation(id); !slices.Equal(got, want) {
		t.Errorf("load replayed %d messages, want %d; user text %d bytes, want %d", len(got), len(want), len(e2.userText(id)), len("[[reply first]]")+len(long))
	}
}

// session/list lists dlgt Sessions by cwd; session/close stops one.
func TestListAndClose(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	if _, err := e.prompt(ctx, id, "[[reply hi]]"); err != nil {
		t.Fatal(err)
	}
	l, err := e.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: &w.cwd})
	if err != nil || len(l.Sessions) != 1 || l.Sessions[0].SessionId != id || l.Sessions[0].Title == nil || *l.Sessions[0].Title != "[[reply hi]]" {
		t.Fatalf("session/list: %+v, %v", l, err)
	}
	other := "/elsewhere"
	if l, err := e.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: &other}); err != nil || len(l.Sessions) != 0 {
		t.Errorf("session/list of another cwd: %+v, %v", l, err)
	}
	bad := "x"
	if _, err := e.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cursor: &bad}); code(err) != -32602 {
		t.Errorf("a bad cursor: %v", err)
	}
	before, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: before.Session.ID})
	if err != nil || rd.Session.State != rpc.StateStopped {
		t.Errorf("after close: %+v, %v; want stopped", rd.Session, err)
	}
	if _, err := e.prompt(ctx, id, "more"); code(err) != -32002 {
		t.Errorf("a prompt to a closed session: %v", err)
	}
	// Loading the stopped Session resumes it at its next prompt.
	if _, err := e.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: w.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("load of a stopped Session: %v", err)
	}
	if r, err := e.prompt(ctx, id, "[[reply back]]"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt resuming a stopped Session: %+v, %v", r, err)
	}
}
