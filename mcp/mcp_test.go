package mcp

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/rpc"
)

func TestMCPToolsAndAnnotations(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	cs := testServer(t, d, nil, nil, 5*time.Second)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
	}
	want := map[string]bool{"delegate": false, "send": false, "wait": true, "read": true, "list": true, "cancel": false, "stop": false, "respond": false, "diff": true}
	if len(got) != len(want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	for name, ro := range want {
		if r, ok := got[name]; !ok || r != ro {
			t.Errorf("tool %s: present %v read-only %v, want read-only %v", name, ok, r, ro)
		}
	}
}

func TestMCPDelegateRequestIDs(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	receipt := rpc.Receipt{Session: rpc.Session{ID: "codex:0199", Harness: "codex", State: "busy"}, ExecutionSeq: 1, Cursor: "3", Submission: "confirmed"}
	d.Set(rpc.MethodSessionCreate, receipt)
	cs := testServer(t, d, nil, []string{"A=1"}, 5*time.Second)

	text, st, isErr := callTool(t, cs, "delegate", map[string]any{"harness": "codex", "prompt": "do it", "request_id": "r-1"})
	if isErr || !strings.Contains(text, `session "codex:0199" and cursor "3"`) || st["request_id"] != "r-1" || st["cursor"] != "3" {
		t.Fatalf("delegate: err %v text %q structured %v", isErr, text, st)
	}
	// A key derives the same id every time, and a different key another.
	ids := map[string]string{}
	for _, key := range []string{"k1", "k1", "k2"} {
		_, st, isErr := callTool(t, cs, "delegate", map[string]any{"harness": "codex", "prompt": "do it", "key": key})
		id, _ := st["request_id"].(string)
		if isErr || !strings.HasPrefix(id, "mcp-") {
			t.Fatalf("delegate with key %s: %v %v", key, isErr, st)
		}
		if prev, ok := ids[key]; ok && prev != id {
			t.Errorf("key %s gave %s then %s", key, prev, id)
		}
		ids[key] = id
	}
	if ids["k1"] == ids["k2"] {
		t.Errorf("two keys gave one request_id %s", ids["k1"])
	}
	var p rpc.SessionCreateParams
	json.Unmarshal(d.Params(rpc.MethodSessionCreate)[0], &p)
	if p.RequestID != "r-1" || p.Prompt != "do it" || p.Title != "do it" || p.Cwd == "" || p.Environment["A"] != "1" {
		t.Errorf("create params %+v", p)
	}
	if n := len(d.Params(rpc.MethodSessionCreate)); n != 4 {
		t.Errorf("%d creates reached the daemon, want 4", n)
	}
}

