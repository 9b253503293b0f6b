// Package mockapi provides loopback mock model servers for end-to-end tests
// of the real coding-agent CLIs: an Anthropic Messages API server for Claude
// Code and an OpenAI Responses API server for Codex.
//
// Both servers listen on 127.0.0.1 on a random port, always answer with SSE
// streams shaped like the real APIs, and pick their behaviour per request
// from a Script keyed on the text of the latest user prompt. Every request is
// recorded so that tests can check what the CLI actually sent, byte for byte.
//
// See README.md for how each CLI wraps the user's text in its requests.
package mockapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Reply is what the mock answers to one prompt.
//
// The zero Reply answers with the default text
// "MOCK-REPLY: <first 40 characters of the prompt>".
type Reply struct {
	// Text is the assistant's reply. When Tool is set, Text is the reply
	// sent after the tool result comes back. Empty means the default text.
	Text string

	// Tool, when non-empty, makes the first answer a shell tool call running
	// this command (Claude: a "Bash" tool_use; Codex: an "exec_command"
	// function_call; Gemini: a "run_shell_command" functionCall). Text is
	// sent once the request carrying the tool's result arrives.
	Tool string

	// Refused, when set, is sent instead of Text when the tool's result
	// says the call was refused (Request.Refused: denied by a person, a
	// hook or session.respond, so the command never ran), followed by ": "
	// and the first line of the reason the CLI passed on, without the
	// CLI's own wrapping. Empty: Text either way.
	Refused string

	// Escalated asks Codex to run Tool outside its sandbox
	// ("sandbox_permissions":"require_escalated"), which forces an approval
	// prompt in the TUI. Ignored by the Anthropic server.
	Escalated bool

	// Chunk is the maximum number of runes per streamed text delta. Zero
	// means DefaultChunk.
	Chunk int

	// Delay is slept before every streamed delta, for slow replies. The
	// stream stops early when the client disconnects.
	Delay time.Duration

	// Status, when non-zero, makes the server answer with this HTTP status
	// and an API-shaped JSON error body instead of a stream (for example
	// 500, 529 or 400).
	Status int

	// ErrorMessage is the message in the error body; empty means a generic
	// one.
	ErrorMessage string

	// Failures limits Status to the first Failures requests matching the
	// rule; later ones are answered normally. Zero means every request fails.
	Failures int

	// Agent, when set, scripts the whole turn like a model calling tools
	// (Tool and Text are then ignored). It is called for every request of
	// the turn with the texts of the tool results the CLI sent back in this
	// turn so far (oldest first, each one string: its text blocks joined by
	// newlines) and returns the next call, or nil and the final text (empty:
	// the default text). The step is the number of tool results after the
	// turn's prompt, so the mock keeps no state and a retried request gets
	// the same answer. At most MaxAgentSteps calls are made per turn.
	Agent func(results []string) (next *ToolCall, final string)

	// StopReason, when set, is the stop reason of the reply's text
	// message instead of the normal one: Claude's stop_reason (StopMaxTokens,
	// StopRefusal); for Codex, StopMaxTokens answers response.incomplete
	// with incomplete_details.reason max_output_tokens. Ignored by the
	// Gemini server.
	StopReason string
}

// StopMaxTokens and StopRefusal are the Messages API's stop reasons of a
// reply cut by the output token limit and of one the model refused.
const (
	StopMaxTokens = "max_tokens"
	StopRefusal   = "refusal"
)

// DefaultChunk is the default number of runes per streamed text delta.
const DefaultChunk = 16

// Rule maps prompts to a Reply. A rule matches when the prompt starts with
// Prefix and contains Contains; empty fields match anything, so a Rule with
// both empty is a catch-all.
type Rule struct {
	Prefix   string
	Contains string
	Reply    Reply
}

// Script is an ordered list of rules: the first matching rule wins. Prompts
// no rule matches get the zero Reply (the default text).
type Script []Rule

// Prefix returns a rule matching prompts that start with p.
func Prefix(p string, r Reply) Rule { return Rule{Prefix: p, Reply: r} }

// Contains returns a rule matching prompts that contain s.
func Contains(s string, r Reply) Rule { return Rule{Contains: s, Reply: r} }

// match returns the index of the first rule matching prompt, or -1.
func (s Script) match(prompt string) int {
	for i, r := range s {
		if strings.HasPrefix(prompt, r.Prefix) && strings.Contains(prompt, r.Contains) {
			return i
		}
	}
	return -1
}

// DefaultText is the reply text used when a prompt matches no rule or its
// Reply has no Text: "MOCK-REPLY: " and the first 40 runes of the prompt.
func DefaultText(prompt string) string {
	n := 0
	for i := range prompt {
		if n == 40 {
			prompt = prompt[:i]
			break
		}
		n++
	}
	return "MOCK-REPLY: " + prompt
}

// Lines returns a multi-line text of n lines "<prefix> 1" ... "<prefix> n"
// separated by newlines, for long replies.
func Lines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s %d", prefix, i)
	}
	return b.String()
}

