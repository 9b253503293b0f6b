package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SchemaVersion is the version of the fetch document and of lifecycle events.
const SchemaVersion = 1

// Session states of the v1 contract.
const (
	StateStarting   = "starting"
	StateIdle       = "idle"
	StateBusy       = "busy"
	StateBlocked    = "blocked"
	StateCanceling  = "canceling"
	StateStopping   = "stopping"
	StateRestarting = "restarting"
	StateStopped    = "stopped"
	StateFailed     = "failed"
)

// Execution result statuses.
const (
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusCanceled    = "canceled"
	StatusInterrupted = "interrupted"
)

// Where a result's final_text came from.
const (
	TextSourceHook       = "hook"
	TextSourceTranscript = "transcript"
	TextSourceMissing    = "missing"
)

// Lifecycle event types: the complete v1 set.
const (
	EventSessionCreated    = "session.created"
	EventSessionRestarting = "session.restarting"
	EventSessionReady      = "session.ready"
	EventSessionBusy       = "session.busy"
	EventSessionBlocked    = "session.blocked"
	EventSessionResumed    = "session.resumed"
	EventSessionCanceling  = "session.canceling"
	EventSessionIdle       = "session.idle"
	EventSessionStopping   = "session.stopping"
	EventSessionStopped    = "session.stopped"
	EventSessionFailed     = "session.failed"
	EventProviderRetrying  = "provider.retrying"
	// EventExecutionSteered (an extension) is a steer typed into the
	// running execution (session.send steer); Reason says what proves the
	// harness took it (SteerDelivered, or SteerSeen once its own record
	// shows the text).
	EventExecutionSteered = "execution.steered"
	// EventExecutionQueued (an extension) is a send queued behind the
	// active execution; ExecutionSeq is the one it will run as.
	EventExecutionQueued = "execution.queued"
)

// Reasons of execution.steered.
const (
	// SteerDelivered: the text was typed and submitted in the TUI.
	SteerDelivered = "delivered_to_tui"
	// SteerSeen: the harness's own record of the turn (Claude Code's
	// transcript, Codex's rollout) holds the text: a second
	// execution.steered event, after the first.
	SteerSeen = "seen_in_transcript"
)

// EventToolCall (an extension, outside the v1 set in EventTypes) is a tool
// call the harness reported through its hooks: one event when it starts
// and one when it ends. event.read and event.subscribe carry it only to a
// caller that asks (EventReadParams.ToolCalls); session.fetch never does.
const EventToolCall = "tool.call"

// Tool call statuses (ToolCallEvent.Status).
const (
	ToolStatusStarted   = "started"
	ToolStatusCompleted = "completed"
	ToolStatusFailed    = "failed"
)

// MaxToolRaw bounds a tool.call event's input and output: a longer one is
// carried as a JSON string of its first MaxToolRaw bytes of compact JSON,
// flagged input_truncated / output_truncated.
const MaxToolRaw = 4096

// EventTypes lists the v1 event types.
var EventTypes = []string{
	EventSessionCreated, EventSessionRestarting, EventSessionReady,
	EventSessionBusy, EventSessionBlocked, EventSessionResumed,
	EventSessionCanceling, EventSessionIdle, EventSessionStopping,
	EventSessionStopped, EventSessionFailed, EventProviderRetrying,
	EventExecutionSteered, EventExecutionQueued,
}

// Fetch reasons. Every one of them is a successful response.
const (
	ReasonSnapshot = "snapshot"
	ReasonChange   = "change"
	ReasonResult   = "result"
	ReasonBlocked  = "blocked"
	ReasonPageFull = "page_full"
	ReasonGap      = "gap"
	ReasonTimeout  = "timeout"
)

// ---- Parameters ----------------------------------------------------------
//
// Field tags: `json` names the wire key; `rpc:"required"` marks a key that
// must be present. Decoding is strict (see Decode).

