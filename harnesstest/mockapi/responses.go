package mockapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// NewResponses starts a mock OpenAI Responses API server for Codex (use
// URL()+"/v1" as the provider's base_url with wire_api = "responses"). It
// answers POST /v1/responses with an SSE stream; anything else gets 404. It
// is closed by t.Cleanup; t may be nil, and then the caller must call Close.
func NewResponses(t testing.TB, script Script) *Server {
	return newServer(t, script, (*Server).serveResponses)
}

type responsesRequest struct {
	Model string            `json:"model"`
	Input json.RawMessage   `json:"input"` // a string or a list of items
	Tools []json.RawMessage `json:"tools"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of parts
	Output  json.RawMessage `json:"output"`  // function_call_output: a string or a list of parts
}

type responsesPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// codexContext lists the prefixes of the context blocks Codex sends as user
// messages of their own next to the user's text.
var codexContext = []string{
	"<environment_context>",
	"<user_instructions>",
	"<skills_instructions>",
	"<turn_aborted>",
	"<user_shell_command>",
	"# AGENTS.md instructions",
}

func isCodexContext(text string) bool {
	for _, p := range codexContext {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// responsesPrompt returns the user's text in one message item: its last
// text part that is not a Codex context block.
func responsesPrompt(it responsesItem) (string, bool) {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s, !isCodexContext(s)
	}
	var parts []responsesPart
	_ = json.Unmarshal(it.Content, &parts)
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if (p.Type == "input_text" || p.Type == "text") && !isCodexContext(p.Text) {
			return p.Text, true
		}
	}
	return "", false
}

// classify finds the kind of request, the prompt that drives it and the
// texts of the function_call_output items after the prompt, oldest first.
func (req *responsesRequest) classify() (RequestKind, string, []string) {
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		return KindPrompt, s, nil
	}
	var items []responsesItem
	if json.Unmarshal(req.Input, &items) != nil {
		return KindOther, "", nil
	}
	kind := KindPrompt
	if len(req.Tools) == 0 {
		kind = KindTitle
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		switch {
		case it.Type == "function_call_output" && kind == KindPrompt:
			kind = KindToolResult
		case it.Type == "message" && it.Role == "user":
			if p, ok := responsesPrompt(it); ok {
				var results []string
				for _, after := range items[i+1:] {
					if after.Type == "function_call_output" {
						results = append(results, textOf(after.Output))
					}
				}
				return kind, p, results
			}
		}
	}
	return kind, "", nil
}

// codexRejected is the reason in Codex's refusal of a command, as its
// function_call_output says it: `… Rejected("<reason>") …`, the quotes
// escaped once or not.
var codexRejected = regexp.MustCompile(`Rejected\(\\?"(.*?)\\?"\)`)

// codexRefusal reports whether a function_call_output of Codex says the
// command was refused (a hook's or session.respond's denial, "rejected by
// user"), and why.
func codexRefusal(output string) (string, bool) {
	if m := codexRejected.FindStringSubmatch(output); m != nil {
		// Codex prints the reason as Rust's debug form: \n, \" and \\.
		return strings.NewReplacer(`\n`, "\n", `\"`, `"`, `\\`, `\`).Replace(m[1]), true
	}
	if strings.Contains(output, "rejected by user") {
		return output, true
	}
	return "", false
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request, body []byte) Request {
	rec := Request{Kind: KindOther}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		return rec.answerError(w, http.StatusNotFound, responsesError, "mockapi: no such endpoint "+r.URL.Path)
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return rec.answerError(w, http.StatusBadRequest, responsesError, "mockapi: "+err.Error())
	}
	var results []string
	rec.Kind, rec.Prompt, results = req.classify()
	if rec.Kind == KindToolResult {
		rec.ToolResults = results
		if why, ok := codexRefusal(results[len(results)-1]); ok {
			rec.refuse(why)
		}
	}
	model := modelOr(req.Model)
	if rec.Kind == KindTitle {
		rec.Status = http.StatusOK
		s.streamResponses(w, r, model, Reply{Text: "Mock session"}, nil)
		return rec
	}
	reply, call, ok := s.scripted(w, &rec, responsesError)
	if !ok {
		return rec
	}
	s.streamResponses(w, r, model, reply, call)
	return rec
}

// streamResponses streams one response: a message with the reply's text, or
// a function_call for call when it is not nil (ShellTool: exec_command, with
// reply.Escalated honoured; "mcp__<server>__<tool>": <tool> in namespace
// "mcp__<server>").
func (s *Server) streamResponses(w http.ResponseWriter, r *http.Request, model string, reply Reply, call *ToolCall) {
	e := startSSE(w, r)
	respID := s.nextID("resp_mock")
	resp := obj{
		"id": respID, "object": "response", "created_at": time.Now().Unix(),
		"status": "in_progress", "model": model, "output": []any{},
	}
	e.event("response.created", obj{"type": "response.created", "response": resp})
	e.event("response.in_progress", obj{"type": "response.in_progress", "response": resp})

	var item obj
	var pieces []string
	if call != nil {
		name, namespace, args := call.Name, "", obj(call.Input)
		if args == nil {
			args = obj{}
		}
		if name == ShellTool {
			// yield_time_ms: Codex returns a command still running after
			// 10 s by default as a background process the model must poll
			// (a dlgt session create on a loaded machine can take that
			// long); the mock's model waits for the command instead.
			name, args = "exec_command", obj{"cmd": call.Input["command"], "yield_time_ms": 60000}
			if reply.Escalated {
				args["sandbox_permissions"] = "require_escalated"
				args["justification"] = "mockapi asks to run this outside the sandbox"
			}
		} else if ns, tool, ok := splitMCP(name); ok {
			name, namespace = tool, ns
		}
		b, _ := json.Marshal(args)
		item, pieces = s.responsesCall(e, name, namespace, string(b), reply)
	} else {
		item, pieces = s.responsesMessage(e, reply)
	}

	done := "response.completed"
	resp["status"] = "completed"
	if reply.StopReason == StopMaxTokens {
		// The Responses API's form of a reply cut at the token limit.
		resp["status"], done = "incomplete", "response.incomplete"
		resp["incomplete_details"] = obj{"reason": "max_output_tokens"}
	}
	resp["output"] = []any{item}
	resp["usage"] = obj{
		"input_tokens": 10, "input_tokens_details": obj{"cached_tokens": 0},
		"output_tokens": len(pieces) + 1, "output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens": len(pieces) + 11,
	}
	e.event(done, obj{"type": done, "response": resp})
}

// responsesMessage streams an assistant message item carrying reply.Text and
// returns the finished item and the deltas sent.
func (s *Server) responsesMessage(e *sse, reply Reply) (obj, []string) {
	id := s.nextID("msg_mock")
	e.event("response.output_item.added", obj{
		"type": "response.output_item.added", "output_index": 0,
		"item": obj{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}},
	})
	at := obj{"item_id": id, "output_index": 0, "content_index": 0}
	with := func(typ string, kv obj) obj {
		m := obj{"type": typ}
		for k, v := range at {
			m[k] = v
		}
		for k, v := range kv {
			m[k] = v
		}
		return m
	}
	e.event("response.content_part.added", with("response.content_part.added",
		obj{"part": obj{"type": "output_text", "text": "", "annotations": []any{}}}))
	pieces := chunks(reply.Text, reply.Chunk)
	for _, p := range pieces {
		e.sleep(reply.Delay)
		e.event("response.output_text.delta", with("response.output_text.delta", obj{"delta": p}))
	}
	part := obj{"type": "output_text", "text": reply.Text, "annotations": []any{}}
	e.event("response.output_text.done", with("response.output_text.done", obj{"text": reply.Text}))
	e.event("response.content_part.done", with("response.content_part.done", obj{"part": part}))
	item := obj{"type": "message", "id": id, "status": "completed", "role": "assistant", "content": []any{part}}
	e.event("response.output_item.done", obj{"type": "response.output_item.done", "output_index": 0, "item": item})
	return item, pieces
}

// responsesCall streams a function_call item of the named function (in
// namespace, when not empty) with the given JSON arguments and returns the
// finished item and the deltas sent.
func (s *Server) responsesCall(e *sse, name, namespace, args string, reply Reply) (obj, []string) {
	id, callID := s.nextID("fc_mock"), s.nextID("call_mock")
	item := obj{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": "", "status": "in_progress"}
	if namespace != "" {
		item["namespace"] = namespace
	}
	e.event("response.output_item.added", obj{"type": "response.output_item.added", "output_index": 0, "item": item})
	pieces := chunks(args, reply.Chunk)
	for _, p := range pieces {
		e.sleep(reply.Delay)
		e.event("response.function_call_arguments.delta", obj{
			"type": "response.function_call_arguments.delta", "item_id": id, "output_index": 0, "delta": p,
		})
	}
	e.event("response.function_call_arguments.done", obj{
		"type": "response.function_call_arguments.done", "item_id": id, "output_index": 0, "arguments": args,
	})
	done := obj{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": args, "status": "completed"}
	if namespace != "" {
		done["namespace"] = namespace
	}
	e.event("response.output_item.done", obj{"type": "response.output_item.done", "output_index": 0, "item": done})
	return done, pieces
}

func responsesError(status int, msg string) obj {
	typ, code := "server_error", "server_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case status >= 400 && status < 500:
		typ, code = "invalid_request_error", "invalid_request"
	}
	return obj{"error": obj{"message": msg, "type": typ, "param": nil, "code": code}}
}