// RequestKind classifies a recorded request.
type RequestKind string

const (
	// KindPrompt is a request whose latest user message is a new prompt.
	KindPrompt RequestKind = "prompt"
	// KindToolResult is the follow-up request carrying a tool's result.
	KindToolResult RequestKind = "tool_result"
	// KindTitle is a side request the TUIs make to name the session.
	KindTitle RequestKind = "title"
	// KindOther is anything else (unknown paths, undecodable bodies).
	KindOther RequestKind = "other"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string // URL path and query, as sent
	Header http.Header
	Body   []byte
	Kind   RequestKind
	// Prompt is the text of the latest user prompt in the request, exactly
	// as sent (for KindToolResult, the prompt that started the turn).
	Prompt string
	// ToolResults are the texts of the tool results after the turn's prompt
	// (KindToolResult), oldest first, as handed to Reply.Agent.
	ToolResults []string
	// Refused reports that the last tool result refuses the call rather
	// than reporting its run, as each CLI says so: Claude Code's is_error
	// result other than a command's failure ("Exit code N"), which is the
	// deny message itself; Codex's "Rejected(…)" or "rejected by user";
	// Gemini CLI's "Tool execution blocked: …" (a BeforeTool hook) or
	// "Tool execution denied by policy.".
	Refused bool
	// refusal is the reason of a Refused result, unwrapped.
	refusal string
	// Status is the HTTP status the mock answered with.
	Status int
	// Received is when the request arrived (before its body was read);
	// Answered is when the mock finished writing its answer, scripted
	// delays included. Answered minus Received is the "model's" time.
	Received, Answered time.Time
}

// Server is a running mock model server.
type Server struct {
	srv    *httptest.Server
	script Script

	mu       sync.Mutex
	requests []Request
	failures map[int]int // rule index -> error answers sent
	seq      int
}

func newServer(t testing.TB, script Script, h func(*Server, http.ResponseWriter, *http.Request, []byte) Request) *Server {
	s := &Server{script: script, failures: map[int]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := time.Now()
		body, err := readBody(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := h(s, w, r, body)
		rec.Method, rec.Path, rec.Header, rec.Body = r.Method, r.URL.RequestURI(), r.Header.Clone(), body
		rec.Received, rec.Answered = received, time.Now()
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}))
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// URL returns the server's base URL, "http://127.0.0.1:PORT" (no trailing
// slash and no /v1).
func (s *Server) URL() string { return s.srv.URL }

// Close shuts the server down, cutting any streams in flight. It is safe to
// call more than once; the constructors register it with t.Cleanup.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns a copy of every request received so far, in order of
// completion.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Prompts returns the prompt text of every KindPrompt request received so
// far, byte-exact, in order of completion. A prompt the CLI retried (after an
// error answer) appears once per attempt.
func (s *Server) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		if r.Kind == KindPrompt {
			out = append(out, r.Prompt)
		}
	}
	return out
}

// reply picks the Reply for prompt and reports whether it should be an error
// answer this time (Failures is counted per rule).
func (s *Server) reply(prompt string) (Reply, bool) {
	i := s.script.match(prompt)
	if i < 0 {
		return Reply{Text: DefaultText(prompt)}, false
	}
	r := s.script[i].Reply
	if r.Text == "" {
		r.Text = DefaultText(prompt)
	}
	if r.Status == 0 {
		return r, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Failures > 0 && s.failures[i] >= r.Failures {
		return r, false
	}
	s.failures[i]++
	return r, true
}

// refuse marks rec's last tool result refused, for the reason why.
func (rec *Request) refuse(why string) { rec.Refused, rec.refusal = true, why }

// afterTool is the text of a Reply with a Tool once rec brings the tool's
// result: Refused and the reason's first line when the result refuses the
// call and the rule says what to answer then, else Text.
func (r Reply) afterTool(rec Request) string {
	if r.Refused == "" || !rec.Refused {
		return r.Text
	}
	why, _, _ := strings.Cut(strings.TrimSpace(rec.refusal), "\n")
	if n := 200; len(why) > n {
		for !utf8.RuneStart(why[n]) {
			n--
		}
		why = why[:n] + "…"
	}
	if why == "" {
		return r.Refused
	}
	return r.Refused + ": " + why
}

// nextID returns a fresh identifier with the given prefix.
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s%024d", prefix, s.seq)
}

// chunks splits text into pieces of at most n runes (n <= 0: DefaultChunk),
// never splitting a rune. The empty text gives no chunks.
func chunks(text string, n int) []string {
	if n <= 0 {
		n = DefaultChunk
	}
	var out []string
	for text != "" {
		end, count := 0, 0
		for end < len(text) && count < n {
			_, size := utf8.DecodeRuneInString(text[end:])
			end += size
			count++
		}
		out = append(out, text[:end])
		text = text[end:]
	}
	return out
}