// SessionCreateParams are the parameters of session.create.
type SessionCreateParams struct {
	Title            string            `json:"title" rpc:"required"`
	Alias            string            `json:"alias,omitempty"`
	Harness          string            `json:"harness" rpc:"required"`
	Cwd              string            `json:"cwd" rpc:"required"`
	Model            string            `json:"model,omitempty"`
	Effort           string            `json:"effort,omitempty"`
	HarnessOptions   []string          `json:"harness_options,omitempty"`
	AutoApprove      *bool             `json:"auto_approve,omitempty"`
	Prompt           string            `json:"prompt" rpc:"required"`
	RequestID        string            `json:"request_id" rpc:"required"`
	StartupTimeoutMS int64             `json:"startup_timeout_ms,omitempty"`
	Environment      map[string]string `json:"environment,omitempty"`
	Rows             int               `json:"rows,omitempty"`
	Cols             int               `json:"cols,omitempty"`
	CorrelationID    string            `json:"correlation_id,omitempty"`
	// Worktree (an extension of the seed) runs the Session in a git
	// worktree of its own on a new branch; nil runs it in Cwd as given.
	Worktree *WorktreeOption `json:"worktree,omitempty"`
}

// WorktreeOption asks for a git worktree on a new branch made from the
// HEAD of the repository holding cwd. An empty Branch is derived from the
// alias (or the title): "dlgt/<alias>".
type WorktreeOption struct {
	Branch string `json:"branch,omitempty"`
}

// Worktree is the git worktree a Session runs in (an extension of the
// seed): Path the worktree's root (under the daemon's state directory),
// Branch the branch it made, BaseCommit the HEAD it started from, Repo the
// root of the repository cwd was in.
type Worktree struct {
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	BaseCommit string `json:"base_commit"`
	Repo       string `json:"repo"`
	// Removed: session.stop remove_worktree removed the worktree and
	// its branch.
	Removed bool `json:"removed,omitempty"`
}

