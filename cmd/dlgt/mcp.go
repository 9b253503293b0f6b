package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The MCP server: `dlgt mcp` serves the daemon's delegation methods as MCP
// tools on stdio, for a leader agent whose harness spawns it. It is a client
// of the daemon like any other (it starts one when none runs) and each tool
// is a thin typed wrapper of one RPC with the same idempotency rules.

// mcpServerName is the name the snippets register the server under; the
// leader's model sees mcp__dlgt__<tool>.
const mcpServerName = "dlgt"

// Waits are bounded below what the harnesses tolerate for one tool call:
// Codex cuts a call at 300 s, and Claude Code's TUI moves a call still
// running at 120 s to the background, which splits the leader's turn.
const (
	mcpWaitDefault = 100 * time.Second
	mcpWaitCeiling = 280 * time.Second
)

// mcpFetchBytes is the fetch size the wait tool asks for: the contract's
// ceiling, so a long final_text arrives in as few pieces as possible.
const mcpFetchBytes = 256 << 10

// mcpTextMax bounds the final_text one wait assembles (a result's text is
// at most what the daemon retains; this keeps a malformed stream bounded).
const mcpTextMax = 8 << 20

// mcpInstructions is the server's instructions, naming the registry's
// harnesses.
func mcpInstructions(reg []harness.Descriptor) string {
	names := make([]string, len(reg))
	for i, d := range reg {
		names[i] = d.DisplayName
	}
	return "dlgt delegates work to another coding agent (" + orList(names) + ") running in its own Session.\n" + mcpInstructionsRest
}

const mcpInstructionsRest = `Call delegate with the task and a request_id you choose once and reuse on every retry of the same task; keep the session id and cursor it returns.
Call wait with that session and cursor until it reports a result (completed, failed, canceled or interrupted); when it returns "still running", call wait again with the new cursor.
Follow up in the same Session with send, and stop the Session when the work is done.`

