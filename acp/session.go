package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// fetchWait is how long one session.fetch long poll of a watcher waits.
const fetchWait = 25 * time.Second

// fetchBytes is a watcher's fetch size (the contract's ceiling).
const fetchBytes = 256 << 10

// maxDone bounds the results a session remembers for a prompt that has
// not asked for its result yet.
const maxDone = 16

// session is one ACP session of the connection.
type session struct {
	id sdk.SessionId
	cl *client.Client // addresses the machine that runs the Session

	mu sync.Mutex
	// launch is the launch of the first prompt while no Session exists.
	launch *client.Launch
	// ref is the dlgt Session id once it exists.
	ref string
	// stopped: the Session was stopped or failed when loaded; the next
	// prompt resumes it.
	stopped bool
	turn    *turn
	// watch stops the watcher.
	watch context.CancelFunc
	// done are results seen before their prompt asked, by execution.
	done    map[uint64]rpc.Result
	waiters map[uint64]chan rpc.Result
	// emitted counts the final_text bytes sent, by execution.
	emitted map[uint64]int
	// perms are the permission requests open in the editor, by pending id.
	perms map[string]context.CancelFunc
	// tools are the tool calls reported, by id, with their last status.
	tools map[string]sdk.ToolCallStatus
	// answered are the pending requests the editor answered.
	answered map[string]bool
	// permCall is the editor's tool call id of each pending request
	// asked (the pending id, or the started call's it was joined to);
	// permTools are the requests shown as calls of their own, by that
	// id, with their tool's name, until a call's start joins them.
	permCall  map[string]string
	permTools map[string]string

	// toolMu serialises reporting tool.call events (tools.go); toolSeq
	// is the last one reported, once toolBased (where the watcher's
	// events start is known). calls are the started calls not ended.
	toolMu    sync.Mutex
	toolSeq   uint64
	toolBased bool
	calls     map[string]*hookCall
	// asks: the harness was launched asking for approvals, so a call
	// that starts may wait for one (pending) rather than run.
	asks bool
}

// turn is the prompt running in the session.
type turn struct {
	cancelled bool
}

func (s *session) stopWatching() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil {
		s.watch()
		s.watch = nil
	}
	for id, cancel := range s.perms {
		cancel()
		delete(s.perms, id)
	}
}

// withdrawAll cancels the session's open permission requests.
func (s *session) withdrawAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, cancel := range s.perms {
		cancel()
		delete(s.perms, id)
	}
}

// Prompt sends the turn (session.create for the first prompt of a new
// session, session.send after, with resume for a stopped Session) and
// answers when the daemon has its result; the answer's text reaches the
// editor as agent_message_chunk updates from the watcher before that.
func (a *agent) Prompt(_ context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	// The SDK cancels the request's context on session/cancel and on a
	// second prompt; the turn ends when the daemon says, so the
	// connection's context is used instead.
	ctx := a.ctx
	s, err := a.get(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	steer, err := wantsSteer(p.Meta)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	t := &turn{}
	s.mu.Lock()
	if s.turn != nil {
		ref := s.ref
		s.mu.Unlock()
		if steer && ref != "" {
			return a.steer(ctx, s, ref, text)
		}
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32600, Message: fmt.Sprintf("a prompt is already running in session %s: wait for its answer or send session/cancel (or send this one with _meta {\"dlgt\": {\"steer\": true}} to steer the running turn)", p.SessionId)}
	}
	s.turn = t
	launch, ref, stopped := s.launch, s.ref, s.stopped
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
	}()

	reqID := "acp-" + randHex(16)
	var r rpc.Receipt
	switch {
	case ref == "":
		l := *launch
		l.Params.Prompt, l.Params.RequestID = text, reqID
		l.Params.Title, l.Params.Alias = titleOf(text), string(s.id)
		r, err = s.cl.SessionCreate(ctx, l.Params)
		if err == nil {
			s.mu.Lock()
			s.ref, s.launch = r.Session.ID, nil
			// A new Session: its tool calls from its start.
			s.toolSeq, s.toolBased = 0, true
			s.asks = l.Params.AutoApprove != nil && !*l.Params.AutoApprove
			s.mu.Unlock()
			a.follow(s, r.Cursor)
			a.releaseSpare(s, l)
		}
	case stopped:
		var l client.Launch
		l, err = s.cl.ResolveLaunch(client.LaunchSpec{Resume: true, Prompt: text, RequestID: reqID})
		if err == nil {
			r, err = s.cl.SessionSend(ctx, l.ResumeParams(ref))
		}
		if err == nil {
			s.mu.Lock()
			s.stopped = false
			moved := r.Session.ID != s.ref
			s.ref = r.Session.ID
			s.mu.Unlock()
			if moved {
				a.follow(s, r.Cursor) // relaunched under another id
			}
		}
	default:
		r, err = s.cl.SessionSend(ctx, rpc.SessionSendParams{Session: ref, Prompt: text, RequestID: reqID})
	}
	if err != nil {
		return sdk.PromptResponse{}, acpError(err)
	}
	s.mu.Lock()
	cancelled := t.cancelled
	s.mu.Unlock()
	if cancelled {
		// session/cancel came while the turn was being submitted.
		go a.cancelTurn(s, r.Session.ID)
	}
	res, err := a.await(ctx, s, r.ExecutionSeq)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	s.mu.Lock()
	cancelled = t.cancelled
	s.mu.Unlock()
	if sr, ok := stopReason(res, cancelled); ok {
		resp := sdk.PromptResponse{StopReason: sr}
		if res.Status != rpc.StatusCompleted && res.Error != nil && sr != sdk.StopReasonCancelled {
			// The harness ended the turn as failed for that reason: what
			// it said, for an editor that shows it.
			resp.Meta = map[string]any{"dlgt": map[string]any{"status": res.Status, "error": res.Error}}
		}
		return resp, nil
	}
	msg := "the turn ended " + res.Status
	data := map[string]any{"status": res.Status}
	if res.Error != nil {
		msg = res.Error.Message
		data["dlgt_code"] = res.Error.Code
	}
	return sdk.PromptResponse{}, &sdk.RequestError{Code: -32603, Message: msg, Data: data}
}