// DiffSummary counts what a worktree Session changed against its base
// commit: the working tree (committed, staged, unstaged and untracked
// files) against base_commit. Committed: the branch has commits beyond the
// base. Error is set (and the counts are zero) when git could not say.
type DiffSummary struct {
	Files      int    `json:"files"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Committed  bool   `json:"committed"`
	Error      string `json:"error,omitempty"`
}

// SessionDiffParams are the parameters of session.diff (an extension).
type SessionDiffParams struct {
	Session  string `json:"session" rpc:"required"`
	MaxBytes int    `json:"max_bytes,omitempty"`
}

// SessionDiffResult is the result of session.diff: the unified diff of the
// Session's worktree (working tree, untracked files as added) against its
// base commit, cut to max_bytes at a line boundary when Truncated.
type SessionDiffResult struct {
	Session   Session     `json:"session"`
	Worktree  Worktree    `json:"worktree"`
	Summary   DiffSummary `json:"summary"`
	Diff      string      `json:"diff"`
	Truncated bool        `json:"truncated"`
}

// SessionWarmParams are the parameters of session.warm (an extension):
// keep Spares harness processes started ahead for one launch shape, the
// launch fields of session.create (harness, cwd, model, effort,
// harness_options, auto_approve, environment, rows, cols). A
// session.create of exactly that shape, without a worktree, claims a
// ready one instead of starting its harness. Spares 0 stops the shape's
// spares. A shape unused for IdleMS (default 10 minutes) stops its
// spares.
type SessionWarmParams struct {
	Harness        string            `json:"harness" rpc:"required"`
	Cwd            string            `json:"cwd" rpc:"required"`
	Model          string            `json:"model,omitempty"`
	Effort         string            `json:"effort,omitempty"`
	HarnessOptions []string          `json:"harness_options,omitempty"`
	AutoApprove    *bool             `json:"auto_approve,omitempty"`
	Environment    map[string]string `json:"environment,omitempty"`
	Rows           int               `json:"rows,omitempty"`
	Cols           int               `json:"cols,omitempty"`
	Spares         int               `json:"spares"`
	IdleMS         int64             `json:"idle_ms,omitempty"`
}

// SessionWarmResult is the result of session.warm: the shape's key (a
// digest of its launch fields and environment), how many spares it
// keeps, how many are ready or starting now, the resident memory of the
// ready ones' process groups (and their leaders' pids), and why the last
// spare launch failed, if it did.
type SessionWarmResult struct {
	Shape    string `json:"shape"`
	Spares   int    `json:"spares"`
	Ready    int    `json:"ready"`
	Starting int    `json:"starting"`
	RSSBytes int64  `json:"rss_bytes"`
	// Pids are the process ids of the ready spares\' harnesses.
	Pids      []int  `json:"pids,omitempty"`
	IdleMS    int64  `json:"idle_ms"`
	LastError string `json:"last_error,omitempty"`
}

// SessionRestartParams are the parameters of session.restart.
type SessionRestartParams struct {
	Session          string            `json:"session" rpc:"required"`
	StartupTimeoutMS int64             `json:"startup_timeout_ms,omitempty"`
	Environment      map[string]string `json:"environment,omitempty"`
	Rows             int               `json:"rows,omitempty"`
	Cols             int               `json:"cols,omitempty"`
}

// SessionSendParams are the parameters of session.send. With Resume, the
// launch options of session.create are accepted too, for relaunching a
// Session this daemon does not hold.
type SessionSendParams struct {
	Session          string            `json:"session" rpc:"required"`
	Prompt           string            `json:"prompt" rpc:"required"`
	RequestID        string            `json:"request_id" rpc:"required"`
	Resume           bool              `json:"resume,omitempty"`
	Title            string            `json:"title,omitempty"`
	Alias            string            `json:"alias,omitempty"`
	Cwd              string            `json:"cwd,omitempty"`
	Model            string            `json:"model,omitempty"`
	Effort           string            `json:"effort,omitempty"`
	HarnessOptions   []string          `json:"harness_options,omitempty"`
	AutoApprove      *bool             `json:"auto_approve,omitempty"`
	StartupTimeoutMS int64             `json:"startup_timeout_ms,omitempty"`
	Environment      map[string]string `json:"environment,omitempty"`
	Rows             int               `json:"rows,omitempty"`
	Cols             int               `json:"cols,omitempty"`
	CorrelationID    string            `json:"correlation_id,omitempty"`
	// Steer (an extension) types the prompt into the running turn of
	// execution Steer.ExecutionSeq instead of starting a new execution:
	// accepted only while that execution is the active one, and only for
	// a harness whose capabilities.steering is true. See docs/rpc.md,
	// "Steering and queueing".
	Steer *SteerOption `json:"steer,omitempty"`
	// Queue (an extension) holds the prompt while an execution is
	// active and runs it as the next execution once that one ends (at
	// most MaxQueued per Session); on an idle Session it is a plain send.
	Queue bool `json:"queue,omitempty"`
}

// SteerOption names the execution a steer is for: the one the sender saw
// running. Any other (an ended one, a later one) is refused and nothing
// is typed.
type SteerOption struct {
	ExecutionSeq uint64 `json:"execution_seq"`
}

// MaxQueued bounds the queued sends (session.send queue:true) a Session
// holds at once.
const MaxQueued = 4

// QueuedSend is a send waiting behind the active execution
// (session.send queue:true): the execution_seq it will run as, its
// prompt's first bytes (PromptTruncated when cut) and when it was queued.
type QueuedSend struct {
	ExecutionSeq    uint64 `json:"execution_seq"`
	Prompt          string `json:"prompt"`
	PromptTruncated bool   `json:"prompt_truncated,omitempty"`
	QueuedAtMS      int64  `json:"queued_at_ms"`
}

// SessionFetchParams are the parameters of session.fetch. Cursor and Screen
// keep their raw JSON because each accepts two spellings (see ParseCursor
// and ParseScreen).
type SessionFetchParams struct {
	Session  string          `json:"session,omitempty"`
	All      bool            `json:"all,omitempty"`
	Cursor   json.RawMessage `json:"cursor,omitempty"`
	WaitMS   int64           `json:"wait_ms,omitempty"`
	Until    string          `json:"until,omitempty"`
	Screen   json.RawMessage `json:"screen,omitempty"`
	MaxBytes int             `json:"max_bytes,omitempty"`
	// AfterExecution (an extension of the seed) starts from the retained
	// results after this execution_seq instead of a cursor.
	AfterExecution *uint64 `json:"after_execution,omitempty"`
	// ToolCalls (an extension) carries each result's tool_calls on its
	// first chunk; without it no result in the document has them.
	ToolCalls bool `json:"tool_calls,omitempty"`
}

// SessionCancelParams are the parameters of session.cancel.
type SessionCancelParams struct {
	Session   string `json:"session" rpc:"required"`
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
}

// SessionListParams are the parameters of session.list.
type SessionListParams struct {
	All bool `json:"all,omitempty"`
}

// SessionReadParams are the parameters of session.read.
type SessionReadParams struct {
	Session string `json:"session" rpc:"required"`
}

// SessionStopParams are the parameters of session.stop.
type SessionStopParams struct {
	Session string `json:"session" rpc:"required"`
	Force   bool   `json:"force,omitempty"`
	// RemoveWorktree (an extension) also removes the Session's worktree
	// and deletes its branch; a worktree with uncommitted or untracked
	// changes is refused unless Force.
	RemoveWorktree bool `json:"remove_worktree,omitempty"`
}

// EventReadParams are the parameters of event.read and event.subscribe.
// After is a global event seq; events with a greater seq are returned.
type EventReadParams struct {
	Session string  `json:"session,omitempty"`
	After   *uint64 `json:"after,omitempty"`
	// ToolCalls (an extension) adds tool.call events to the lifecycle
	// events, in the order they were recorded. ToolAfter is a tool_seq:
	// tool calls with a greater one are returned; without it, those
	// recorded after the lifecycle event After (event.subscribe without
	// After: from now).
	ToolCalls bool    `json:"tool_calls,omitempty"`
	ToolAfter *uint64 `json:"tool_after,omitempty"`
}

// ScrollbackReadParams are the parameters of scrollback.read.
type ScrollbackReadParams struct {
	Session string `json:"session" rpc:"required"`
	Lines   int    `json:"lines,omitempty"`
	Before  string `json:"before,omitempty"`
}

// TranscriptReadRawParams are the parameters of transcript.read_raw.
type TranscriptReadRawParams struct {
	Session    string `json:"session" rpc:"required"`
	After      int64  `json:"after,omitempty"`
	LimitBytes int    `json:"limit_bytes,omitempty"`
}

// ModelListParams are the parameters of model.list.
type ModelListParams struct {
	Harness       string `json:"harness" rpc:"required"`
	IncludeHidden bool   `json:"include_hidden,omitempty"`
}

// ProfileListParams are the parameters of profile.list (none).
type ProfileListParams struct{}

// HarnessListParams are the parameters of harness.list. Environment (an
// extension, optional) is the caller's launch environment, as
// session.create sends it: binaries are then located, and their versions
// probed, as a create from that caller would; without it, from the
// daemon's own environment.
type HarnessListParams struct {
	Harness     string            `json:"harness,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
}

