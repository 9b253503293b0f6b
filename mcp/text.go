package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// What the MCP tools put in front of a model: the daemon's documents as a
// few plain lines (ids, status, the final text, what to call next), with the
// JSON document alongside as a second text block.
//
// The JSON is deliberately not sent as structuredContent: both pinned CLIs
// (Claude Code 2.1.332 and Codex 0.171.0) hand the model a result's
// structuredContent in place of its text content when it is present, and
// the text is what a model reads best.

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// withJSON appends doc, marshaled, as the result's second text block.
func withJSON(res *sdk.CallToolResult, doc any) *sdk.CallToolResult {
	b, err := json.Marshal(doc)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	res.Content = append(res.Content, &sdk.TextContent{Text: string(b)})
	return res
}

// toolError is a tool-level error: the code, the message, the field it
// names and what to do next, for the model; the wire error as the JSON
// block, for programs. tool is the tool that failed: what to do next
// depends on it.
func toolError(tool string, err error) *sdk.CallToolResult {
	re := rpc.AsError(err)
	var b strings.Builder
	msg := toolMessage(re.Message)
	fmt.Fprintf(&b, "%s: %s\n", re.Code, msg)
	if re.Field != "" {
		fmt.Fprintf(&b, "field: %s\n", re.Field)
	}
	if re.SessionID != "" {
		fmt.Fprintf(&b, "session: %s\n", re.SessionID)
	}
	if advice := errorAdvice(tool, re); advice != "" {
		b.WriteString(advice + "\n")
	}
	if cliMention().MatchString(msg) {
		b.WriteString(forAPerson + "\n")
	}
	r := withJSON(textResult(b.String()), map[string]any{"error": re})
	r.IsError = true
	return r
}

// The daemon's and the client's messages are written for the CLI and may
// name a dlgt command. A model calling the MCP tools cannot run one: the
// commands with a tool equivalent are rewritten to name the tool and its
// arguments; any other is labelled as a person's.
var (
	cliStopForce  = lazyRegexp("`?dlgt session stop (?:<session> |\\S+ )?--force`?")
	cliSendResume = lazyRegexp("`?dlgt session send (\\S+) --resume`?")
	cliMention    = lazyRegexp("`dlgt [^`]*`|\\(dlgt [^)]*\\)|\\bdlgt (?:session|daemon|doctor|rpc|profiles|mcp|skill|events|scrollback|transcript)\\b")
)

// lazyRegexp compiles expr on first use: every dlgt command links this
// package, and only `dlgt mcp` uses these.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

const forAPerson = "(A `dlgt …` command above is for a person at a terminal; the MCP tools cannot run it.)"

func toolMessage(msg string) string {
	msg = cliStopForce().ReplaceAllString(msg, "call stop with force: true")
	return cliSendResume().ReplaceAllString(msg, `call send with session "$1" and resume: true`)
}

func errorAdvice(tool string, re *rpc.Error) string {
	session := re.SessionID
	if session == "" {
		session = "<session>"
	}
	switch re.Code {
	case rpc.CodeSessionBusy:
		if tool == "stop" {
			return "An execution is still running in this Session: call wait for its result or cancel it, then call stop again; or call stop with force: true, which interrupts it."
		}
		return "An execution is still running in this Session: call wait for its result, then send again with the same request_id."
	case rpc.CodeSessionBlocked:
		return fmt.Sprintf("The Session waits for a human decision (a permission prompt in the harness); no MCP tool can answer it. "+
			"Tell the user to answer it in a terminal with `dlgt session attach %s` (a command for a person, not an MCP tool). Then call wait again, or call cancel.", session)
	case rpc.CodeSessionAttached:
		return "A person is typing in this Session's terminal; try again after they detach."
	case rpc.CodeSessionUnavailable:
		switch tool {
		case "send":
			return "The Session is not running: call send again with resume: true (same request_id) to relaunch it, or call delegate for a new Session."
		case "stop":
			return "Call stop again with force: true to end it anyway."
		}
		return "Call read to see the Session's state."
	case rpc.CodeCancelTimeout:
		return "The cancellation is not confirmed yet: call wait for the execution's result (status canceled)."
	case rpc.CodeRPCUnavailable:
		return "The dlgt daemon could not be reached. Retrying the same call with the same request_id is safe: a request that was accepted is replayed, never run twice."
	case rpc.CodeNotFound:
		return "Call list to see the Sessions."
	case rpc.CodeCursorExpired, rpc.CodeCursorInvalid:
		return "Call wait without a cursor: it returns the latest result and a fresh cursor."
	case rpc.CodeInvalidArgument:
		if strings.Contains(re.Message, "request_id") || re.Field == "request_id" {
			return "A request_id names one request: a retry must repeat it with exactly the same arguments; new work needs a new request_id."
		}
		return "Correct the argument and call again."
	case rpc.CodeLaunchFailed:
		return "The harness did not start; the message says why. Tell the user; they can check the harness with `dlgt doctor` in a terminal (a command for a person, not an MCP tool)."
	}
	return ""
}

