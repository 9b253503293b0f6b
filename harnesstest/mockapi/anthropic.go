package mockapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// NewAnthropic starts a mock Anthropic Messages API server for Claude Code
// (set ANTHROPIC_BASE_URL to its URL). It answers POST /v1/messages (with or
// without ?beta=true) with an SSE stream and POST /v1/messages/count_tokens
// with a token count; anything else gets 404. It is closed by t.Cleanup;
// t may be nil, and then the caller must call Close.
func NewAnthropic(t testing.TB, script Script) *Server {
	return newServer(t, script, (*Server).serveAnthropic)
}

type anthropicRequest struct {
	Model        string             `json:"model"`
	Messages     []anthropicMessage `json:"messages"`
	Tools        []json.RawMessage  `json:"tools"`
	OutputConfig struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"output_config"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`  // tool_result: a string or a list of blocks
	IsError bool            `json:"is_error"` // tool_result: the call failed or was refused
}

// blocks decodes a message's content, turning the string form into one text
// block.
func (m anthropicMessage) blocks() []anthropicBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// anthropicPrompt returns the user's text in one message: the last text
// block that is not a "<system-reminder>" Claude Code adds around it,
// without the "<current_datetime>" Copilot CLI puts before it.
func anthropicPrompt(m anthropicMessage) (string, bool) {
	bs := m.blocks()
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		if b.Type == "text" && !strings.HasPrefix(b.Text, "<system-reminder>") {
			return stripCopilotDatetime(b.Text), true
		}
	}
	return "", false
}

func hasToolResult(m anthropicMessage) bool {
	for _, b := range m.blocks() {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// toolResults returns the texts of the tool_result blocks in the messages
// after index from, oldest first, and whether the last one refuses the
// call: an error result that is not a command's failure ("Exit code N"),
// or Copilot CLI's "Permission denied …" result; its text is the reason.
func (req *anthropicRequest) toolResults(from int) ([]string, bool) {
	var out []string
	refused := false
	for _, m := range req.Messages[from+1:] {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				text := textOf(b.Content)
				out = append(out, text)
				refused = b.IsError && !strings.HasPrefix(text, "Exit code ") || copilotRefused(text)
			}
		}
	}
	return out, refused
}

// classify finds the kind of request, the prompt that drives it and the
// index of the prompt's message (-1 when there is none).
func (req *anthropicRequest) classify() (RequestKind, string, int) {
	last := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last = i
			break
		}
	}
	if last < 0 {
		return KindOther, "", -1
	}
	kind := KindPrompt
	switch {
	case req.OutputConfig.Format.Type == "json_schema" || len(req.Tools) == 0:
		kind = KindTitle
	case hasToolResult(req.Messages[last]):
		kind = KindToolResult
	}
	for i := last; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" || (kind == KindToolResult && hasToolResult(m)) {
			continue
		}
		if p, ok := anthropicPrompt(m); ok {
			return kind, p, i
		}
	}
	return kind, "", -1
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request, body []byte) Request {
	rec := Request{Kind: KindOther}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		return rec.answerJSON(w, http.StatusOK, obj{"input_tokens": len(body) / 4})
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		return rec.answerError(w, http.StatusNotFound, anthropicError, "mockapi: no such endpoint "+r.URL.Path)
	}
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return rec.answerError(w, http.StatusBadRequest, anthropicError, "mockapi: "+err.Error())
	}
	var at int
	rec.Kind, rec.Prompt, at = req.classify()
	if rec.Kind == KindToolResult && at >= 0 {
		var refused bool
		if rec.ToolResults, refused = req.toolResults(at); refused {
			rec.refuse(rec.ToolResults[len(rec.ToolResults)-1])
		}
	}
	model := modelOr(req.Model)

	if rec.Kind == KindTitle {
		text := "Mock session"
		if req.OutputConfig.Format.Type == "json_schema" {
			text = `{"title":"Mock session"}`
		}
		rec.Status = http.StatusOK
		s.streamAnthropic(w, r, model, Reply{Text: text}, nil)
		return rec
	}

	reply, call, ok := s.scripted(w, &rec, anthropicError)
	if !ok {
		return rec
	}
	if call != nil && call.Name == ShellTool {
		call = &ToolCall{Name: shellToolName(req.Tools), Input: obj{"command": call.Input["command"], "description": "mockapi tool call"}}
	}
	if call != nil {
		call = &ToolCall{Name: mcpToolName(req.Tools, call.Name), Input: call.Input}
	}
	s.streamAnthropic(w, r, model, reply, call)
	return rec
}

// streamAnthropic streams one assistant message: the reply's text, or a
// tool_use of call when it is not nil.
func (s *Server) streamAnthropic(w http.ResponseWriter, r *http.Request, model string, reply Reply, call *ToolCall) {
	e := startSSE(w, r)
	toolCall := call != nil
	var pieces []string
	if toolCall {
		input := call.Input
		if input == nil {
			input = obj{}
		}
		in, _ := json.Marshal(input)
		pieces = chunks(string(in), reply.Chunk)
	} else {
		pieces = chunks(reply.Text, reply.Chunk)
	}
	msg := obj{
		"id": s.nextID("msg_mock"), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
	block := obj{"type": "text", "text": ""}
	stop := "end_turn"
	if reply.StopReason != "" {
		stop = reply.StopReason
	}
	if toolCall {
		block = obj{"type": "tool_use", "id": s.nextID("toolu_mock"), "name": call.Name, "input": obj{}}
		stop = "tool_use"
	}
	e.event("message_start", obj{"type": "message_start", "message": msg})
	e.event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": block})
	e.event("ping", obj{"type": "ping"})
	for _, p := range pieces {
		delta := obj{"type": "text_delta", "text": p}
		if toolCall {
			delta = obj{"type": "input_json_delta", "partial_json": p}
		}
		e.sleep(reply.Delay)
		e.event("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": delta})
	}
	e.event("content_block_stop", obj{"type": "content_block_stop", "index": 0})
	e.event("message_delta", obj{
		"type":  "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil},
		"usage": obj{"output_tokens": len(pieces) + 1},
	})
	e.event("message_stop", obj{"type": "message_stop"})
}

func anthropicError(status int, msg string) obj {
	typ := "api_error"
	switch status {
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case 529:
		typ = "overloaded_error"
	}
	return obj{"type": "error", "error": obj{"type": typ, "message": msg}}
}
