package acp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Error codes beyond JSON-RPC's own (the ACP schema's).
const (
	codeResourceNotFound = -32002
)

// maxSessions bounds the Sessions one connection holds.
const maxSessions = 256

// listPage is session/list's default page size.
const listPage = 50

// agent is the ACP agent of one connection: each ACP session is a dlgt
// Session (or, until its first prompt, the launch that will make it).
type agent struct {
	ctx  context.Context // the connection's lifetime
	stop context.CancelFunc
	c    *client.Client
	opts Options
	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	sessions map[string]*session
}

func newAgent(ctx context.Context, c *client.Client, opts Options) *agent {
	ctx, stop := context.WithCancel(ctx)
	return &agent{ctx: ctx, stop: stop, c: c, opts: opts, sessions: map[string]*session{}}
}

// close ends the connection's watchers; the Sessions stay.
func (a *agent) close() {
	a.stop()
}

// acpError is a dlgt error as the editor receives it: INVALID_ARGUMENT is
// -32602, NOT_FOUND -32002, anything else -32603 with dlgt's message (a
// daemon that cannot be reached names dlgt doctor).
func acpError(err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	e := rpc.AsError(err)
	data := map[string]any{"dlgt_code": string(e.Code)}
	if e.Field != "" {
		data["field"] = e.Field
	}
	switch e.Code {
	case rpc.CodeInvalidArgument:
		return &sdk.RequestError{Code: -32602, Message: e.Message, Data: data}
	case rpc.CodeNotFound:
		return &sdk.RequestError{Code: codeResourceNotFound, Message: e.Message, Data: data}
	case rpc.CodeRPCUnavailable:
		return &sdk.RequestError{Code: -32603, Message: e.Message + "; run `dlgt doctor` to see why", Data: data}
	}
	return &sdk.RequestError{Code: -32603, Message: e.Message, Data: data}
}

// unknownSession is the error of a sessionId this connection does not hold.
func unknownSession(id sdk.SessionId) error {
	return &sdk.RequestError{Code: codeResourceNotFound, Message: fmt.Sprintf("session %q is not open on this connection: open it with session/new, session/load or session/resume", id)}
}

// descriptor is the registry entry of a harness name.
func (a *agent) descriptor(name string) (harness.Descriptor, bool) {
	for _, d := range a.opts.Harnesses {
		if d.Name == name {
			return d, true
		}
	}
	return harness.Descriptor{}, false
}

func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	title := "dlgt"
	caps := sdk.AgentCapabilities{
		LoadSession:        true,
		PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true},
		SessionCapabilities: sdk.SessionCapabilities{
			List:   &sdk.SessionListCapabilities{},
			Resume: &sdk.SessionResumeCapabilities{},
			Close:  &sdk.SessionCloseCapabilities{},
		},
	}
	// HTTP and SSE servers reach a harness that takes servers per launch.
	if l, err := a.c.ResolveLaunch(a.spec("")); err == nil {
		if d, ok := a.descriptor(l.Params.Harness); ok {
			switch d.MCP {
			case harness.MCPClaudeJSON, harness.MCPCopilotJSON:
				caps.McpCapabilities = sdk.McpCapabilities{Http: true, Sse: true}
			case harness.MCPCodexTOML:
				caps.McpCapabilities = sdk.McpCapabilities{Http: true}
			}
			// A prompt with _meta {"dlgt": {"steer": true}} while one
			// runs steers it, where the harness takes steers.
			caps.Meta = map[string]any{"dlgt": map[string]any{"steer": d.Harness.Info().Capabilities.Steering}}
		}
	}
	return sdk.InitializeResponse{
		ProtocolVersion:   sdk.ProtocolVersionNumber,
		AgentInfo:         &sdk.Implementation{Name: "dlgt", Title: &title, Version: a.opts.Version},
		AgentCapabilities: caps,
		AuthMethods:       []sdk.AuthMethod{},
	}, nil
}