// ---- Results -------------------------------------------------------------

// Session is the public Session snapshot. Internal identities (launch ids,
// provider turn ids, execution rows) never appear here.
type Session struct {
	ID          string `json:"id"`
	Alias       string `json:"alias,omitempty"`
	Title       string `json:"title"`
	Harness     string `json:"harness"`
	Cwd         string `json:"cwd"`
	Model       string `json:"model,omitempty"`
	Effort      string `json:"effort,omitempty"`
	State       string `json:"state"`
	CreatedAtMS int64  `json:"created_at_ms"`
	UpdatedAtMS int64  `json:"updated_at_ms"`
	// BusyForMS and PTYQuietForMS are present only when State is busy.
	BusyForMS     *int64 `json:"busy_for_ms,omitempty"`
	PTYQuietForMS *int64 `json:"pty_quiet_for_ms,omitempty"`
	// Pending is the request the Session is blocked on, present only
	// while it is blocked on one dlgt knows (a documented extension:
	// docs/rpc.md, "Pending requests"); session.respond answers it.
	Pending *Pending `json:"pending,omitempty"`
	// Worktree (an extension) is the git worktree the Session runs in.
	Worktree *Worktree `json:"worktree,omitempty"`
	// Warm (an extension) is set when the Session's create claimed a
	// warm spare (session.warm) instead of starting its harness.
	Warm bool `json:"warm,omitempty"`
	// ActiveExecution (an extension) is the execution_seq of the
	// execution running now (absent when none is): what session.send
	// steer names.
	ActiveExecution uint64 `json:"active_execution,omitempty"`
	// Queued (an extension) are the sends waiting behind the active
	// execution (session.send queue:true), oldest first.
	Queued []QueuedSend `json:"queued,omitempty"`
}

// Pending request kinds.
const (
	PendingPermission = "permission"
	PendingQuestion   = "question"
)

// Pending is what a blocked Session asks: a tool permission (Tool and
// Input) or a question (Question and Options). Input and Question are the
// harness's untrusted text, bounded and stripped of control characters.
type Pending struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Tool      string          `json:"tool,omitempty"`
	Input     string          `json:"input,omitempty"`
	Question  string          `json:"question,omitempty"`
	Options   []PendingOption `json:"options,omitempty"`
	AskedAtMS int64           `json:"asked_at_ms"`
}