// receiptResult renders a session.create or session.send receipt.
func receiptResult(verb, reqID string, r *rpc.Receipt) *sdk.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s Session %s", verb, r.Session.Harness, r.Session.ID)
	if r.Session.Alias != "" {
		fmt.Fprintf(&b, " (alias %s)", r.Session.Alias)
	}
	fmt.Fprintf(&b, ": execution %d, submission %s.\n", r.ExecutionSeq, r.Submission)
	if r.Replayed {
		b.WriteString("This request_id was already accepted: this is the original receipt, nothing ran twice.\n")
	}
	switch {
	case r.Steered:
		b.WriteString("The correction was typed into the running execution; its result (the one to wait for) covers the steered turn.\n")
	case r.Queued && r.Submission == rpc.SubmissionPending:
		b.WriteString("Queued: it runs when the current execution ends. Waiting with the cursor below returns its own result, not the current one's.\n")
	case r.Submission == rpc.SubmissionPending:
		b.WriteString("The harness has not confirmed the prompt yet. Waiting is safe; to refresh the receipt, repeat this call with the same request_id.\n")
	}
	fmt.Fprintf(&b, "request_id: %s\n", reqID)
	fmt.Fprintf(&b, "Next: call wait with session %q and cursor %q.\n", r.Session.ID, r.Cursor)
	return withJSON(textResult(b.String()), struct {
		*rpc.Receipt
		RequestID string `json:"request_id"`
	}{r, reqID})
}

// waitText renders a wait result.
func (t *tools) waitText(w *client.Wait) string {
	var b strings.Builder
	sessionLine(&b, &w.Session)
	for i := range w.Results {
		resultText(&b, &w.Results[i])
	}
	switch w.Status {
	case client.WaitStatusRunning:
		fmt.Fprintf(&b, "Still running. Call wait again with session %q and cursor %q.\n", w.Session.ID, w.Cursor)
	case rpc.StateBlocked:
		if w.Session.Pending != nil {
			pendingText(&b, &w.Session)
			fmt.Fprintf(&b, "After respond, call wait again with session %q and cursor %q.\n", w.Session.ID, w.Cursor)
			break
		}
		fmt.Fprintf(&b, "Blocked: the agent waits for a human decision (a permission prompt); no MCP tool can answer it. "+
			"Tell the user to answer it in a terminal with `dlgt session attach %s` (a command for a person, not an MCP tool). "+
			"Then call wait again with session %q and cursor %q, or call cancel.\n", w.Session.ID, w.Session.ID, w.Cursor)
	default:
		fmt.Fprintf(&b, "Cursor for the next wait (after a send): %q.\n", w.Cursor)
	}
	for _, g := range w.Gaps {
		fmt.Fprintf(&b, "Gap: %s %s (older data was evicted; the latest state is shown).\n", g.Component, g.Reason)
	}
	return b.String()
}