// Bad input is a tool error naming the field, and reaches no daemon.
func TestMCPBadInput(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionRead, &rpc.Error{Code: rpc.CodeNotFound, Message: `no Session "codex:nope" on this daemon`})
	d.Set(rpc.MethodSessionCreate, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "prompt", Message: "prompt must not contain ESC or NUL"})
	cs := testServer(t, d, nil, nil, 5*time.Second)
	cases := []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"delegate", map[string]any{"harness": "codex", "request_id": "r"}, "prompt"},
		{"delegate", map[string]any{"harness": "codex", "prompt": "x"}, "request_id"},
		{"delegate", map[string]any{"harness": "codex", "prompt": "x", "request_id": "r", "key": "k"}, "request_id"},
		{"delegate", map[string]any{"prompt": "x", "request_id": "r"}, "harness"},
		{"delegate", map[string]any{"harness": "codex", "prompt": 5, "request_id": "r"}, "prompt"},
		{"delegate", map[string]any{"harness": "codex", "prompt": "x", "request_id": "r", "bogus": 1}, "bogus"},
		{"send", map[string]any{"prompt": "x", "request_id": "r"}, "session"},
		{"send", map[string]any{"session": "s", "request_id": "r"}, "prompt"},
		{"send", map[string]any{"session": "s", "prompt": "x"}, "request_id"},
		{"wait", map[string]any{}, "session"},
		{"wait", map[string]any{"session": "s", "timeout_seconds": "soon"}, "timeout_seconds"},
		{"wait", map[string]any{"session": "s", "timeout_seconds": -1}, "timeout_seconds"},
		{"read", map[string]any{"session": 7}, "session"},
		{"list", map[string]any{"all": "yes"}, "all"},
		{"cancel", map[string]any{}, "session"},
		{"cancel", map[string]any{"session": "s", "timeout_seconds": -5}, "timeout_seconds"},
		{"stop", map[string]any{"session": "s", "force": "please"}, "force"},
	}
	for _, c := range cases {
		text, _, isErr := callTool(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, c.field) {
			t.Errorf("%s %v: error %v, text %q; want a tool error naming %s", c.tool, c.args, isErr, text, c.field)
		}
	}
	if n := d.Count(); n != 0 {
		t.Errorf("bad input reached the daemon %d times", n)
	}
	// The daemon's own refusals come back typed, with the field.
	text, st, isErr := callTool(t, cs, "delegate", map[string]any{"harness": "codex", "prompt": "a\x1b[2Jb", "request_id": "r"})
	if !isErr || !strings.Contains(text, "INVALID_ARGUMENT") || !strings.Contains(text, "field: prompt") || st["error"] == nil {
		t.Errorf("escape bytes: %v %q %v", isErr, text, st)
	}
	text, _, isErr = callTool(t, cs, "read", map[string]any{"session": "codex:nope"})
	if !isErr || !strings.Contains(text, "NOT_FOUND") {
		t.Errorf("unknown Session: %v %q", isErr, text)
	}
}

// wait follows page_full until a chunked final_text is whole, passes each
// document's cursor on, and returns the text once, assembled.
func TestMCPWaitAssemblesChunks(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	sess := rpc.Session{ID: "claude:01", Alias: "rev", Harness: "claude", Title: "t", State: "idle"}
	off0, off1 := 0, 5
	d.SetPages(rpc.MethodSessionFetch, []any{
		rpc.FetchDocument{Reason: rpc.ReasonPageFull, HasMore: true, Cursor: "11", Sessions: []rpc.FetchSession{{Session: sess,
			Results: []rpc.Result{{ExecutionSeq: 2, Status: "completed", FinalText: strp("hello"), FinalTextOffset: &off0, FinalTextComplete: boolp(false), Prompt: strp("the leader's own prompt")}}}}},
		rpc.FetchDocument{Reason: rpc.ReasonResult, Cursor: "12", Sessions: []rpc.FetchSession{{Session: sess,
			Results: []rpc.Result{{ExecutionSeq: 2, Status: "completed", FinalText: strp(" world"), FinalTextOffset: &off1, FinalTextComplete: boolp(true),
				Usage: json.RawMessage(`{"input_tokens":10,"cache_read_input_tokens":1200,"output_tokens":3,"total_tokens":1213,"requests":1}`)}}}}},
	}...)
	cs := testServer(t, d, nil, nil, 5*time.Second)
	text, st, isErr := callTool(t, cs, "wait", map[string]any{"session": "claude:01", "cursor": "10"})
	if isErr {
		t.Fatalf("wait: %s", text)
	}
	if !strings.Contains(text, "Execution 2 completed.") || !strings.Contains(text, "Final text:\nhello world\n") ||
		!strings.Contains(text, `Session claude:01 (claude, "t", alias rev) is idle.`) ||
		!strings.Contains(text, "\nUsage: 1,213 tokens in 1 model request (input 10, cache read 1,200, cache write 0, output 3)\n") || strings.Count(text, "hello") != 1 {
		t.Errorf("wait text:\n%s", text)
	}
	if st["status"] != "completed" || st["cursor"] != "12" {
		t.Errorf("structured %v", st)
	}
	res := st["results"].([]any)[0].(map[string]any)
	if res["final_text"] != "hello world" || res["final_text_offset"] != nil {
		t.Errorf("structured result %v", res)
	}
	// The prompt is not echoed back to the model.
	if _, ok := res["prompt"]; ok || strings.Contains(text, "own prompt") {
		t.Errorf("the prompt reached the model: %v", res)
	}
	fetches := d.Params(rpc.MethodSessionFetch)
	var p1, p2 rpc.SessionFetchParams
	json.Unmarshal(fetches[0], &p1)
	json.Unmarshal(fetches[1], &p2)
	if string(p1.Cursor) != `"10"` || string(p2.Cursor) != `"11"` || p1.Until != "result" || p1.WaitMS <= 0 || p1.WaitMS > 5000 {
		t.Errorf("fetch params %s / %s", fetches[0], fetches[1])
	}
}

