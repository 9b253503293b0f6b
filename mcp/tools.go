package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// ---- inputs ----------------------------------------------------------------

type delegateIn struct {
	Harness   string `json:"harness,omitempty" jsonschema:"the agent to delegate to: a harness the tool description names (required unless the profile names one)"`
	Prompt    string `json:"prompt" jsonschema:"the task, complete and self-contained: the other agent sees nothing else"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key chosen before the first attempt and reused on every retry of this task (give this or key)"`
	Key       string `json:"key,omitempty" jsonschema:"a stable name for this task; the request_id is derived from it (give this or request_id)"`
	Cwd       string `json:"cwd,omitempty" jsonschema:"working directory of the Session (default: this server's directory)"`
	Title     string `json:"title,omitempty" jsonschema:"short human-readable title (default: the prompt's first line)"`
	Alias     string `json:"alias,omitempty" jsonschema:"unique alias to address the Session by"`
	Model     string `json:"model,omitempty" jsonschema:"model id or alias"`
	Effort    string `json:"effort,omitempty" jsonschema:"reasoning effort"`
	Profile   string `json:"profile,omitempty" jsonschema:"launch profile from the user's dlgt profiles file"`
	Worktree  bool   `json:"worktree,omitempty" jsonschema:"run the agent in a new git worktree of cwd's repository on a new branch, so its edits never touch your checkout; read them with the diff tool, then merge or discard the branch"`
	Branch    string `json:"branch,omitempty" jsonschema:"the worktree's new branch (default dlgt/<alias>); implies worktree"`
}

type sendIn struct {
	Session   string `json:"session" jsonschema:"Session id (HARNESS:provider-id, as delegate returned it) or alias"`
	Prompt    string `json:"prompt" jsonschema:"the follow-up prompt"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key, as for delegate (give this or key)"`
	Key       string `json:"key,omitempty" jsonschema:"a stable name for this follow-up; the request_id is derived from it"`
	Resume    bool   `json:"resume,omitempty" jsonschema:"relaunch a stopped or failed Session in its conversation, then send"`
	Steer     bool   `json:"steer,omitempty" jsonschema:"the Session is busy and going wrong: type this correction into its running execution, which takes it at its next model request without stopping (only harnesses whose capabilities.steering is true: Claude Code, Codex); wait for that same execution's result"`
	Queue     bool   `json:"queue,omitempty" jsonschema:"the Session is busy and this is the next task: run it as the next execution once the running one ends (at most 4 queued; cancel clears them); wait with the returned cursor for its own result"`
}

type waitIn struct {
	Session        string `json:"session" jsonschema:"Session id or alias"`
	Cursor         string `json:"cursor,omitempty" jsonschema:"the cursor from delegate, send or the previous wait; without it, waits for the current execution"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long this call may block (default and maximum: the server's wait bound)"`
}

type sessionIn struct {
	Session string `json:"session" jsonschema:"Session id or alias"`
}

type listIn struct {
	All bool `json:"all,omitempty" jsonschema:"include stopped and failed Sessions"`
}

type cancelIn struct {
	Session        string `json:"session" jsonschema:"Session id or alias"`
	TimeoutSeconds *int   `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the cancellation to be confirmed"`
}

type respondIn struct {
	Session   string `json:"session" jsonschema:"Session id or alias"`
	PendingID string `json:"pending_id,omitempty" jsonschema:"the pending request's id, as wait or read showed it (default: the one pending now)"`
	Decision  string `json:"decision,omitempty" jsonschema:"allow or deny, for a permission request"`
	Message   string `json:"message,omitempty" jsonschema:"with deny: the reason the agent's model receives"`
	Option    string `json:"option,omitempty" jsonschema:"for a question: the chosen option id"`
	Text      string `json:"text,omitempty" jsonschema:"for a question: a free-text answer"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key (default: derived from the request and the answer)"`
}