// PendingOption is one answer a pending request offers.
type PendingOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Decisions of session.respond.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// SessionRespondParams are the parameters of session.respond: Decision
// for a permission (Message only with deny), Option or Text for a
// question. PendingID, when given, must name the current request.
type SessionRespondParams struct {
	Session   string `json:"session" rpc:"required"`
	PendingID string `json:"pending_id,omitempty"`
	Decision  string `json:"decision,omitempty"`
	Message   string `json:"message,omitempty"`
	Option    string `json:"option,omitempty"`
	Text      string `json:"text,omitempty"`
	RequestID string `json:"request_id" rpc:"required"`
}

// SessionRespondResult is the result of session.respond.
type SessionRespondResult struct {
	Session   Session `json:"session"`
	PendingID string  `json:"pending_id"`
	Decision  string  `json:"decision,omitempty"`
	Option    string  `json:"option,omitempty"`
	Replayed  bool    `json:"replayed,omitempty"`
}

// ResultError is the structured error of a non-completed execution.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Result is a retained execution result. FinalTextOffset and
// FinalTextComplete appear only in fetch documents, where long texts are
// chunked. Usage is null or a Usage object, kept as raw JSON (decode it
// with DecodeUsage).
type Result struct {
	ExecutionSeq      uint64          `json:"execution_seq"`
	Status            string          `json:"status"`
	FinalText         *string         `json:"final_text"`
	FinalTextSource   string          `json:"final_text_source"`
	FinalTextOffset   *int            `json:"final_text_offset,omitempty"`
	FinalTextComplete *bool           `json:"final_text_complete,omitempty"`
	Error             *ResultError    `json:"error"`
	StartedAtMS       int64           `json:"started_at_ms"`
	CompletedAtMS     int64           `json:"completed_at_ms"`
	Usage             json.RawMessage `json:"usage"`
	// Diff (an extension) summarizes a worktree Session's changes
	// against its base commit when the execution ended.
	Diff *DiffSummary `json:"diff,omitempty"`
	// Prompt (an extension) is the execution's prompt byte for byte: the
	// prompt of session.create or session.send, or the one the harness's
	// prompt hook reported for a turn typed at the terminal. It is absent
	// for an execution the daemon knows no prompt of (one interrupted by a
	// daemon crash, or stored by an older daemon). session.fetch carries
	// it on a result's first chunk only (final_text_offset 0), taking at
	// most half the room left in the response: a longer prompt is cut at a
	// UTF-8 boundary with PromptTruncated set, and under a budget too tight
	// for any of it the prompt is left out. session.read carries it whole.
	Prompt *string `json:"prompt,omitempty"`
	// PromptTruncated (an extension): Prompt is only the prompt's start.
	PromptTruncated bool `json:"prompt_truncated,omitempty"`
	// StopReason (an extension) is why the turn's model stopped, as the
	// harness's own transcript recorded it, when it says more than a
	// normal end: StopMaxTokens or StopRefusal. Absent otherwise (a turn
	// that ended normally, or a harness whose transcript keeps no stop
	// reason).
	StopReason string `json:"stop_reason,omitempty"`
	// ToolCalls (an extension) are the tool calls the execution ran, in
	// the order they started, each with its last status: at most
	// MaxResultToolCalls, each input bounded by MaxResultToolInput.
	// session.read and the results of session.cancel and session.stop
	// carry them whole; session.fetch only when asked (tool_calls), on a
	// result's first chunk, within a quarter of the room left. Absent for
	// a turn with none, or stored by a daemon older than the field.
	ToolCalls []ResultToolCall `json:"tool_calls,omitempty"`
	// ToolCallsTruncated (an extension): ToolCalls holds only the first
	// of the turn's calls (over MaxResultToolCalls, or cut by a fetch's
	// room).
	ToolCallsTruncated bool `json:"tool_calls_truncated,omitempty"`
}

// Bounds of a result's tool_calls.
const (
	// MaxResultToolCalls bounds the tool calls a result keeps.
	MaxResultToolCalls = 64
	// MaxResultToolInput bounds each kept call's input: a longer one is
	// a JSON string of its first MaxResultToolInput bytes of compact
	// JSON, flagged input_truncated.
	MaxResultToolInput = 2048
)