func newMCPCommand(e *env) *cobra.Command {
	var waitMax time.Duration
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve dlgt to a leader agent as an MCP server on stdio",
		Long: `Serve dlgt's delegation methods as MCP tools on stdin/stdout.

A leader agent's harness starts this command (see "dlgt mcp config" and
"dlgt mcp install"). Tools:
delegate (session.create), send (session.send), wait (session.fetch until a
result, bounded by --wait-max), read (session.read), list (session.list),
cancel (session.cancel), stop (session.stop). wait, read and list are marked
read-only. The daemon is started when none runs, as for every client command.

--wait-max bounds one wait call; keep it under the leader harness's own tool
limits (Claude Code backgrounds a call still running after 120 s; Codex cuts
one at 300 s).`,
		Example: `  mapfile -t args < <(dlgt mcp config --harness claude --approve) && claude "${args[@]}"
  dlgt mcp --wait-max 60s   # what the leader's harness runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if waitMax < time.Second || waitMax > mcpWaitCeiling {
				return fmt.Errorf("--wait-max must be between 1s and %s", mcpWaitCeiling)
			}
			srv := newMCPServer(e, waitMax)
			in, _ := e.stdin.(*os.File)
			out, _ := e.stdout.(*os.File)
			var t mcp.Transport = &mcp.StdioTransport{}
			if in != os.Stdin || out != os.Stdout {
				t = &mcp.IOTransport{Reader: readCloser{e.stdin}, Writer: nopWriteCloser{e.stdout}}
			}
			err := srv.Run(cmd.Context(), t)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().DurationVar(&waitMax, "wait-max", mcpWaitDefault, "longest a single wait call blocks before returning the cursor to continue")
	cmd.AddCommand(newMCPConfigCommand(e), newMCPInstallCommand(e))
	return cmd
}

// mcpTools holds what every tool handler needs.
type mcpTools struct {
	e       *env
	waitMax time.Duration
}

// newMCPServer builds the MCP server and registers the tools.
func newMCPServer(e *env, waitMax time.Duration) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: mcpServerName, Title: "dlgt", Version: daemon.Version},
		&mcp.ServerOptions{Instructions: mcpInstructions(e.registry())})
	t := &mcpTools{e: e, waitMax: waitMax}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "delegate", Title: "Delegate a task",
		Description: "Start a new Session of another coding agent (harness " + harnessList(e.registry()) + ") and submit the task as its first prompt. " +
			"Give a request_id (or a key to derive one) chosen before the first attempt: repeating the call with the same id and prompt returns the same receipt and never runs the task twice. " +
			"Returns the Session id and a cursor for wait.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)}}, t.delegate)
	mcp.AddTool(s, &mcp.Tool{Name: "send", Title: "Send a follow-up",
		Description: "Submit a follow-up prompt to an idle Session (same conversation); with resume true, a stopped or failed Session is relaunched first. Same request_id rules as delegate. Returns a cursor for wait.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)}}, t.send)
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Title: "Wait for the result",
		Description: fmt.Sprintf("Wait (at most %s per call) for the Session's current execution to end and return its result: status, final text, error and token usage. "+
			"When the deadline comes first it returns status \"running\" and a cursor: call wait again with that cursor. Nothing is returned twice.", t.waitMax),
		Annotations: readOnly}, t.wait)
	mcp.AddTool(s, &mcp.Tool{Name: "read", Title: "Read a Session",
		Description: "Return a Session's state and its latest result.",
		Annotations: readOnly}, t.read)
	mcp.AddTool(s, &mcp.Tool{Name: "list", Title: "List Sessions",
		Description: "List the daemon's Sessions (all=true includes stopped and failed ones).",
		Annotations: readOnly}, t.list)
	mcp.AddTool(s, &mcp.Tool{Name: "cancel", Title: "Cancel the running execution",
		Description: "Interrupt the Session's running execution; the Session stays open for follow-ups.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.cancel)
	mcp.AddTool(s, &mcp.Tool{Name: "stop", Title: "Stop a Session",
		Description: "Stop the Session's harness when the work is done. A running execution is refused unless force is true.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, t.stop)
	return s
}

func ptr[T any](v T) *T { return &v }

// readCloser and nopWriteCloser adapt the env's streams to the SDK's
// IOTransport (tests run the server on pipes).
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

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
}

type sendIn struct {
	Session   string `json:"session" jsonschema:"Session id (HARNESS:provider-id, as delegate returned it) or alias"`
	Prompt    string `json:"prompt" jsonschema:"the follow-up prompt"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key, as for delegate (give this or key)"`
	Key       string `json:"key,omitempty" jsonschema:"a stable name for this follow-up; the request_id is derived from it"`
	Resume    bool   `json:"resume,omitempty" jsonschema:"relaunch a stopped or failed Session in its conversation, then send"`
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

type stopIn struct {
	Session string `json:"session" jsonschema:"Session id or alias"`
	Force   bool   `json:"force,omitempty" jsonschema:"stop even while an execution is running (it ends as interrupted)"`
}

// ---- handlers --------------------------------------------------------------

func (t *mcpTools) delegate(ctx context.Context, _ *mcp.CallToolRequest, in delegateIn) (*mcp.CallToolResult, any, error) {
	if in.Prompt == "" {
		return toolError("delegate", rpc.InvalidField("prompt", "is required")), nil, nil
	}
	reqID, err := requestID(in.RequestID, in.Key, "delegate")
	if err != nil {
		return toolError("delegate", err), nil, nil
	}
	env := t.e.clientEnvironment()
	harness, model, effort := in.Harness, in.Model, in.Effort
	var harnessOptions []string
	if in.Profile != "" {
		profiles, err := t.e.loadProfiles()
		if err != nil {
			return toolError("delegate", err), nil, nil
		}
		p, ok := profiles[in.Profile]
		if !ok {
			return toolError("delegate", rpc.Errorf(rpc.CodeNotFound, "profile %q is not defined", in.Profile)), nil, nil
		}
		for k, v := range p.Environment {
			env[k] = v
		}
		if harness == "" {
			harness = p.Harness
		}
		if model == "" {
			model = p.Model
		}
		if effort == "" {
			effort = p.Effort
		}
		harnessOptions = p.HarnessOptions
	}
	if harness == "" {
		return toolError("delegate", rpc.InvalidField("harness", "is required: %s", harnessList(t.e.registry()))), nil, nil
	}
	cwd, err := toolCwd(in.Cwd, t.e.remote())
	if err != nil {
		return toolError("delegate", err), nil, nil
	}
	title := in.Title
	if title == "" {
		title = titleFrom(in.Prompt)
	}
	var r rpc.Receipt
	err = t.call(ctx, "", rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: title, Alias: in.Alias, Harness: harness, Cwd: cwd, Model: model, Effort: effort,
		HarnessOptions: harnessOptions, Prompt: in.Prompt, RequestID: reqID, Environment: env,
	}, &r)
	if err != nil {
		return toolError("delegate", err), nil, nil
	}
	return receiptResult("Delegated to", reqID, &r), nil, nil
}