type stopIn struct {
	Session        string `json:"session" jsonschema:"Session id or alias"`
	Force          bool   `json:"force,omitempty" jsonschema:"stop even while an execution is running (it ends as interrupted); with remove_worktree, remove uncommitted or unmerged work too"`
	RemoveWorktree bool   `json:"remove_worktree,omitempty" jsonschema:"also remove the Session's worktree and branch (refused while it holds uncommitted or unmerged work, unless force)"`
}

type diffIn struct {
	Session  string `json:"session" jsonschema:"Session id or alias of a Session made with worktree"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"cut the diff after this many bytes (default 64 KiB, at most 4 MiB)"`
}

// mcpDiffBytes is the diff tool's default bound: a diff a model reads.
const mcpDiffBytes = 64 << 10

// ---- handlers --------------------------------------------------------------

// delegate creates a Session where client.ResolveLaunch puts it: the
// profile, working directory and launch environment resolved as the CLI
// resolves them, on the profile's host when it names one.
func (t *tools) delegate(ctx context.Context, _ *sdk.CallToolRequest, in delegateIn) (*sdk.CallToolResult, any, error) {
	if in.Prompt == "" {
		return toolError("delegate", rpc.InvalidField("prompt", "is required")), nil, nil
	}
	reqID, err := requestID(in.RequestID, in.Key, "delegate")
	if err != nil {
		return toolError("delegate", err), nil, nil
	}
	title := in.Title
	if title == "" {
		title = client.TitleFrom(in.Prompt)
	}
	var wt *rpc.WorktreeOption
	if in.Worktree || in.Branch != "" {
		wt = &rpc.WorktreeOption{Branch: in.Branch}
	}
	l, err := t.c.ResolveLaunch(client.LaunchSpec{
		Profile: in.Profile, Harness: in.Harness, Model: in.Model, Effort: in.Effort, Cwd: in.Cwd,
		Title: title, Alias: in.Alias, Prompt: in.Prompt, RequestID: reqID, Worktree: wt,
	})
	if err != nil {
		if re := rpc.AsError(err); re.Code == rpc.CodeInvalidArgument && re.Field == "harness" {
			// The registry's harnesses, named for the model.
			err = rpc.InvalidField("harness", "is required: %s", t.harnessList)
		}
		return toolError("delegate", err), nil, nil
	}
	r, err := t.c.Launch(ctx, l)
	if err != nil {
		return toolError("delegate", err), nil, nil
	}
	if l.Host != t.c.Host() {
		t.remember(l.Host, r.Session.ID, r.Session.Alias)
	}
	if l.Warm > 0 {
		// The profile keeps spares: ask again, so a shape that went
		// idle (its spares expired) is warm for the next delegate.
		go func() {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), warmTimeout)
			defer cancel()
			t.c.KeepWarm(wctx, l)
		}()
	}
	return receiptResult("Delegated to", reqID, &r), nil, nil
}

// send submits a follow-up; with resume, the launch fields are resolved
// as for a resume from the CLI (this side's launch environment).
func (t *tools) send(ctx context.Context, _ *sdk.CallToolRequest, in sendIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("send", rpc.InvalidField("session", "is required")), nil, nil
	}
	if in.Prompt == "" {
		return toolError("send", rpc.InvalidField("prompt", "is required")), nil, nil
	}
	reqID, err := requestID(in.RequestID, in.Key, "send\x00"+in.Session)
	if err != nil {
		return toolError("send", err), nil, nil
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("send", err), nil, nil
	}
	var r rpc.Receipt
	switch {
	case in.Steer && (in.Queue || in.Resume):
		return toolError("send", rpc.InvalidField("steer", "steer excludes queue and resume")), nil, nil
	case in.Queue && in.Resume:
		return toolError("send", rpc.InvalidField("queue", "queue excludes resume")), nil, nil
	case in.Steer:
		r, err = c.SessionSteer(ctx, in.Session, in.Prompt, reqID)
	case in.Queue:
		r, err = c.SessionQueue(ctx, in.Session, in.Prompt, reqID)
	case in.Resume:
		var l client.Launch
		l, err = c.ResolveLaunch(client.LaunchSpec{Resume: true, Prompt: in.Prompt, RequestID: reqID})
		if err == nil {
			r, err = c.Resume(ctx, l, in.Session)
		}
	default:
		r, err = c.SessionSend(ctx, rpc.SessionSendParams{Session: in.Session, Prompt: in.Prompt, RequestID: reqID})
	}
	if err != nil {
		return toolError("send", err), nil, nil
	}
	verb := "Sent to"
	switch {
	case r.Steered:
		verb = "Steered the running execution of"
	case r.Queued:
		verb = "Queued behind the running execution of"
	}
	return receiptResult(verb, reqID, &r), nil, nil
}