// wantsSteer reports whether a prompt's _meta asks to steer the running
// turn: {"dlgt": {"steer": true}}. Any other shape under "dlgt" is bad
// params; other keys are not dlgt's and are ignored.
func wantsSteer(meta map[string]any) (bool, error) {
	v, ok := meta["dlgt"]
	if !ok {
		return false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false, invalidParams(`_meta.dlgt must be an object, e.g. {"steer": true}`)
	}
	st, ok := m["steer"]
	if !ok {
		return false, nil
	}
	b, ok := st.(bool)
	if !ok {
		return false, invalidParams("_meta.dlgt.steer must be true or false")
	}
	return b, nil
}

// steer types text into the turn running in the Session (session.send
// steer, the execution session.read shows active) and answers at once:
// end_turn with _meta.dlgt {steered: true, execution_seq}. What the
// harness answers comes in that turn's answer, to the prompt that runs
// it. A harness that takes no steer (Gemini CLI), or a turn that ended
// meanwhile, is dlgt's INVALID_ARGUMENT (-32602): nothing was typed.
func (a *agent) steer(ctx context.Context, s *session, ref, text string) (sdk.PromptResponse, error) {
	r, err := s.cl.SessionSteer(ctx, ref, text, "acp-"+randHex(16))
	if err != nil {
		return sdk.PromptResponse{}, acpError(err)
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn, Meta: map[string]any{"dlgt": map[string]any{"steered": true, "execution_seq": r.ExecutionSeq}}}, nil
}

// stopReason is the prompt's stopReason for result r (false: the turn
// failed, an error): cancelled after a cancel; max_tokens or refusal when
// the result's stop_reason says so, whatever its status (Claude Code ends
// such a turn with an API error, so its result is failed); end_turn for
// any other completed turn.
func stopReason(r rpc.Result, cancelled bool) (sdk.StopReason, bool) {
	switch {
	case r.Status == rpc.StatusCanceled || cancelled:
		return sdk.StopReasonCancelled, true
	case r.StopReason == rpc.StopMaxTokens:
		return sdk.StopReasonMaxTokens, true
	case r.StopReason == rpc.StopRefusal:
		return sdk.StopReasonRefusal, true
	case r.Status == rpc.StatusCompleted:
		return sdk.StopReasonEndTurn, true
	}
	return "", false
}

// releaseSpare stops the spare the daemon starts to replace the one the
// first prompt claimed, unless a profile keeps spares of that launch or
// another session of this connection still waits for its first prompt
// in the same directory: a thread that was opened is served, and no
// harness process is left waiting for one that was not.
func (a *agent) releaseSpare(s *session, l client.Launch) {
	wp, ok := l.WarmParams(0)
	if !ok || l.Warm > 0 || l.Host != "" || a.opts.WarmSpares <= 0 {
		return
	}
	a.mu.Lock()
	for _, o := range a.sessions {
		if o == s {
			continue
		}
		o.mu.Lock()
		waiting := o.launch != nil && o.launch.Params.Cwd == l.Params.Cwd
		o.mu.Unlock()
		if waiting {
			a.mu.Unlock()
			return
		}
	}
	a.mu.Unlock()
	go func() {
		if _, err := s.cl.SessionWarm(a.ctx, wp); err != nil && a.ctx.Err() == nil {
			fmt.Fprintf(a.opts.Stderr, "dlgt acp: stopping the replacement spare: %v\n", err)
		}
	}()
}

