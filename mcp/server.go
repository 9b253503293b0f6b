package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/statedir"
)

// ServerName is the name the leader's configuration registers the server
// under (harness.MCPServerName); the leader's model sees mcp__dlgt__<tool>.
const ServerName = harness.MCPServerName

// Waits are bounded below what the harnesses tolerate for one tool call:
// Codex cuts a call at 300 s, and Claude Code's TUI moves a call still
// running at 120 s to the background, which splits the leader's turn.
const (
	// WaitDefault is the bound of one wait call when Options.WaitMax is 0.
	WaitDefault = 100 * time.Second
	// WaitCeiling is the largest bound a wait call may have.
	WaitCeiling = 280 * time.Second
)

// Options are what the server's texts and waits depend on beyond the
// Client.
type Options struct {
	// WaitMax bounds one wait call: 0 is WaitDefault; more than
	// WaitCeiling is WaitCeiling.
	WaitMax time.Duration
	// Harnesses are the harnesses the instructions and tool descriptions
	// name; nil is harness.All().
	Harnesses []harness.Descriptor
}

func (o Options) harnesses() []harness.Descriptor {
	if o.Harnesses != nil {
		return o.Harnesses
	}
	return harness.All()
}

// Instructions is the server's instructions to the leader's model, naming
// the harnesses hs.
func Instructions(hs []harness.Descriptor) string {
	return "dlgt delegates work to another coding agent (" + harness.OrList(harness.DisplayNames(hs)) + ") running in its own Session.\n" + instructionsRest
}

const instructionsRest = `Call delegate with the task and a request_id you choose once and reuse on every retry of the same task; keep the session id and cursor it returns.
Call wait with that session and cursor until it reports a result (completed, failed, canceled or interrupted); when it returns "still running", call wait again with the new cursor.
Follow up in the same Session with send, and stop the Session when the work is done.`