// read leaves the result's prompt and tool calls out of what the model
// reads.
func TestMCPReadLeavesThePromptOut(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: rpc.Session{ID: "claude:03", Harness: "claude", State: "idle"},
		Result: &rpc.Result{ExecutionSeq: 1, Status: "completed", FinalText: strp("answer"), Prompt: strp("a long prompt"), PromptTruncated: true,
			ToolCalls: []rpc.ResultToolCall{{ID: "toolu_1", Tool: "Bash", Command: "echo secret-call", Status: "completed"}}, ToolCallsTruncated: true}})
	cs := testServer(t, d, nil, nil, 5*time.Second)
	text, st, isErr := callTool(t, cs, "read", map[string]any{"session": "claude:03"})
	res, _ := st["result"].(map[string]any)
	if isErr || res == nil || res["final_text"] != "answer" {
		t.Fatalf("read: %v %v\n%s", isErr, st, text)
	}
	if _, ok := res["prompt"]; ok || res["prompt_truncated"] != nil || strings.Contains(text, "long prompt") {
		t.Errorf("the prompt reached the model: %v", res)
	}
	if _, ok := res["tool_calls"]; ok || res["tool_calls_truncated"] != nil || strings.Contains(text, "secret-call") {
		t.Errorf("the tool calls reached the model: %v", res)
	}
}

// A deadline that comes first returns "running" with the cursor to go on.
func TestMCPWaitRunning(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionFetch, rpc.FetchDocument{Reason: rpc.ReasonTimeout, Cursor: "4",
		Sessions: []rpc.FetchSession{{Session: rpc.Session{ID: "codex:02", Harness: "codex", State: "busy"}}}})
	cs := testServer(t, d, nil, nil, 90*time.Second)
	text, st, isErr := callTool(t, cs, "wait", map[string]any{"session": "codex:02", "cursor": "3", "timeout_seconds": 2})
	if isErr || st["status"] != "running" || st["cursor"] != "4" || !strings.Contains(text, `Still running. Call wait again with session "codex:02" and cursor "4"`) {
		t.Errorf("wait: %v %v\n%s", isErr, st, text)
	}
	var p rpc.SessionFetchParams
	json.Unmarshal(d.Params(rpc.MethodSessionFetch)[0], &p)
	if p.WaitMS > 2000 || p.WaitMS < 1000 {
		t.Errorf("wait_ms %d, want the 2 s the caller asked for", p.WaitMS)
	}
}