// await is the result of execution seq, as the watcher delivers it.
func (a *agent) await(ctx context.Context, s *session, seq uint64) (rpc.Result, error) {
	s.mu.Lock()
	if r, ok := s.done[seq]; ok {
		s.mu.Unlock()
		return r, nil
	}
	ch := make(chan rpc.Result, 1)
	if s.waiters == nil {
		s.waiters = map[uint64]chan rpc.Result{}
	}
	s.waiters[seq] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiters, seq)
		s.mu.Unlock()
	}()
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return rpc.Result{}, &sdk.RequestError{Code: -32603, Message: "the connection closed before the turn ended; the turn goes on in dlgt (session/load shows its answer)"}
	}
}

// follow starts the session's watcher from cursor (once).
func (a *agent) follow(s *session, cursor string) {
	ctx, cancel := context.WithCancel(a.ctx)
	s.mu.Lock()
	if s.watch != nil {
		s.watch()
	}
	s.watch = cancel
	ref := s.ref
	s.mu.Unlock()
	go a.watch(ctx, s, ref, cursor)
	go a.watchTools(ctx, s, ref)
}

// watch follows the Session with session.fetch long polls: results become
// agent_message_chunk updates (each fetched piece of final_text as it
// comes, so their concatenation is the final text byte for byte) and end
// the prompt waiting for them; a pending permission becomes a tool_call
// and a session/request_permission.
func (a *agent) watch(ctx context.Context, s *session, ref, cursor string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		p := rpc.SessionFetchParams{Session: ref, Screen: json.RawMessage("false"), MaxBytes: fetchBytes, WaitMS: fetchWait.Milliseconds()}
		if cursor != "" {
			p.Cursor, _ = json.Marshal(cursor)
		}
		doc, err := s.cl.SessionFetch(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fmt.Fprintf(a.opts.Stderr, "dlgt acp: following %s: %v\n", ref, err)
			if errors.Is(err, rpc.ErrCursorExpired) || errors.Is(err, rpc.ErrCursorInvalid) {
				cursor = "" // start again from now
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		cursor = doc.Cursor
		for _, fs := range doc.Sessions {
			a.apply(ctx, s, fs)
		}
	}
}

// apply reports one fetched bucket to the editor.
func (a *agent) apply(ctx context.Context, s *session, fs rpc.FetchSession) {
	for _, r := range fs.Results {
		off := 0
		if r.FinalTextOffset != nil {
			off = *r.FinalTextOffset
		}
		s.mu.Lock()
		sent, ours := s.emitted[r.ExecutionSeq], s.turn != nil
		s.mu.Unlock()
		if off == 0 && sent == 0 && !ours {
			// Another client's turn: its prompt, as the daemon kept it.
			if p, ok := promptOf(r); ok {
				a.update(s.id, sdk.UpdateUserMessageText(p))
			}
		}
		if r.FinalText != nil && off <= sent && off+len(*r.FinalText) > sent {
			piece := (*r.FinalText)[sent-off:]
			if a.update(s.id, sdk.UpdateAgentMessageText(piece)) == nil {
				s.mu.Lock()
				if s.emitted == nil {
					s.emitted = map[uint64]int{}
				}
				s.emitted[r.ExecutionSeq] = off + len(*r.FinalText)
				s.mu.Unlock()
			}
		}
		if r.FinalTextComplete == nil || *r.FinalTextComplete {
			a.catchUpTools(ctx, s)
			a.finish(s, r)
		}
	}
	a.pending(ctx, s, fs.Session.Pending)
}

// finish ends the tool calls of the turn and hands the result to its
// prompt (or keeps it for the prompt that asks later).
func (a *agent) finish(s *session, r rpc.Result) {
	status := sdk.ToolCallStatusCompleted
	if r.Status != rpc.StatusCompleted {
		status = sdk.ToolCallStatusFailed
	}
	s.mu.Lock()
	var open []string
	for id, st := range s.tools {
		if st != sdk.ToolCallStatusFailed && st != sdk.ToolCallStatusCompleted {
			open = append(open, id)
		}
		delete(s.tools, id)
	}
	delete(s.emitted, r.ExecutionSeq)
	s.answered, s.permCall, s.permTools, s.calls = nil, nil, nil, nil
	ch, waiting := s.waiters[r.ExecutionSeq]
	if !waiting {
		if s.done == nil || len(s.done) >= maxDone {
			s.done = map[uint64]rpc.Result{}
		}
		s.done[r.ExecutionSeq] = r
	}
	s.mu.Unlock()
	for _, id := range open {
		a.update(s.id, sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(status)))
	}
	if waiting {
		ch <- r
	}
}