// Authenticate succeeds without doing anything: dlgt offers no
// authentication methods (each harness uses its own sign-in), and a
// client that asks anyway is not stopped by it.
func (a *agent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

func (a *agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

// spec is the command line's launch with cwd.
func (a *agent) spec(cwd string) client.LaunchSpec {
	s := a.opts.Launch
	s.HarnessOptions = append([]string(nil), s.HarnessOptions...)
	s.Cwd = cwd
	return s
}

// NewSession resolves the launch with the editor's cwd and starts its
// harness at once as a warm spare of that launch (session.warm), which
// the first prompt's session.create claims; the sessionId is the alias
// the Session is created with.
func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	l, err := a.c.ResolveLaunch(a.spec(p.Cwd))
	if err != nil {
		return sdk.NewSessionResponse{}, acpError(err)
	}
	d, ok := a.descriptor(l.Params.Harness)
	if !ok {
		return sdk.NewSessionResponse{}, acpError(rpc.InvalidField("harness", "%q is not a harness of this dlgt (%s)", l.Params.Harness, client.HarnessList(a.opts.Harnesses)))
	}
	opts, skipped := mcpOptions(d.MCP, p.McpServers)
	l.Params.HarnessOptions = append(l.Params.HarnessOptions, opts...)
	if len(skipped) > 0 {
		fmt.Fprintf(a.opts.Stderr, "dlgt acp: %s takes no MCP servers per launch of this kind; not passed: %v\n", d.DisplayName, skipped)
	}
	cl, err := a.c.WithHost(hostOf(l.Host))
	if err != nil {
		return sdk.NewSessionResponse{}, acpError(err)
	}
	spares := a.opts.WarmSpares
	if l.Warm > spares {
		spares = l.Warm
	}
	if wp, ok := l.WarmParams(min(spares, client.MaxWarm)); ok && l.Host == "" && a.opts.WarmSpares > 0 {
		if _, err := cl.SessionWarm(ctx, wp); err != nil {
			// The daemon's bound on spares only costs this thread its
			// head start; anything else (no daemon, a bad launch) is the
			// editor's error now rather than at the first prompt.
			if re := rpc.AsError(err); re.Code != rpc.CodeInvalidArgument || re.Field != "spares" {
				return sdk.NewSessionResponse{}, acpError(err)
			}
			fmt.Fprintf(a.opts.Stderr, "dlgt acp: no warm spare for this session (%v); its first prompt starts the harness\n", err)
		}
	}
	id := "acp-" + randHex(8)
	s := &session{id: sdk.SessionId(id), cl: cl, launch: &l}
	if err := a.hold(s); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: s.id}, nil
}

// hostOf is a Launch host as WithHost takes it.
func hostOf(h string) string {
	if h == "" {
		return "local"
	}
	return h
}

// hold adds s to the connection, replacing (and stopping) a session of
// the same id.
func (a *agent) hold(s *session) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.sessions[string(s.id)]; ok {
		old.mu.Lock()
		running := old.turn != nil
		old.mu.Unlock()
		if running {
			return &sdk.RequestError{Code: -32600, Message: fmt.Sprintf("session %s has a prompt running on this connection: wait for its answer or cancel it first", s.id)}
		}
		old.stopWatching()
	} else if len(a.sessions) >= maxSessions {
		return &sdk.RequestError{Code: -32603, Message: fmt.Sprintf("this connection holds %d sessions already: close some (session/close)", maxSessions)}
	}
	a.sessions[string(s.id)] = s
	return nil
}

func (a *agent) get(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[string(id)]
	if !ok {
		return nil, unknownSession(id)
	}
	return s, nil
}

// LoadSession replays a dlgt Session's retained results (the prompt as
// user_message_chunk when the daemon kept it, then its kept tool calls as
// tool_call with their last status, then the final text as
// agent_message_chunk), then follows it.
func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, res, err := a.open(ctx, p.SessionId)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	for _, r := range res.Results {
		if p, ok := promptOf(r); ok {
			if err := a.update(s.id, sdk.UpdateUserMessageText(p)); err != nil {
				return sdk.LoadSessionResponse{}, err
			}
		}
		for _, u := range replayedTools(r) {
			if err := a.update(s.id, u); err != nil {
				return sdk.LoadSessionResponse{}, err
			}
		}
		if r.FinalText != nil && *r.FinalText != "" {
			if err := a.update(s.id, sdk.UpdateAgentMessageText(*r.FinalText)); err != nil {
				return sdk.LoadSessionResponse{}, err
			}
		}
	}
	a.follow(s, res.Cursor)
	return sdk.LoadSessionResponse{}, nil
}

// ResumeSession follows a dlgt Session without replaying it.
func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	s, res, err := a.open(ctx, p.SessionId)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	a.follow(s, res.Cursor)
	return sdk.ResumeSessionResponse{}, nil
}

// open reads the dlgt Session id refers to (an id or alias) and its
// retained results, and holds it on the connection.
func (a *agent) open(ctx context.Context, id sdk.SessionId) (*session, *client.SessionResults, error) {
	if id == "" {
		return nil, nil, invalidParams("sessionId is required")
	}
	a.mu.Lock()
	if s, ok := a.sessions[string(id)]; ok && s.ref == "" {
		a.mu.Unlock()
		return nil, nil, &sdk.RequestError{Code: -32602, Message: fmt.Sprintf("session %q has had no prompt yet: there is nothing to load", id)}
	}
	a.mu.Unlock()
	rd, err := a.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if errors.Is(err, rpc.ErrNotFound) {
		// An alias addresses only a Session that is not stopped: the
		// sessionId of a stopped one is found by listing.
		if full := a.byAlias(ctx, string(id)); full != "" {
			rd, err = a.c.SessionRead(ctx, rpc.SessionReadParams{Session: full})
		}
	}
	if err != nil {
		if errors.Is(err, rpc.ErrNotFound) {
			return nil, nil, &sdk.RequestError{Code: codeResourceNotFound, Message: fmt.Sprintf("no dlgt Session %q (see `dlgt session list --all`)", id)}
		}
		return nil, nil, acpError(err)
	}
	// Pages as large as the watcher's, so a replayed prompt is cut no
	// sooner than a followed one.
	res, err := a.c.ResultsPaged(ctx, rd.Session.ID, 0, fetchBytes, true)
	if err != nil {
		return nil, nil, acpError(err)
	}
	s := &session{id: id, cl: a.c, ref: rd.Session.ID, stopped: terminal(rd.Session.State)}
	if err := a.hold(s); err != nil {
		return nil, nil, err
	}
	return s, res, nil
}