func (t *mcpTools) send(ctx context.Context, _ *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, any, error) {
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
	var r rpc.Receipt
	if err := t.call(ctx, in.Session, rpc.MethodSessionSend, rpc.SessionSendParams{
		Session: in.Session, Prompt: in.Prompt, RequestID: reqID, Resume: in.Resume,
	}, &r); err != nil {
		return toolError("send", err), nil, nil
	}
	return receiptResult("Sent to", reqID, &r), nil, nil
}

// waitOut is the structured result of wait.
type waitOut struct {
	Session rpc.Session  `json:"session"`
	Status  string       `json:"status"` // running, blocked, or the last result's status
	Cursor  string       `json:"cursor"`
	Results []rpc.Result `json:"results"`
	Gaps    []rpc.Gap    `json:"gaps,omitempty"`
}

func (t *mcpTools) wait(ctx context.Context, _ *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("wait", rpc.InvalidField("session", "is required")), nil, nil
	}
	bound := t.waitMax
	if in.TimeoutSeconds < 0 {
		return toolError("wait", rpc.InvalidField("timeout_seconds", "must not be negative")), nil, nil
	}
	if in.TimeoutSeconds > 0 && time.Duration(in.TimeoutSeconds)*time.Second < bound {
		bound = time.Duration(in.TimeoutSeconds) * time.Second
	}
	deadline := time.Now().Add(bound)
	out := waitOut{Cursor: in.Cursor}
	// Pieces of a chunked final_text, by execution, until complete.
	texts := map[uint64]*strings.Builder{}
	var order []uint64
	byExec := map[uint64]rpc.Result{}
	for {
		p := rpc.SessionFetchParams{Session: in.Session, Until: "result", Screen: json.RawMessage("false"), MaxBytes: mcpFetchBytes}
		if out.Cursor != "" {
			p.Cursor, _ = json.Marshal(out.Cursor)
		}
		if left := time.Until(deadline); left > 0 {
			p.WaitMS = left.Milliseconds()
		}
		var doc rpc.FetchDocument
		if err := t.call(ctx, in.Session, rpc.MethodSessionFetch, p, &doc); err != nil {
			if len(order) > 0 {
				break // report what was read; the cursor replays the rest
			}
			return toolError("wait", err), nil, nil
		}
		out.Cursor = doc.Cursor
		out.Gaps = append(out.Gaps, doc.Gaps...)
		partial := false
		for _, fs := range doc.Sessions {
			out.Session = fs.Session
			out.Gaps = append(out.Gaps, fs.Gaps...)
			for _, r := range fs.Results {
				b, seen := texts[r.ExecutionSeq]
				if !seen {
					b = &strings.Builder{}
					texts[r.ExecutionSeq] = b
					order = append(order, r.ExecutionSeq)
				}
				if r.FinalText != nil && b.Len() < mcpTextMax {
					b.WriteString(*r.FinalText)
				}
				if r.FinalTextComplete != nil && !*r.FinalTextComplete {
					partial = true
				}
				byExec[r.ExecutionSeq] = r
			}
		}
		switch doc.Reason {
		case rpc.ReasonPageFull:
			if time.Now().Before(deadline) || partial {
				continue // more is waiting at the new cursor
			}
		case rpc.ReasonResult, rpc.ReasonBlocked, rpc.ReasonTimeout, rpc.ReasonGap, rpc.ReasonSnapshot:
		default:
			if time.Now().Before(deadline) && len(order) == 0 {
				continue // a change that is not a result yet
			}
		}
		if doc.Reason == rpc.ReasonBlocked {
			out.Status = rpc.StateBlocked
		}
		break
	}
	for _, seq := range order {
		r := byExec[seq]
		if r.FinalText != nil {
			s := texts[seq].String()
			r.FinalText = &s
		}
		r.FinalTextOffset, r.FinalTextComplete = nil, nil
		out.Results = append(out.Results, r)
	}
	if out.Results == nil {
		out.Results = []rpc.Result{}
	}
	if out.Status == "" {
		switch {
		case len(out.Results) > 0:
			out.Status = out.Results[len(out.Results)-1].Status
		case out.Session.State == rpc.StateBlocked:
			out.Status = rpc.StateBlocked
		default:
			out.Status = "running"
		}
	}
	return withJSON(textResult(waitText(&out)), out), nil, nil
}