// pending opens a permission request for a new pending request and
// withdraws those that are no longer pending (answered elsewhere, or the
// turn moved on). A request withdrawn from the editor that is pending
// again (not answered by it) is asked again.
func (a *agent) pending(ctx context.Context, s *session, p *rpc.Pending) {
	s.mu.Lock()
	for id, cancel := range s.perms {
		if p == nil || p.ID != id {
			cancel()
			delete(s.perms, id)
		}
	}
	if p == nil || p.Kind != rpc.PendingPermission || s.answered[p.ID] {
		s.mu.Unlock()
		return
	}
	if _, open := s.perms[p.ID]; open {
		s.mu.Unlock()
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	if s.perms == nil {
		s.perms = map[string]context.CancelFunc{}
	}
	if s.tools == nil {
		s.tools = map[string]sdk.ToolCallStatus{}
	}
	s.perms[p.ID] = cancel
	callID, known := s.permCall[p.ID]
	if !known {
		if s.permCall == nil {
			s.permCall, s.permTools = map[string]string{}, map[string]string{}
		}
		// The call's start, when already reported, is the call asked
		// about; else the request is one of its own until it comes.
		if callID = s.joinHookCallLocked(p.Tool); callID == "" {
			callID = p.ID
			s.permTools[callID] = p.Tool
		}
		s.permCall[p.ID] = callID
	}
	_, reported := s.tools[callID]
	s.tools[callID] = sdk.ToolCallStatusPending
	ref := s.ref
	s.mu.Unlock()
	go a.askPermission(pctx, s, ref, *p, callID, !reported)
}

// askPermission reports the tool call and asks the editor; its answer is
// session.respond. An answer after the request closed (someone else
// answered, the turn was cancelled) changes nothing: the daemon refuses
// it, and that refusal is only logged.
func (a *agent) askPermission(ctx context.Context, s *session, ref string, p rpc.Pending, callID string, report bool) {
	kind := toolKind(p.Tool)
	title := toolTitle(p.Tool, p.Input)
	raw := map[string]any{"tool": p.Tool, "input": p.Input}
	if report {
		a.update(s.id, sdk.StartToolCall(sdk.ToolCallId(callID), title, sdk.WithStartKind(kind), sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(raw)))
	}
	pending := sdk.ToolCallStatusPending
	resp, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: s.id,
		ToolCall:  sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(callID), Title: &title, Kind: &kind, Status: &pending, RawInput: raw},
		Options: []sdk.PermissionOption{
			{OptionId: rpc.DecisionAllow, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: rpc.DecisionDeny, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil || resp.Outcome.Selected == nil {
		if err != nil && a.ctx.Err() == nil {
			fmt.Fprintf(a.opts.Stderr, "dlgt acp: permission request %s closed: %v\n", p.ID, err)
		}
		return // withdrawn, cancelled, or the editor went away
	}
	decision := string(resp.Outcome.Selected.OptionId)
	if decision != rpc.DecisionAllow && decision != rpc.DecisionDeny {
		fmt.Fprintf(a.opts.Stderr, "dlgt acp: the editor chose %q, not an offered option; the request stays open\n", decision)
		return
	}
	s.mu.Lock()
	if s.answered == nil {
		s.answered = map[string]bool{}
	}
	s.answered[p.ID] = true
	s.mu.Unlock()
	_, err = s.cl.SessionRespond(a.ctx, rpc.SessionRespondParams{Session: ref, PendingID: p.ID, Decision: decision, RequestID: "acp-" + p.ID + "-" + decision})
	if err != nil {
		fmt.Fprintf(a.opts.Stderr, "dlgt acp: answer to %s not taken: %v\n", p.ID, err)
		return
	}
	status := sdk.ToolCallStatusInProgress
	if decision == rpc.DecisionDeny {
		status = sdk.ToolCallStatusFailed
	}
	s.mu.Lock()
	st, ok := s.tools[callID]
	if ok && st == sdk.ToolCallStatusPending {
		s.tools[callID] = status
	}
	s.mu.Unlock()
	if ok && st == sdk.ToolCallStatusPending {
		a.update(s.id, sdk.UpdateToolCall(sdk.ToolCallId(callID), sdk.WithUpdateStatus(status)))
	}
}

// promptCut ends a prompt session.fetch carried only the start of.
const promptCut = "\n[dlgt: the rest of this prompt is not shown]"

// promptOf is the prompt of result r as the editor is shown it (the
// daemon's record of the execution's prompt; none for an execution it
// knows no prompt of).
func promptOf(r rpc.Result) (string, bool) {
	switch {
	case r.Prompt == nil:
		return "", false
	case r.PromptTruncated:
		return *r.Prompt + promptCut, true
	}
	return *r.Prompt, true
}