// byAlias is the id of the newest Session, stopped ones included, whose
// alias is alias ("" for none).
func (a *agent) byAlias(ctx context.Context, alias string) string {
	r, err := a.c.SessionList(ctx, rpc.SessionListParams{All: true})
	if err != nil {
		return ""
	}
	id, at := "", int64(-1)
	for _, s := range r.Sessions {
		if s.Alias == alias && s.UpdatedAtMS > at {
			id, at = s.ID, s.UpdatedAtMS
		}
	}
	return id
}

// terminal reports a Session state a prompt resumes from.
func terminal(state string) bool {
	return state == rpc.StateStopped || state == rpc.StateFailed
}

// ListSessions lists dlgt Sessions, newest first, filtered by cwd.
func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	off := 0
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 {
			return sdk.ListSessionsResponse{}, invalidParams(fmt.Sprintf("cursor %q is not one this agent returned", *p.Cursor))
		}
		off = n
	}
	r, err := a.c.SessionList(ctx, rpc.SessionListParams{All: true})
	if err != nil {
		return sdk.ListSessionsResponse{}, acpError(err)
	}
	var ss []rpc.Session
	for _, s := range r.Sessions {
		if p.Cwd == nil || *p.Cwd == s.Cwd || (s.Worktree != nil && s.Worktree.Repo == *p.Cwd) {
			ss = append(ss, s)
		}
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].UpdatedAtMS > ss[j].UpdatedAtMS })
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	if off > len(ss) {
		off = len(ss)
	}
	page := a.opts.ListPage
	if page <= 0 {
		page = listPage
	}
	end := min(off+page, len(ss))
	for _, s := range ss[off:end] {
		title, at := s.Title, time.UnixMilli(s.UpdatedAtMS).UTC().Format(time.RFC3339Nano)
		id := s.ID
		if len(s.Alias) > 4 && s.Alias[:4] == "acp-" {
			id = s.Alias // the id the editor was given at session/new
		}
		out.Sessions = append(out.Sessions, sdk.SessionInfo{SessionId: sdk.SessionId(id), Cwd: s.Cwd, Title: &title, UpdatedAt: &at})
	}
	if end < len(ss) {
		next := strconv.Itoa(end)
		out.NextCursor = &next
	}
	return out, nil
}

// CloseSession stops the dlgt Session (session.stop, force) and forgets
// it on this connection.
func (a *agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	s, err := a.get(p.SessionId)
	if err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	s.mu.Lock()
	ref := s.ref
	s.mu.Unlock()
	if ref != "" {
		if _, err := s.cl.SessionStop(ctx, rpc.SessionStopParams{Session: ref, Force: true}); err != nil && !errors.Is(err, rpc.ErrSessionUnavailable) {
			return sdk.CloseSessionResponse{}, acpError(err)
		}
	}
	s.stopWatching()
	a.mu.Lock()
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	return sdk.CloseSessionResponse{}, nil
}

// Cancel asks the daemon to cancel the running turn (session.cancel);
// the prompt then answers cancelled, and the permission requests the
// turn opened are withdrawn.
func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	s, err := a.get(p.SessionId)
	if err != nil {
		return nil // a notification has no answer
	}
	s.mu.Lock()
	t, ref := s.turn, s.ref
	if t != nil {
		t.cancelled = true
	}
	s.mu.Unlock()
	if t == nil || ref == "" {
		return nil // nothing runs, or the create has not answered yet (the prompt cancels then)
	}
	s.withdrawAll()
	go a.cancelTurn(s, ref)
	return nil
}

func (a *agent) cancelTurn(s *session, ref string) {
	if _, err := s.cl.SessionCancel(a.ctx, rpc.SessionCancelParams{Session: ref}); err != nil && a.ctx.Err() == nil {
		fmt.Fprintf(a.opts.Stderr, "dlgt acp: cancel %s: %v\n", ref, err)
	}
}

// update sends one session/update.
func (a *agent) update(id sdk.SessionId, u sdk.SessionUpdate) error {
	return a.conn.SessionUpdate(a.ctx, sdk.SessionNotification{SessionId: id, Update: u})
}