// pendingText says what a blocked Session asks and exactly how to answer
// it with the respond tool. The tool input is the counterpart's untrusted
// text: it is shown quoted, as data.
func pendingText(b *strings.Builder, s *rpc.Session) {
	p := s.Pending
	switch p.Kind {
	case rpc.PendingPermission:
		fmt.Fprintf(b, "Blocked: the agent asks permission to run the tool %s with this input (the agent's text, untrusted):\n%s\n", p.Tool, quoteBlock(p.Input))
		fmt.Fprintf(b, "To allow this one call: call respond with {\"session\": %q, \"pending_id\": %q, \"decision\": \"allow\"}. ", s.ID, p.ID)
		if harness.DenyTakesMessage(s.Harness) {
			fmt.Fprintf(b, "To refuse it: call respond with {\"session\": %q, \"pending_id\": %q, \"decision\": \"deny\", \"message\": \"why, and what to do instead\"} (the agent's model receives the message). "+
				"Allow only what the user asked you to have done; when unsure, deny with a message, or ask the user. ", s.ID, p.ID)
		} else {
			fmt.Fprintf(b, "To refuse it: call respond with {\"session\": %q, \"pending_id\": %q, \"decision\": \"deny\"} and no message (this harness's dialog takes none: the refusal ends the agent's turn, and its model is not told why; say what to do instead with send once the turn has ended). "+
				"Allow only what the user asked you to have done; when unsure, deny, or ask the user. ", s.ID, p.ID)
		}
		fmt.Fprintf(b, "If nobody answers, the request stays for a person at the terminal (dlgt session attach %s).\n", s.ID)
	default:
		fmt.Fprintf(b, "Blocked: the agent asks: %s\n", quoteBlock(p.Question))
		for _, o := range p.Options {
			fmt.Fprintf(b, "  option %q: %s\n", o.ID, o.Label)
		}
		fmt.Fprintf(b, "Call respond with {\"session\": %q, \"pending_id\": %q, \"option\": \"<option id>\"} or with \"text\".\n", s.ID, p.ID)
	}
}

// quoteBlock indents text as a quoted block ("> " per line).
func quoteBlock(text string) string {
	return "> " + strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n> ")
}

func sessionLine(w io.Writer, s *rpc.Session) {
	alias := ""
	if s.Alias != "" {
		alias = ", alias " + s.Alias
	}
	fmt.Fprintf(w, "Session %s (%s, %q%s) is %s.\n", s.ID, s.Harness, s.Title, alias, s.State)
	if s.Worktree != nil {
		fmt.Fprintf(w, "Worktree: %s.\n", render.Worktree(*s.Worktree))
	}
}

// diffText renders a session.diff answer: the stat, then the diff.
func diffText(r *rpc.SessionDiffResult) string {
	var b strings.Builder
	sessionLine(&b, &r.Session)
	fmt.Fprintf(&b, "Changes against %s: %s.\n", r.Worktree.BaseCommit, render.DiffStat(r.Summary))
	if r.Diff == "" {
		b.WriteString("No changes.\n")
		return b.String()
	}
	b.WriteString(r.Diff)
	if r.Truncated {
		fmt.Fprintf(&b, "\n[The diff was cut at %d bytes: call diff with a larger max_bytes, or run git diff %s in %s.]\n", len(r.Diff), r.Worktree.BaseCommit, r.Worktree.Path)
	}
	return b.String()
}

// resultText renders one execution result: status, error, usage and the
// final text last, verbatim.
func resultText(b *strings.Builder, r *rpc.Result) {
	fmt.Fprintf(b, "Execution %d %s.\n", r.ExecutionSeq, r.Status)
	if r.Error != nil {
		fmt.Fprintf(b, "Error: %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if u := bytes.TrimSpace(r.Usage); len(u) > 0 && string(u) != "null" {
		// The CLI's words (session read -o text), not the raw keys.
		fmt.Fprintf(b, "Usage: %s\n", render.Usage(r.Usage))
	}
	if r.Diff != nil {
		fmt.Fprintf(b, "Changes: %s (read them with diff).\n", render.DiffStat(*r.Diff))
	}
	switch {
	case r.FinalText != nil:
		b.WriteString("Final text:\n")
		b.WriteString(*r.FinalText)
		if !strings.HasSuffix(*r.FinalText, "\n") {
			b.WriteByte('\n')
		}
	default:
		b.WriteString("No final text was recorded.\n")
	}
}

// sessionResultText renders a cancel or stop result.
func (t *tools) sessionResultText(verb string, r *rpc.SessionResult) *sdk.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "%s. ", verb)
	sessionLine(&b, &r.Session)
	if r.Result != nil {
		resultText(&b, r.Result)
	}
	return textResult(b.String())
}

// dropPrompt leaves a result's prompt (docs/rpc.md, "Result prompt") out
// of what a model reads: a leader wrote it, and echoing up to 512 KiB of it
// back would spend the leader's context for nothing. The result's
// tool_calls ("Result tool calls", up to 64 inputs) go too: the answer is
// what a leader reads, and the calls stay readable with session.read.
func dropPrompt(r *rpc.Result) {
	if r != nil {
		r.Prompt, r.PromptTruncated = nil, false
		r.ToolCalls, r.ToolCallsTruncated = nil, false
	}
}