// An MCP tool's answer never tells the model to run a dlgt command it has
// no way to run: the daemon's CLI advice becomes the tool and its
// arguments, and what only a person can do is labelled so.
func TestMCPMessagesNameToolsNotCommands(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	// The daemon's own messages, as it words them.
	d.Set(rpc.MethodSessionStop, &rpc.Error{Code: rpc.CodeSessionBusy, SessionID: "codex:01",
		Message: "execution 2 is active (the Session is busy); cancel it first, or stop anyway with force (dlgt session stop --force), which interrupts it"})
	d.Set(rpc.MethodSessionSend, &rpc.Error{Code: rpc.CodeNotFound,
		Message: "no active Session has the alias @rev; it last named codex:01, now stopped: address that Session by its ID, or resume it (dlgt session send codex:01 --resume)"})
	d.Set(rpc.MethodSessionRead, &rpc.Error{Code: rpc.CodeSessionBlocked, SessionID: "codex:01", Message: "the Session waits for human input (attach to answer it)"})
	d.Set(rpc.MethodSessionCancel, &rpc.Error{Code: rpc.CodeLaunchFailed, Message: "codex exited at once"})
	d.Set(rpc.MethodSessionFetch, rpc.FetchDocument{Reason: rpc.ReasonBlocked, Cursor: "9",
		Sessions: []rpc.FetchSession{{Session: rpc.Session{ID: "codex:01", Harness: "codex", State: rpc.StateBlocked}}}})
	cs := testServer(t, d, nil, nil, 5*time.Second)

	// Every mention of a dlgt command left in a text must be one a person
	// runs (attach, doctor) and be labelled as such.
	person := regexp.MustCompile("`dlgt session attach codex:01` \\(a command for a person, not an MCP tool\\)|`dlgt doctor` in a terminal \\(a command for a person, not an MCP tool\\)")
	check := func(name, text string) {
		t.Helper()
		if rest := person.ReplaceAllString(text, ""); strings.Contains(rest, "dlgt session") || strings.Contains(rest, "dlgt doctor") || strings.Contains(rest, "--") {
			t.Errorf("%s names a CLI command for the model:\n%s", name, text)
		}
	}
	text, _, _ := callTool(t, cs, "stop", map[string]any{"session": "codex:01"})
	check("stop", text)
	if !strings.Contains(text, "call stop with force: true") || strings.Contains(text, "send again") {
		t.Errorf("stop while busy:\n%s", text)
	}
	text, _, _ = callTool(t, cs, "send", map[string]any{"session": "rev", "prompt": "more", "request_id": "r"})
	check("send", text)
	if !strings.Contains(text, `call send with session "codex:01" and resume: true`) {
		t.Errorf("send to a stopped alias:\n%s", text)
	}
	text, _, _ = callTool(t, cs, "read", map[string]any{"session": "codex:01"})
	check("read", text)
	if !strings.Contains(text, "`dlgt session attach codex:01` (a command for a person") {
		t.Errorf("blocked:\n%s", text)
	}
	text, _, _ = callTool(t, cs, "cancel", map[string]any{"session": "codex:01"})
	check("cancel", text)
	text, _, _ = callTool(t, cs, "wait", map[string]any{"session": "codex:01", "cursor": "8"})
	check("wait", text)
	if !strings.Contains(text, "`dlgt session attach codex:01` (a command for a person") || !strings.Contains(text, `cursor "9"`) {
		t.Errorf("wait blocked:\n%s", text)
	}

	// The resume the message points to is a send argument.
	d.Set(rpc.MethodSessionSend, rpc.Receipt{Session: rpc.Session{ID: "codex:01", Harness: "codex"}, ExecutionSeq: 3, Cursor: "12", Submission: "confirmed"})
	if text, _, isErr := callTool(t, cs, "send", map[string]any{"session": "codex:01", "prompt": "more", "request_id": "r", "resume": true}); isErr {
		t.Fatalf("send resume: %s", text)
	}
	sends := d.Params(rpc.MethodSessionSend)
	var p rpc.SessionSendParams
	json.Unmarshal(sends[len(sends)-1], &p)
	if !p.Resume {
		t.Errorf("send params %s: resume not passed on", sends[len(sends)-1])
	}

	// A client-side message naming a command with no tool (starting the
	// daemon) is labelled for a person.
	res := toolError("list", &rpc.Error{Code: rpc.CodeRPCUnavailable,
		Message: "no daemon is running; DLGT_NO_AUTOSTART is true, so none was started: run `dlgt daemon` (with the same DLGT_HOME), or unset DLGT_NO_AUTOSTART"})
	if got := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(got, forAPerson) {
		t.Errorf("RPC_UNAVAILABLE:\n%s", got)
	}
}