// wait is client.WaitResult bounded by the server's wait bound (or the
// caller's shorter one).
func (t *tools) wait(ctx context.Context, _ *sdk.CallToolRequest, in waitIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("wait", rpc.InvalidField("session", "is required")), nil, nil
	}
	if in.TimeoutSeconds < 0 {
		return toolError("wait", rpc.InvalidField("timeout_seconds", "must not be negative")), nil, nil
	}
	bound := t.opts.WaitMax
	if in.TimeoutSeconds > 0 && time.Duration(in.TimeoutSeconds)*time.Second < bound {
		bound = time.Duration(in.TimeoutSeconds) * time.Second
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("wait", err), nil, nil
	}
	w, err := c.WaitResult(ctx, in.Session, in.Cursor, bound)
	if err != nil {
		return toolError("wait", err), nil, nil
	}
	for i := range w.Results {
		dropPrompt(&w.Results[i])
	}
	return withJSON(textResult(t.waitText(&w)), w), nil, nil
}

func (t *tools) read(ctx context.Context, _ *sdk.CallToolRequest, in sessionIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("read", rpc.InvalidField("session", "is required")), nil, nil
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("read", err), nil, nil
	}
	r, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: in.Session})
	if err != nil {
		return toolError("read", err), nil, nil
	}
	var b strings.Builder
	sessionLine(&b, &r.Session)
	if r.Session.Pending != nil {
		pendingText(&b, &r.Session)
	}
	if r.Result == nil {
		b.WriteString("No result yet.\n")
	} else {
		resultText(&b, r.Result)
	}
	dropPrompt(r.Result)
	return withJSON(textResult(b.String()), r), nil, nil
}

func (t *tools) list(ctx context.Context, _ *sdk.CallToolRequest, in listIn) (*sdk.CallToolResult, any, error) {
	r, err := t.c.SessionList(ctx, rpc.SessionListParams{All: in.All})
	if err != nil {
		return toolError("list", err), nil, nil
	}
	var b strings.Builder
	if len(r.Sessions) == 0 {
		b.WriteString("No Sessions.\n")
	}
	for i := range r.Sessions {
		sessionLine(&b, &r.Sessions[i])
	}
	if r.Sessions == nil {
		r.Sessions = []rpc.Session{}
	}
	return withJSON(textResult(b.String()), r), nil, nil
}

func (t *tools) cancel(ctx context.Context, _ *sdk.CallToolRequest, in cancelIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("cancel", rpc.InvalidField("session", "is required")), nil, nil
	}
	p := rpc.SessionCancelParams{Session: in.Session}
	if in.TimeoutSeconds != nil {
		if *in.TimeoutSeconds < 0 {
			return toolError("cancel", rpc.InvalidField("timeout_seconds", "must not be negative")), nil, nil
		}
		ms := int64(*in.TimeoutSeconds) * 1000
		p.TimeoutMS = &ms
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("cancel", err), nil, nil
	}
	r, err := c.SessionCancel(ctx, p)
	if err != nil {
		return toolError("cancel", err), nil, nil
	}
	verb := "Canceled"
	if r.Result == nil {
		verb = "Nothing to cancel: no execution was active"
	}
	dropPrompt(r.Result)
	return withJSON(t.sessionResultText(verb, &r), r), nil, nil
}