// ResultToolCall is one tool call of a result: the tool.call events of
// the call folded into its last status (started: no end was seen before
// the result, e.g. a call declined at the harness's dialog). The output
// is not kept.
type ResultToolCall struct {
	ID             string          `json:"id"`
	Tool           string          `json:"tool"`
	Command        string          `json:"command,omitempty"`
	Status         string          `json:"status"`
	Input          json.RawMessage `json:"input,omitempty"`
	InputTruncated bool            `json:"input_truncated,omitempty"`
	Error          string          `json:"error,omitempty"`
}

// A result's stop_reason values.
const (
	// StopMaxTokens: the model's answer was cut by its output token limit.
	StopMaxTokens = "max_tokens"
	// StopRefusal: the model (or the provider's safety system) refused.
	StopRefusal = "refusal"
)

// Usage is what one execution cost, summed over the model requests its
// turn made as the harness recorded them in the Session's own transcript
// (Claude Code's per-message usage, Codex's per-response token records),
// in one shape for both harnesses:
//
//   - InputTokens: input tokens neither read from nor written to the
//     prompt cache (Codex's input_tokens counts its cached tokens too; they
//     are taken out here);
//   - CacheReadInputTokens, CacheCreationInputTokens: input read from and
//     written to the prompt cache;
//   - OutputTokens: generated tokens, reasoning included;
//   - ReasoningOutputTokens: the part of OutputTokens spent reasoning
//     (Claude's thinking tokens, Codex's reasoning_output_tokens);
//   - TotalTokens: InputTokens + CacheReadInputTokens +
//     CacheCreationInputTokens + OutputTokens;
//   - Requests: the model requests (responses) counted.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	ReasoningOutputTokens    int64 `json:"reasoning_output_tokens"`
	TotalTokens              int64 `json:"total_tokens"`
	Requests                 int64 `json:"requests"`
}

// JSON is u as a result's usage value: null for a nil Usage.
func (u *Usage) JSON() json.RawMessage {
	if u == nil {
		return json.RawMessage("null")
	}
	data, _ := json.Marshal(u)
	return data
}

// DecodeUsage reads a result's usage value: nil for null or absent.
func DecodeUsage(raw json.RawMessage) (*Usage, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var u Usage
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("usage is not a usage object: %v", err)
	}
	return &u, nil
}

// Event is a normalized lifecycle event.
type Event struct {
	SchemaVersion int    `json:"schema_version"`
	Seq           uint64 `json:"seq"`
	Type          string `json:"type"`
	SessionID     string `json:"session_id,omitempty"`
	ExecutionSeq  uint64 `json:"execution_seq,omitempty"`
	Attempt       int    `json:"attempt,omitempty"`
	Reason        string `json:"reason,omitempty"`
	ResultStatus  string `json:"result_status,omitempty"`
	Tool          string `json:"tool,omitempty"`
	Command       string `json:"command,omitempty"`
	// ToolSeq and ToolCall are a tool.call event's (an extension,
	// EventToolCall): its Seq is the lifecycle event it follows, ToolSeq
	// its own position among tool calls.
	ToolSeq  uint64         `json:"tool_seq,omitempty"`
	ToolCall *ToolCallEvent `json:"tool_call,omitempty"`
}

// ToolCallEvent is the call a tool.call event reports. ID is the
// harness's id of the call (one dlgt minted when the harness gives none),
// the same in the call's started and ended events. Input and Output are
// the hook's JSON, bounded by MaxToolRaw.
type ToolCallEvent struct {
	ID              string          `json:"id"`
	Status          string          `json:"status"`
	Input           json.RawMessage `json:"input,omitempty"`
	InputTruncated  bool            `json:"input_truncated,omitempty"`
	Output          json.RawMessage `json:"output,omitempty"`
	OutputTruncated bool            `json:"output_truncated,omitempty"`
	Error           string          `json:"error,omitempty"`
}

// Action is a suggested follow-up request (recovery guidance only).
type Action struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// Receipt is the result of session.create and session.send.
type Receipt struct {
	Session      Session `json:"session"`
	ExecutionSeq uint64  `json:"execution_seq"`
	Cursor       string  `json:"cursor"`
	Submission   string  `json:"submission"`
	Replayed     bool    `json:"replayed,omitempty"`
	// Steered (an extension): the prompt was typed into the running
	// execution ExecutionSeq (session.send steer); its result is that
	// execution's.
	Steered bool `json:"steered,omitempty"`
	// Queued (an extension): the prompt waits behind the active
	// execution and runs as ExecutionSeq once it ends; the cursor skips
	// the active execution's result, so until:"result" from it waits for
	// this one's.
	Queued bool    `json:"queued,omitempty"`
	Hint   string  `json:"hint,omitempty"`
	Action *Action `json:"action,omitempty"`
}