// Serve runs the server on plain streams and returns nil when the peer
// goes away.
func TestServeOnStreams(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{})
	c := testClient(t, d, nil, nil)
	toServer, fromClient := io.Pipe()
	fromServer, toClient := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), c, Options{}, toServer, toClient)
		toClient.Close()
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&sdk.IOTransport{Reader: fromServer, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if text, _, isErr := callTool(t, cs, "list", map[string]any{}); isErr || text != "No Sessions.\n" {
		t.Errorf("list: %v %q", isErr, text)
	}
	cs.Close()
	fromClient.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after the peer went away")
	}
}

// A blocked Session with a pending request: wait and read name the
// respond tool with the exact arguments, and respond passes the answer
// on, pinned to the request pending now when no pending_id is given.
func TestMCPBlockedSaysHowToRespond(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	blocked := rpc.Session{ID: "claude:01", Harness: "claude", State: rpc.StateBlocked,
		Pending: &rpc.Pending{ID: "prq_ab12", Kind: rpc.PendingPermission, Tool: "Bash", Input: "rm -rf build\nls", AskedAtMS: 1}}
	d.Set(rpc.MethodSessionFetch, rpc.FetchDocument{Reason: rpc.ReasonBlocked, Cursor: "9",
		Sessions: []rpc.FetchSession{{Session: blocked}}})
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: blocked})
	d.Set(rpc.MethodSessionRespond, rpc.SessionRespondResult{Session: rpc.Session{ID: "claude:01", Harness: "claude", State: rpc.StateBusy}, PendingID: "prq_ab12", Decision: rpc.DecisionDeny})
	cs := testServer(t, d, nil, nil, 5*time.Second)
	for _, tool := range []string{"wait", "read"} {
		text, _, isErr := callTool(t, cs, tool, map[string]any{"session": "claude:01"})
		if isErr || !strings.Contains(text, `call respond with {"session": "claude:01", "pending_id": "prq_ab12", "decision": "allow"}`) ||
			!strings.Contains(text, `"decision": "deny", "message": `) || !strings.Contains(text, "the tool Bash") || !strings.Contains(text, "> rm -rf build\n> ls") {
			t.Errorf("%s of a blocked Session:\n%s", tool, text)
		}
	}
	text, _, isErr := callTool(t, cs, "respond", map[string]any{"session": "claude:01", "decision": "deny", "message": "use a branch"})
	if isErr || !strings.Contains(text, "Denied pending request prq_ab12") {
		t.Fatalf("respond:\n%s", text)
	}
	ps := d.Params(rpc.MethodSessionRespond)
	var p rpc.SessionRespondParams
	json.Unmarshal(ps[len(ps)-1], &p)
	if p.PendingID != "prq_ab12" || p.Decision != "deny" || p.Message != "use a branch" || p.RequestID == "" || p.Session != "claude:01" {
		t.Errorf("respond params %s", ps[len(ps)-1])
	}
	// A Gemini CLI Session's deny takes no message (its box has none):
	// the text asks for a deny without one, and says it ends the turn.
	gem := rpc.Session{ID: "gemini:02", Harness: "gemini", State: rpc.StateBlocked,
		Pending: &rpc.Pending{ID: "prq_cd34", Kind: rpc.PendingPermission, Tool: "run_shell_command", Input: "touch x", AskedAtMS: 1}}
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: gem})
	text, _, isErr = callTool(t, cs, "read", map[string]any{"session": "gemini:02"})
	if isErr || !strings.Contains(text, `{"session": "gemini:02", "pending_id": "prq_cd34", "decision": "deny"} and no message`) ||
		strings.Contains(text, `"message": `) || !strings.Contains(text, "ends the agent's turn") {
		t.Errorf("read of a blocked Gemini Session:\n%s", text)
	}
	// Nothing pending: a typed error, and nothing is sent.
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: rpc.Session{ID: "claude:01", Harness: "claude", State: rpc.StateIdle}})
	text, _, isErr = callTool(t, cs, "respond", map[string]any{"session": "claude:01", "decision": "allow"})
	if !isErr || !strings.Contains(text, "SESSION_UNAVAILABLE") || len(d.Params(rpc.MethodSessionRespond)) != 1 {
		t.Errorf("respond with nothing pending:\n%s", text)
	}
}

