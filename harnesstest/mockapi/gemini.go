package mockapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// NewGemini starts a mock Gemini API (generativelanguage v1beta) server for
// Gemini CLI (set GOOGLE_GEMINI_BASE_URL to its URL, GEMINI_API_KEY to
// anything, and security.auth.selectedType to "gemini-api-key" in the
// CLI's settings). It answers
//
//   - POST /v1beta/models/<model>:streamGenerateContent?alt=sse, every
//     main-agent call, with an SSE stream of GenerateContentResponse
//     deltas, one per text chunk (Reply.Chunk runes each) or one
//     functionCall part, the last adding finishReason STOP and
//     usageMetadata;
//   - POST /v1beta/models/<model>:generateContent, the CLI's side calls
//     (the routing classifier, the session summarizer), with one JSON
//     answer: an object shaped by the request's response schema when it
//     has one (KindTitle), else the scripted reply;
//   - POST …:countTokens and GET /v1beta/models[/<model>], which Gemini
//     CLI 0.61.0 was never seen to call, with plausible answers.
//
// Anything else gets 404. It is closed by t.Cleanup; t may be nil, and
// then the caller must call Close.
func NewGemini(t testing.TB, script Script) *Server {
	return newServer(t, script, (*Server).serveGemini)
}

// Gemini's per-request usage as the mock reports it: GeminiPromptTokens
// prompt tokens for every request, and one candidate token per streamed
// piece plus one.
const GeminiPromptTokens = 10

// geminiSessionContext starts the context block Gemini CLI sends as the
// first text part of a conversation's first user content.
const geminiSessionContext = "<session_context>"

type geminiRequest struct {
	Contents         []geminiContent   `json:"contents"`
	Tools            []json.RawMessage `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             *string `json:"text"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// geminiPrompt returns the user's text in one content: its last text part
// that is not the CLI's session context.
func geminiPrompt(c geminiContent) (string, bool) {
	for i := len(c.Parts) - 1; i >= 0; i-- {
		p := c.Parts[i]
		if p.Text != nil && !strings.HasPrefix(*p.Text, geminiSessionContext) {
			return *p.Text, true
		}
	}
	return "", false
}

// geminiResult is the text of a functionResponse's response: its
// "output" or "error" string, else the response's JSON.
func geminiResult(raw json.RawMessage) string {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Output != nil:
			return *r.Output
		case r.Error != nil:
			return *r.Error
		}
	}
	return string(raw)
}

// classify finds the kind of request, the prompt that drives it and the
// texts of the function responses after the prompt, oldest first.
func (req *geminiRequest) classify() (RequestKind, string, []string) {
	kind := KindPrompt
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role != "" && c.Role != "user" {
			continue
		}
		if p, ok := geminiPrompt(c); ok {
			var results []string
			for _, after := range req.Contents[i+1:] {
				for _, part := range after.Parts {
					if part.FunctionResponse != nil {
						results = append(results, geminiResult(part.FunctionResponse.Response))
					}
				}
			}
			if len(results) > 0 {
				kind = KindToolResult
			}
			return kind, p, results
		}
	}
	return KindOther, "", nil
}