// Submission values of a receipt.
const (
	SubmissionConfirmed = "confirmed"
	SubmissionPending   = "pending"
)

// SessionResult is the result of session.restart, session.stop and
// session.cancel.
type SessionResult struct {
	Session Session `json:"session"`
	Cursor  string  `json:"cursor,omitempty"`
	Result  *Result `json:"result,omitempty"`
}

// SessionReadResult is the result of session.read.
type SessionReadResult struct {
	Session Session `json:"session"`
	Result  *Result `json:"result"`
}

// SessionListResult is the result of session.list.
type SessionListResult struct {
	Sessions []Session `json:"sessions"`
}

// Runtime identifies the daemon lifetime that produced a fetch document.
type Runtime struct {
	Version    string `json:"version"`
	InstanceID string `json:"instance_id"`
}

// Gap reports a retention overrun.
type Gap struct {
	Component string `json:"component"`
	Reason    string `json:"reason"`
}

// Fragment is a piece of a stable row split across responses.
type Fragment struct {
	RowID    uint64 `json:"row_id"`
	Offset   int    `json:"offset"`
	Text     string `json:"text"`
	Complete bool   `json:"complete"`
}

// Screen is the screen delta of one Session in a fetch document.
type Screen struct {
	Epoch          uint64    `json:"epoch"`
	Reset          bool      `json:"reset"`
	ResetReason    *string   `json:"reset_reason"`
	FragmentBefore *Fragment `json:"fragment_before,omitempty"`
	Stable         []string  `json:"stable"`
	FragmentAfter  *Fragment `json:"fragment_after,omitempty"`
	Live           []string  `json:"live"`
	LiveTruncated  bool      `json:"live_truncated"`
}

// FetchSession is one Session's bucket in a fetch document.
type FetchSession struct {
	Session Session  `json:"session"`
	Events  []Event  `json:"events"`
	Results []Result `json:"results"`
	Screen  *Screen  `json:"screen,omitempty"`
	Gaps    []Gap    `json:"gaps"`
}

// FetchDocument is the result of session.fetch.
type FetchDocument struct {
	SchemaVersion int            `json:"schema_version"`
	Runtime       Runtime        `json:"runtime"`
	Reason        string         `json:"reason"`
	HasMore       bool           `json:"has_more"`
	Gaps          []Gap          `json:"gaps"`
	Cursor        string         `json:"cursor"`
	Sessions      []FetchSession `json:"sessions"`

	wire []byte // set by Seal
}

// Seal encodes d once, for every response that carries it: long polls
// woken by one change return the same document, and encoding it per
// response was most of the cost of waking a thousand of them. d must not
// change after Seal.
func (d *FetchDocument) Seal() {
	if b, err := marshalCompact(d); err == nil {
		d.wire = b
	}
}

// ScreenSize is a terminal size.
type ScreenSize struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// ScrollbackPage is the result of scrollback.read.
type ScrollbackPage struct {
	SessionID string     `json:"session_id"`
	Screen    ScreenSize `json:"screen"`
	Lines     []string   `json:"lines"`
	Truncated bool       `json:"truncated"`
	Before    string     `json:"before,omitempty"`
	// AlternateScreen is dlgt's extension: the harness draws on the
	// alternate screen now, so what it shows there never becomes history
	// (the seed's rule) and the page's history ends where it switched.
	AlternateScreen bool `json:"alternate_screen,omitempty"`
}

// RawPage is the result of transcript.read_raw.
type RawPage struct {
	SessionID  string `json:"session_id"`
	DataBase64 string `json:"data_base64"`
	ByteLen    int    `json:"byte_len"`
	Start      int64  `json:"start"`
	NextAfter  int64  `json:"next_after"`
	HasMore    bool   `json:"has_more"`
}