// NewServer builds the MCP server whose tools call c, and registers the
// tools.
func NewServer(c *client.Client, opts Options) *sdk.Server {
	if opts.WaitMax <= 0 {
		opts.WaitMax = WaitDefault
	}
	opts.WaitMax = min(opts.WaitMax, WaitCeiling)
	hs := opts.harnesses()
	s := sdk.NewServer(&sdk.Implementation{Name: ServerName, Title: "dlgt", Version: statedir.Version},
		&sdk.ServerOptions{Instructions: Instructions(hs)})
	t := &tools{c: c, opts: opts, harnessList: client.HarnessList(hs), hosts: map[string]string{}, byHost: map[string]*client.Client{}}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(s, &sdk.Tool{Name: "delegate", Title: "Delegate a task",
		Description: "Start a new Session of another coding agent (harness " + t.harnessList + ") and submit the task as its first prompt. " +
			"Give a request_id (or a key to derive one) chosen before the first attempt: repeating the call with the same id and prompt returns the same receipt and never runs the task twice. " +
			"With worktree true the agent works in a new git worktree on its own branch (your checkout is untouched; read its changes with diff). " +
			"Returns the Session id and a cursor for wait.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false)}}, t.delegate)
	sdk.AddTool(s, &sdk.Tool{Name: "send", Title: "Send a follow-up",
		Description: "Submit a follow-up prompt to an idle Session (same conversation); with resume true, a stopped or failed Session is relaunched first. Same request_id rules as delegate. Returns a cursor for wait. " +
			"A busy Session refuses a plain send (SESSION_BUSY). Then choose: steer true when the agent is going wrong and a correction should reach it now (\"use the v2 API\", \"don't touch that file\"): it is typed into the running execution, which goes on with it; " +
			"queue true when the prompt is the next task and should wait for the current one to finish; cancel (then send) when the running work is wrong enough to throw away. " +
			"Steering needs a harness whose capabilities.steering is true (Claude Code, Codex); Gemini CLI refuses it: queue or cancel instead.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false)}}, t.send)
	sdk.AddTool(s, &sdk.Tool{Name: "wait", Title: "Wait for the result",
		Description: fmt.Sprintf("Wait (at most %s per call) for the Session's current execution to end and return its result: status, final text, error and token usage. "+
			"When the deadline comes first it returns status \"running\" and a cursor: call wait again with that cursor. Nothing is returned twice.", opts.WaitMax),
		Annotations: readOnly}, t.wait)
	sdk.AddTool(s, &sdk.Tool{Name: "read", Title: "Read a Session",
		Description: "Return a Session's state and its latest result.",
		Annotations: readOnly}, t.read)
	sdk.AddTool(s, &sdk.Tool{Name: "list", Title: "List Sessions",
		Description: "List the daemon's Sessions (all=true includes stopped and failed ones).",
		Annotations: readOnly}, t.list)
	sdk.AddTool(s, &sdk.Tool{Name: "cancel", Title: "Cancel the running execution",
		Description: "Interrupt the Session's running execution; the Session stays open for follow-ups.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)}}, t.cancel)
	sdk.AddTool(s, &sdk.Tool{Name: "respond", Title: "Answer what a blocked Session asks",
		Description: "Answer the pending request of a blocked Session (wait and read show it, with the exact arguments): decision allow or deny for a tool permission, " +
			"with an optional message for deny that the agent's model receives (Gemini CLI takes none: its deny ends the turn). It allows or denies that one call only and never widens the Session's permissions. " +
			"A request answered or withdrawn already (a person answered it in the terminal) is an error; repeating the same answer is not.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}}, t.respond)
	sdk.AddTool(s, &sdk.Tool{Name: "stop", Title: "Stop a Session",
		Description: "Stop the Session's harness when the work is done. A running execution is refused unless force is true. A worktree and its branch are kept unless remove_worktree is true.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)}}, t.stop)
	sdk.AddTool(s, &sdk.Tool{Name: "diff", Title: "Read a worktree Session's changes",
		Description: "For a Session delegated with worktree: its changes against the commit its worktree started from (committed, uncommitted and new files), as a unified diff with a stat, bounded by max_bytes. " +
			"Review it, then merge the branch (git merge BRANCH in your checkout) or discard it (stop with remove_worktree and force).",
		Annotations: readOnly}, t.diff)
	return s
}

func ptr[T any](v T) *T { return &v }

// Serve runs the server of c on in and out (the process's stdin and
// stdout: the SDK's stdio transport) until the peer goes away or ctx
// ends, which is not an error.
func Serve(ctx context.Context, c *client.Client, opts Options, in io.Reader, out io.Writer) error {
	var t sdk.Transport = &sdk.StdioTransport{}
	inFile, _ := in.(*os.File)
	outFile, _ := out.(*os.File)
	if inFile != os.Stdin || outFile != os.Stdout {
		t = &sdk.IOTransport{Reader: readCloser{in}, Writer: nopWriteCloser{out}}
	}
	err := NewServer(c, opts).Run(ctx, t)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// readCloser and nopWriteCloser adapt plain streams to the SDK's
// IOTransport.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// maxRemembered bounds the Sessions whose host the server remembers.
const maxRemembered = 4096

// tools is the server's domain type: each tool is one of its methods.
type tools struct {
	c           *client.Client
	opts        Options
	harnessList string // "claude, codex or gemini"

	mu sync.Mutex
	// hosts are the hosts of the Sessions delegate created on a machine
	// other than c's (a profile's host), by id and by alias: the later
	// tools about them go there.
	hosts map[string]string
	// byHost are the Clients of those hosts.
	byHost map[string]*client.Client
}

// remember records that Session id (alias alias) runs on host.
func (t *tools) remember(host, id, alias string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ref := range []string{id, alias} {
		if ref == "" {
			continue
		}
		if _, ok := t.hosts[ref]; !ok && len(t.hosts) >= maxRemembered {
			for k := range t.hosts { // forget one to stay bounded
				delete(t.hosts, k)
				break
			}
		}
		t.hosts[ref] = host
	}
}

// clientFor is the Client that reaches the Session ref: the host's when
// delegate created it on another machine, else the server's own.
func (t *tools) clientFor(ref string) (*client.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	host, ok := t.hosts[ref]
	if !ok || host == t.c.Host() {
		return t.c, nil
	}
	if c, ok := t.byHost[host]; ok {
		return c, nil
	}
	to := host
	if to == "" {
		to = "local"
	}
	c, err := t.c.WithHost(to)
	if err != nil {
		return nil, err
	}
	t.byHost[host] = c
	return c, nil
}