func (t *mcpTools) read(ctx context.Context, _ *mcp.CallToolRequest, in sessionIn) (*mcp.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("read", rpc.InvalidField("session", "is required")), nil, nil
	}
	var r rpc.SessionReadResult
	if err := t.call(ctx, in.Session, rpc.MethodSessionRead, rpc.SessionReadParams{Session: in.Session}, &r); err != nil {
		return toolError("read", err), nil, nil
	}
	var b strings.Builder
	sessionLine(&b, &r.Session)
	if r.Result == nil {
		b.WriteString("No result yet.\n")
	} else {
		resultText(&b, r.Result)
	}
	return withJSON(textResult(b.String()), r), nil, nil
}

func (t *mcpTools) list(ctx context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, any, error) {
	var r rpc.SessionListResult
	if err := t.call(ctx, "", rpc.MethodSessionList, rpc.SessionListParams{All: in.All}, &r); err != nil {
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

func (t *mcpTools) cancel(ctx context.Context, _ *mcp.CallToolRequest, in cancelIn) (*mcp.CallToolResult, any, error) {
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
	var r rpc.SessionResult
	if err := t.call(ctx, in.Session, rpc.MethodSessionCancel, p, &r); err != nil {
		return toolError("cancel", err), nil, nil
	}
	verb := "Canceled"
	if r.Result == nil {
		verb = "Nothing to cancel: no execution was active"
	}
	return withJSON(sessionResultText(verb, &r), r), nil, nil
}

func (t *mcpTools) stop(ctx context.Context, _ *mcp.CallToolRequest, in stopIn) (*mcp.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError("stop", rpc.InvalidField("session", "is required")), nil, nil
	}
	var r rpc.SessionResult
	if err := t.call(ctx, in.Session, rpc.MethodSessionStop, rpc.SessionStopParams{Session: in.Session, Force: in.Force}, &r); err != nil {
		return toolError("stop", err), nil, nil
	}
	return withJSON(sessionResultText("Stopped", &r), r), nil, nil
}

// call makes one RPC on a fresh connection. session, when set, routes a
// provider-qualified id to the daemon that owns it, as the CLI does.
func (t *mcpTools) call(ctx context.Context, session, method string, params, out any) error {
	ce := &env{getenv: t.e.getenv, environ: t.e.environ, stdin: t.e.stdin, stdout: t.e.stdout,
		stderr: t.e.stderr, exe: t.e.exe, isTerminal: t.e.isTerminal, sessionRef: session, hostFlag: t.e.hostFlag}
	defer ce.cleanupRemote()
	c, err := ce.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	return c.Call(ctx, method, params, out)
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

// toolCwd resolves the Session directory against this server's own. On
// another machine it must be absolute, or empty for that side's own.
func toolCwd(dir string, remote bool) (string, error) {
	if remote {
		if dir != "" && !filepath.IsAbs(dir) {
			return "", rpc.InvalidField("cwd", "must be an absolute path on the remote host")
		}
		return dir, nil
	}
	wd, err := workingDir()
	if err != nil {
		return "", err
	}
	if dir == "" {
		return wd, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	return filepath.Clean(dir), nil
}

// titleFrom makes a Session title from the prompt's first non-empty line:
// controls dropped, at most 60 runes.
func titleFrom(prompt string) string {
	for _, line := range strings.Split(prompt, "\n") {
		var b strings.Builder
		n := 0
		for _, r := range line {
			if n == 60 {
				b.WriteString("…")
				break
			}
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				r = ' '
			}
			b.WriteRune(r)
			n++
		}
		if s := strings.TrimSpace(b.String()); s != "" {
			return s
		}
	}
	return "delegated task"
}