// Model is one entry of model.list.
type Model struct {
	ID          string   `json:"id"`
	DisplayName string   `json:"display_name,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	Default     bool     `json:"default,omitempty"`
	Hidden      bool     `json:"hidden,omitempty"`
}

// ModelListResult is the result of model.list.
type ModelListResult struct {
	Harness string  `json:"harness"`
	Source  string  `json:"source"`
	Models  []Model `json:"models"`
}

// Profile is one client-side launch preset.
type Profile struct {
	Name           string   `json:"name"`
	Harness        string   `json:"harness,omitempty"`
	Model          string   `json:"model,omitempty"`
	Effort         string   `json:"effort,omitempty"`
	HarnessOptions []string `json:"harness_options,omitempty"`
	// EnvironmentKeys names the variables a profile adds; values are never
	// listed because they may be secrets.
	EnvironmentKeys []string `json:"environment_keys,omitempty"`
	// Worktree: the profile's Sessions run in a git worktree of their own
	// (an extension).
	Worktree bool `json:"worktree,omitempty"`
	// Warm is how many warm spares the profile keeps (session.warm, an
	// extension).
	Warm int `json:"warm,omitempty"`
}

// ProfileListResult is the result of profile.list.
type ProfileListResult struct {
	Profiles []Profile `json:"profiles"`
}

// HarnessCapabilities says what a harness supports.
type HarnessCapabilities struct {
	Resume   bool `json:"resume"`
	Cancel   bool `json:"cancel"`
	Steering bool `json:"steering"`
	// Queue (an extension): session.send queue:true holds a prompt for
	// the next execution. dlgt queues itself, so every harness has it.
	Queue          bool     `json:"queue"`
	HarnessOptions bool     `json:"harness_options"`
	AutoApprove    bool     `json:"auto_approve"`
	EffortLevels   []string `json:"effort_levels"`
	Blocking       bool     `json:"blocking"`
}

// HarnessInfo is one entry of harness.list.
type HarnessInfo struct {
	Name            string              `json:"name"`
	Binary          string              `json:"binary"`
	Available       bool                `json:"available"`
	Version         string              `json:"version,omitempty"`
	TestedVersion   string              `json:"tested_version"`
	LifecycleSource string              `json:"lifecycle_source"`
	Capabilities    HarnessCapabilities `json:"capabilities"`
	// ScreenMode is dlgt's extension: "inline" when dlgt launches the TUI
	// on the main screen (its conversation scrolls into stable rows),
	// "alternate" when it draws on the alternate screen (no stable rows).
	ScreenMode string `json:"screen_mode,omitempty"`
}

// Screen modes of HarnessInfo.ScreenMode.
const (
	ScreenInline    = "inline"
	ScreenAlternate = "alternate"
)

// HarnessListResult is the result of harness.list. Environment (an
// extension) says whose environment located the binaries:
// HarnessEnvCaller or HarnessEnvDaemon.
type HarnessListResult struct {
	Harnesses   []HarnessInfo `json:"harnesses"`
	Environment string        `json:"environment,omitempty"`
}

// HarnessListResult.Environment values.
const (
	HarnessEnvCaller = "caller"
	HarnessEnvDaemon = "daemon"
)

// SubscribeAck is the initial response of event.subscribe; events follow,
// one per line.
type SubscribeAck struct {
	Subscribed bool   `json:"subscribed"`
	After      uint64 `json:"after"`
	// ToolAfter is the tool_seq tool.call events follow (tool_calls only).
	ToolAfter *uint64 `json:"tool_after,omitempty"`
}

// HookParams are the parameters of the internal hook callback: the hook's
// stdin JSON, keyed by the launch that injected the hook.
type HookParams struct {
	LaunchID string          `json:"launch_id" rpc:"required"`
	Event    string          `json:"event" rpc:"required"`
	Payload  json.RawMessage `json:"payload" rpc:"required"`
}

// HookDecisionParams are the parameters of internal.hook.decision: the
// hook forwarder of a request the daemon made pending (its internal.hook
// answer named PendingID) waits up to WaitMS for an answer.
type HookDecisionParams struct {
	LaunchID  string `json:"launch_id" rpc:"required"`
	PendingID string `json:"pending_id" rpc:"required"`
	WaitMS    int64  `json:"wait_ms,omitempty"`
}

// HookDecision is the result of internal.hook.decision: Output is what
// the hook prints on stdout (the harness's decision format), empty when
// nobody answered (the harness's own dialog stays for a person).
type HookDecision struct {
	Output string `json:"output,omitempty"`
	State  string `json:"state"` // answered, withdrawn, waiting
}