// respond answers a blocked Session's pending request. Without a
// pending_id it reads the Session and names the request pending now, so a
// retried call can never answer a later request.
func (t *tools) respond(ctx context.Context, _ *sdk.CallToolRequest, in respondIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("respond", rpc.InvalidField("session", "is required")), nil, nil
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("respond", err), nil, nil
	}
	if in.PendingID == "" {
		r, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: in.Session})
		if err != nil {
			return toolError("respond", err), nil, nil
		}
		if r.Session.Pending == nil {
			return toolError("respond", &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: r.Session.ID,
				Message: "the Session is " + r.Session.State + " with no pending request to answer"}), nil, nil
		}
		in.PendingID = r.Session.Pending.ID
	}
	if in.RequestID == "" {
		in.RequestID = "mcp-" + in.PendingID + "-" + in.Decision + in.Option
	}
	r, err := c.SessionRespond(ctx, rpc.SessionRespondParams{Session: in.Session, PendingID: in.PendingID, Decision: in.Decision,
		Message: in.Message, Option: in.Option, Text: in.Text, RequestID: in.RequestID})
	if err != nil {
		return toolError("respond", err), nil, nil
	}
	var b strings.Builder
	verb := map[string]string{rpc.DecisionAllow: "Allowed", rpc.DecisionDeny: "Denied"}[r.Decision]
	if verb == "" {
		verb = "Answered"
	}
	fmt.Fprintf(&b, "%s pending request %s", verb, r.PendingID)
	if r.Replayed {
		b.WriteString(" (this answer was given before; nothing was answered twice)")
	}
	fmt.Fprintf(&b, ".\n")
	sessionLine(&b, &r.Session)
	fmt.Fprintf(&b, "Call wait with session %q to follow the execution.\n", r.Session.ID)
	return withJSON(textResult(b.String()), r), nil, nil
}

func (t *tools) stop(ctx context.Context, _ *sdk.CallToolRequest, in stopIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("stop", rpc.InvalidField("session", "is required")), nil, nil
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("stop", err), nil, nil
	}
	r, err := c.SessionStop(ctx, rpc.SessionStopParams{Session: in.Session, Force: in.Force, RemoveWorktree: in.RemoveWorktree})
	if err != nil {
		return toolError("stop", err), nil, nil
	}
	dropPrompt(r.Result)
	return withJSON(t.sessionResultText("Stopped", &r), r), nil, nil
}

// diff returns a worktree Session's diff against its base commit,
// bounded (64 KiB unless max_bytes says otherwise).
func (t *tools) diff(ctx context.Context, _ *sdk.CallToolRequest, in diffIn) (*sdk.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("diff", rpc.InvalidField("session", "is required")), nil, nil
	}
	if in.MaxBytes == 0 {
		in.MaxBytes = mcpDiffBytes
	}
	c, err := t.clientFor(in.Session)
	if err != nil {
		return toolError("diff", err), nil, nil
	}
	r, err := c.SessionDiff(ctx, rpc.SessionDiffParams{Session: in.Session, MaxBytes: in.MaxBytes})
	if err != nil {
		return toolError("diff", err), nil, nil
	}
	return withJSON(textResult(diffText(&r)), r), nil, nil
}

// requestID is the given id, or one derived from key within scope. Never
// random: a retry of the same task must carry the same id.
func requestID(id, key, scope string) (string, error) {
	switch {
	case id != "" && key != "":
		return "", rpc.InvalidField("request_id", "give request_id or key, not both")
	case id != "":
		return id, nil
	case key != "":
		sum := sha256.Sum256([]byte("dlgt-mcp\x00" + scope + "\x00" + key))
		return "mcp-" + hex.EncodeToString(sum[:16]), nil
	}
	return "", rpc.InvalidField("request_id", "is required (or give key): choose it before the first attempt and reuse it on every retry")
}
