package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
)

// The test binary doubles as the fake Claude Code and the hook
// forwarder (testkit.Main).
func TestMain(m *testing.M) { testkit.Main(m) }

// world is a daemon with the fake Claude Code and a client of it.
type world struct {
	t    *testing.T
	home string
	cwd  string
	c    *client.Client
	env  map[string]string
	d    *testkit.Daemon
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldEnv(t, nil)
}

// newWorldEnv is newWorld whose client environment is env (nil: the fake
// Claude Code's).
func newWorldEnv(t *testing.T, env map[string]string) *world {
	t.Helper()
	dir := testkit.ShortDir(t)
	home := filepath.Join(dir, "h")
	d := testkit.StartDaemon(t, home)
	cwd := filepath.Join(dir, "work")
	os.MkdirAll(cwd, 0o700)
	if env == nil {
		env = testkit.FakeClaudeEnv(dir)
	}
	w := &world{t: t, home: home, cwd: cwd, env: env, d: d}
	w.c = w.newClient()
	return w
}

// newClient is a client of the world's daemon.
func (w *world) newClient() *client.Client {
	w.t.Helper()
	c, err := client.New(client.Options{Getenv: testkit.Getenv(map[string]string{"DLGT_HOME": w.home}), Environ: testkit.Environ(w.env),
		NoAutostart: true, Host: "local"})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

// restart stops the daemon and starts a new one on the same home, with a
// new client (editors connected before keep the old one).
func (w *world) restart() {
	w.t.Helper()
	w.d.Stop()
	w.d = testkit.StartDaemon(w.t, w.home)
	w.c = w.newClient()
}

// editor is a real ACP client (the SDK's client side) connected to an
// in-process `dlgt acp`.
type editor struct {
	t    *testing.T
	conn *sdk.ClientSideConnection
	in   *io.PipeWriter // the agent's stdin
	out  *io.PipeReader // the agent's stdout
	done chan error     // Serve's return
	stub *stubClient
	once sync.Once
}

// stubClient is the editor's side: it records updates and answers
// permission requests with answer.
type stubClient struct {
	mu      sync.Mutex
	updates []sdk.SessionNotification
	at      []time.Time // when each update came
	changed chan struct{}
	// answer picks the permission outcome (nil: cancelled); ctx ends
	// when the agent withdraws the request.
	answer func(context.Context, sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome
	asked  []sdk.RequestPermissionRequest
}

func (c *stubClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return nil
}

func (c *stubClient) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	answer := c.answer
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	if answer == nil {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: answer(ctx, p)}, nil
}

func (c *stubClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}

func (c *stubClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}

func (c *stubClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}

func (c *stubClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}

func (c *stubClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}

func (c *stubClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}

func (c *stubClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// connect starts `dlgt acp` with spec on the world's daemon and connects
// an editor to it.
func (w *world) connect(spec client.LaunchSpec) *editor {
	w.t.Helper()
	return w.connectWith(acp.Options{Launch: spec, Version: "test"})
}

// connectWith is connect with every option.
// opened is an initialized editor with a new session whose first prompt
// has been answered.
func (w *world) opened(ctx context.Context, first string) (*editor, sdk.SessionId) {
	w.t.Helper()
	e := w.connect(claude())
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	if _, err := e.prompt(ctx, id, first); err != nil {
		w.t.Fatal(err)
	}
	return e, id
}

// loaded is a new initialized editor that has loaded session id.
func (w *world) loaded(ctx context.Context, id sdk.SessionId) *editor {
	w.t.Helper()
	e := w.connect(claude())
	e.initialize(ctx)
	if _, err := e.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: w.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		w.t.Fatalf("session/load: %v", err)
	}
	return e
}

func (w *world) connectWith(opts acp.Options) *editor {
	w.t.Helper()
	if opts.Stderr == nil {
		opts.Stderr = tlog{w.t}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := acp.Serve(context.Background(), w.c, opts, inR, outW)
		outW.Close()
		done <- err
	}()
	stub := &stubClient{changed: make(chan struct{}, 1)}
	e := &editor{t: w.t, conn: sdk.NewClientSideConnection(stub, inW, outR), in: inW, out: outR, done: done, stub: stub}
	e.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.t.Cleanup(e.quit)
	return e
}

// quit closes the agent's stdin and waits for it to exit.
func (e *editor) quit() {
	e.once.Do(func() {
		e.in.Close()
		select {
		case <-e.done:
		case <-time.After(20 * time.Second):
			e.t.Error("dlgt acp did not exit after its stdin closed")
		}
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// claude is the launch of the fake Claude Code.
func claude(opts ...string) client.LaunchSpec {
	return client.LaunchSpec{Harness: "claude", HarnessOptions: opts}
}

// agentText is the concatenation of the agent_message_chunk texts of
// session id, from update from on.
func (e *editor) agentText(id sdk.SessionId) string {
	e.stub.mu.Lock()
	defer e.stub.mu.Unlock()
	var b strings.Builder
	for _, n := range e.stub.updates {
		if n.SessionId == id && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil {
			b.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// userText is the concatenation of the user_message_chunk texts of
// session id.
func (e *editor) userText(id sdk.SessionId) string {
	e.stub.mu.Lock()
	defer e.stub.mu.Unlock()
	var b strings.Builder
	for _, n := range e.stub.updates {
		if n.SessionId == id && n.Update.UserMessageChunk != nil && n.Update.UserMessageChunk.Content.Text != nil {
			b.WriteString(n.Update.UserMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// conversation is the session's message chunks in order, each run of
// chunks of one side joined: "user: …" and "agent: …".
func (e *editor) conversation(id sdk.SessionId) []string { return e.updatesOf(id, false) }

// replay is conversation with each tool_call between ("tool <status>
// <kind> <title> <raw input> <raw output>") and any other update as
// "other update".
func (e *editor) replay(id sdk.SessionId) []string { return e.updatesOf(id, true) }

func (e *editor) updatesOf(id sdk.SessionId, all bool) []string {
	e.stub.mu.Lock()
	defer e.stub.mu.Unlock()
	var out []string
	last := ""
	for _, n := range e.stub.updates {
		side, text := "", ""
		switch u := n.Update; {
		case n.SessionId != id:
			continue
		case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
			side, text = "user: ", u.UserMessageChunk.Content.Text.Text
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			side, text = "agent: ", u.AgentMessageChunk.Content.Text.Text
		case !all:
			continue
		case u.ToolCall != nil:
			in, _ := json.Marshal(u.ToolCall.RawInput)
			outp, _ := json.Marshal(u.ToolCall.RawOutput)
			out = append(out, fmt.Sprintf("tool %s %s %s %s %s", u.ToolCall.Status, u.ToolCall.Kind, u.ToolCall.Title, in, outp))
			last = ""
			continue
		default:
			out = append(out, "other update")
			last = ""
			continue
		}
		if side == last {
			out[len(out)-1] += text
		} else {
			out = append(out, side+text)
		}
		last = side
	}
	return out
}

// waitFor waits until cond holds on the recorded updates.
func (e *editor) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-e.stub.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (e *editor) initialize(ctx context.Context) sdk.InitializeResponse {
	e.t.Helper()
	r, err := e.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	return r
}

func (e *editor) newSession(ctx context.Context, cwd string) sdk.SessionId {
	e.t.Helper()
	r, err := e.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		e.t.Fatalf("session/new: %v", err)
	}
	return r.SessionId
}

func (e *editor) prompt(ctx context.Context, id sdk.SessionId, text string) (sdk.PromptResponse, error) {
	return e.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

// tlog writes the agent's diagnostics to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("dlgt acp: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// answer is a prompt's response.
type answer struct {
	r   sdk.PromptResponse
	err error
}

// promptAsync sends a prompt and delivers its response on the channel.
func (e *editor) promptAsync(ctx context.Context, id sdk.SessionId, text string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		r, err := e.prompt(ctx, id, text)
		ch <- answer{r, err}
	}()
	return ch
}

// waitAsked waits until the editor was asked n permission requests.
func (e *editor) waitAsked(n int) {
	e.t.Helper()
	e.waitFor("the permission request", func() bool {
		e.stub.mu.Lock()
		defer e.stub.mu.Unlock()
		return len(e.stub.asked) == n
	})
}