// geminiPath matches "/v1beta/models/<model>:<method>" (v1 and v1alpha
// too).
var geminiPath = regexp.MustCompile(`^/v1(?:beta|alpha)?/models/([^/:]+):([A-Za-z]+)$`)

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, body []byte) Request {
	rec := Request{Kind: KindOther}
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/models") {
		if m := strings.TrimPrefix(r.URL.Path[strings.Index(r.URL.Path, "/models"):], "/models"); strings.Trim(m, "/") != "" {
			return rec.answerJSON(w, http.StatusOK, obj{"name": "models/" + strings.Trim(m, "/"), "inputTokenLimit": 1048576, "outputTokenLimit": 65536})
		}
		return rec.answerJSON(w, http.StatusOK, obj{"models": []any{
			obj{"name": "models/gemini-2.5-pro", "supportedGenerationMethods": []string{"generateContent", "countTokens"}},
			obj{"name": "models/gemini-2.5-flash", "supportedGenerationMethods": []string{"generateContent", "countTokens"}},
		}})
	}
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		return rec.answerError(w, http.StatusNotFound, geminiError, "mockapi: no such endpoint "+r.URL.Path)
	}
	model, method := m[1], m[2]
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return rec.answerError(w, http.StatusBadRequest, geminiError, "mockapi: "+err.Error())
	}
	if method == "countTokens" {
		return rec.answerJSON(w, http.StatusOK, obj{"totalTokens": len(body)/4 + 1})
	}
	if method != "streamGenerateContent" && method != "generateContent" {
		return rec.answerError(w, http.StatusNotFound, geminiError, "mockapi: unknown method "+method)
	}
	var results []string
	rec.Kind, rec.Prompt, results = req.classify()
	if rec.Kind == KindToolResult {
		rec.ToolResults = results
		last := results[len(results)-1]
		if why, ok := strings.CutPrefix(last, "Tool execution blocked: "); ok {
			rec.refuse(why)
		} else if strings.HasPrefix(last, "Tool execution denied by policy.") {
			rec.refuse(last)
		}
	}
	schema := req.GenerationConfig.ResponseJSONSchema
	if len(schema) == 0 {
		schema = req.GenerationConfig.ResponseSchema
	}
	if len(schema) > 0 || req.GenerationConfig.ResponseMimeType == "application/json" || (len(req.Tools) == 0 && method == "generateContent") {
		// A side call: the routing classifier (a JSON schema) or the
		// session summarizer (plain text). Never scripted, never listed
		// by Prompts.
		rec.Kind, rec.Status = KindTitle, http.StatusOK
		text := "Mock summary"
		if len(schema) > 0 || req.GenerationConfig.ResponseMimeType == "application/json" {
			b, _ := json.Marshal(fromSchema(schema, 0))
			text = string(b)
		}
		if method == "generateContent" {
			return rec.answerJSON(w, rec.Status, geminiChunk(model, []any{obj{"text": text}}, true, 1))
		}
		e := startSSE(w, r)
		e.data(geminiChunk(model, []any{obj{"text": text}}, true, 1))
		return rec
	}
	if rec.Kind == KindOther {
		rec.Kind = KindPrompt
	}
	reply, call, ok := s.scripted(w, &rec, geminiError)
	if !ok {
		return rec
	}
	if method == "generateContent" {
		var parts []any
		if call != nil {
			parts = []any{geminiCall(*call)}
		} else {
			parts = []any{obj{"text": reply.Text}}
		}
		return rec.answerJSON(w, rec.Status, geminiChunk(model, parts, true, 2))
	}
	e := startSSE(w, r)
	if call != nil {
		e.sleep(reply.Delay)
		e.data(geminiChunk(model, []any{geminiCall(*call)}, true, 2))
		return rec
	}
	pieces := chunks(reply.Text, reply.Chunk)
	if len(pieces) == 0 {
		pieces = []string{""}
	}
	for i, p := range pieces {
		e.sleep(reply.Delay)
		e.data(geminiChunk(model, []any{obj{"text": p}}, i == len(pieces)-1, len(pieces)+1))
	}
	return rec
}

// geminiCall is the functionCall part for call: ShellTool is Gemini CLI's
// run_shell_command {command, description}; "mcp__<server>__<tool>" is
// its "mcp_<server>_<tool>"; any other name is sent as it is.
func geminiCall(call ToolCall) obj {
	name, args := call.Name, obj(call.Input)
	if args == nil {
		args = obj{}
	}
	if name == ShellTool {
		name, args = "run_shell_command", obj{"command": call.Input["command"], "description": "mockapi runs a command"}
	} else if ns, tool, ok := splitMCP(name); ok {
		name = "mcp_" + strings.TrimPrefix(ns, "mcp__") + "_" + tool
	}
	return obj{"functionCall": obj{"name": name, "args": args}}
}

// geminiChunk is one GenerateContentResponse; the last one of a stream
// carries finishReason STOP and usageMetadata with candidates output
// tokens.
func geminiChunk(model string, parts []any, last bool, candidates int) obj {
	cand := obj{"content": obj{"role": "model", "parts": parts}, "index": 0}
	d := obj{"candidates": []any{cand}, "modelVersion": model}
	if last {
		cand["finishReason"] = "STOP"
		d["usageMetadata"] = obj{
			"promptTokenCount": GeminiPromptTokens, "candidatesTokenCount": candidates,
			"totalTokenCount": GeminiPromptTokens + candidates,
		}
	}
	return d
}

// fromSchema makes a value satisfying a (JSON Schema or OpenAPI) schema
// well enough for Gemini CLI's side calls: the first enum value, objects
// with every property, integers and numbers at their minimum or 1 (the
// routing classifier rejects a complexity score of 0), "mock" strings.
func fromSchema(raw json.RawMessage, depth int) any {
	var s struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Minimum    *float64                   `json:"minimum"`
	}
	if depth > 8 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	typ := strings.ToLower(fmt.Sprint(s.Type))
	switch typ {
	case "array":
		return []any{}
	case "integer", "number":
		if s.Minimum != nil && *s.Minimum > 1 {
			return *s.Minimum
		}
		return 1
	case "boolean":
		return false
	case "string":
		return "mock"
	}
	out := obj{}
	for k, v := range s.Properties {
		out[k] = fromSchema(v, depth+1)
	}
	return out
}

func geminiError(status int, msg string) obj {
	st := "INTERNAL"
	switch {
	case status == http.StatusTooManyRequests:
		st = "RESOURCE_EXHAUSTED"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		st = "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		st = "NOT_FOUND"
	case status >= 400 && status < 500:
		st = "INVALID_ARGUMENT"
	case status == http.StatusServiceUnavailable:
		st = "UNAVAILABLE"
	}
	return obj{"error": obj{"code": status, "message": msg, "status": st}}
}