// delegate passes worktree (or a branch) on to session.create; diff asks
// session.diff with the tool's bound and renders the stat and the diff;
// stop passes remove_worktree.
func TestMCPWorktreeDelegateDiffStop(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	wt := &rpc.Worktree{Path: "/state/worktrees/p-1/dlgt-fix", Branch: "dlgt/fix", BaseCommit: "0123456789abcdef", Repo: "/src/p"}
	sess := rpc.Session{ID: "codex:0199", Alias: "fix", Harness: "codex", State: "busy", Worktree: wt}
	d.Set(rpc.MethodSessionCreate, rpc.Receipt{Session: sess, ExecutionSeq: 1, Cursor: "3", Submission: "confirmed"})
	d.Set(rpc.MethodSessionDiff, rpc.SessionDiffResult{Session: sess, Worktree: *wt,
		Summary: rpc.DiffSummary{Files: 1, Insertions: 1}, Diff: "diff --git a/x b/x\n+hello\n", Truncated: true})
	d.Set(rpc.MethodSessionStop, rpc.SessionResult{Session: sess})
	cs := testServer(t, d, nil, nil, 5*time.Second)

	for i, args := range []map[string]any{
		{"harness": "codex", "prompt": "fix it", "request_id": "r-1", "worktree": true},
		{"harness": "codex", "prompt": "fix it", "request_id": "r-2", "branch": "feature/x"},
		{"harness": "codex", "prompt": "fix it", "request_id": "r-3"},
	} {
		if text, _, isErr := callTool(t, cs, "delegate", args); isErr || !strings.Contains(text, "Delegated") {
			t.Fatalf("delegate %d: %q", i, text)
		}
	}
	want := []string{`"worktree":{}`, `"worktree":{"branch":"feature/x"}`, ""}
	for i, p := range d.Params(rpc.MethodSessionCreate) {
		if got := string(p); (want[i] == "" && strings.Contains(got, `"worktree":`)) || !strings.Contains(got, want[i]) {
			t.Errorf("create %d params %s, want %s", i, got, want[i])
		}
	}

	text, st, isErr := callTool(t, cs, "diff", map[string]any{"session": "fix"})
	if isErr || !strings.Contains(text, "1 file changed, 1 insertion(+), 0 deletions(-), nothing committed") || !strings.Contains(text, "+hello\n") ||
		!strings.Contains(text, "cut at") || !strings.Contains(text, "Worktree: branch dlgt/fix") || st["truncated"] != true {
		t.Fatalf("diff: err %v text %q", isErr, text)
	}
	if p := d.Params(rpc.MethodSessionDiff); len(p) != 1 || !strings.Contains(string(p[0]), `"max_bytes":65536`) {
		t.Fatalf("session.diff params %s", p)
	}
	if text, _, isErr := callTool(t, cs, "stop", map[string]any{"session": "fix", "remove_worktree": true}); isErr {
		t.Fatalf("stop: %q", text)
	}
	if p := d.Params(rpc.MethodSessionStop); len(p) != 1 || !strings.Contains(string(p[0]), `"remove_worktree":true`) {
		t.Fatalf("session.stop params %s", p)
	}
}
