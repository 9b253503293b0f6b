package mockapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

// geminiBody builds a request shaped like Gemini CLI 0.61.0's: the first
// user content holds the session context and the prompt as two text
// parts; more contents follow as given.
func geminiBody(prompt string, extra ...map[string]any) map[string]any {
	contents := []map[string]any{{
		"role": "user",
		"parts": []map[string]any{
			{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"},
			{"text": prompt},
		},
	}}
	contents = append(contents, extra...)
	return map[string]any{
		"contents":          contents,
		"systemInstruction": map[string]any{"role": "user", "parts": []map[string]any{{"text": "You are..."}}},
		"tools":             []map[string]any{{"functionDeclarations": []map[string]any{{"name": "run_shell_command"}}}},
		"generationConfig":  map[string]any{"temperature": 1},
	}
}

// geminiStream posts body to the streaming endpoint and returns every
// data frame, decoded, checking the CRLF framing the CLI's parser uses.
func geminiStream(t *testing.T, url string, body any) []map[string]any {
	t.Helper()
	resp := post(t, context.Background(), url+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var out []map[string]any
	for _, frame := range strings.Split(strings.TrimSuffix(string(raw), "\r\n\r\n"), "\r\n\r\n") {
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok {
			t.Fatalf("frame %q is not a data line (stream %q)", frame, raw)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// parts returns the parts of a chunk's first candidate.
func parts(chunk map[string]any) []any {
	cands, _ := chunk["candidates"].([]any)
	if len(cands) == 0 {
		return nil
	}
	p, _ := get(cands[0], "content", "parts").([]any)
	return p
}

func finish(chunk map[string]any) any {
	cands, _ := chunk["candidates"].([]any)
	if len(cands) == 0 {
		return nil
	}
	return get(cands[0], "finishReason")
}

// A text reply is streamed in chunks of Chunk runes, one delta per data
// frame, that join to the text byte for byte; only the last frame ends
// the candidate and carries usage. The prompt is the part after the
// session context, byte-exact.
func TestGeminiTextInChunks(t *testing.T) {
	text := "first line, ünïcode\n\tsecond line with \"quotes\" and $HOME"
	srv := mockapi.NewGemini(t, mockapi.Script{mockapi.Prefix("MULTI", mockapi.Reply{Text: text, Chunk: 5})})
	prompt := "MULTI please\nkeep\tthis"
	chunks := geminiStream(t, srv.URL(), geminiBody(prompt))
	if len(chunks) < 10 {
		t.Fatalf("%d chunks for %d runes at 5 a chunk", len(chunks), len([]rune(text)))
	}
	var b strings.Builder
	for i, c := range chunks {
		p := parts(c)
		if len(p) != 1 {
			t.Fatalf("chunk %d has %d parts", i, len(p))
		}
		b.WriteString(get(p[0], "text").(string))
		last := i == len(chunks)-1
		if (finish(c) == "STOP") != last || (c["usageMetadata"] != nil) != last {
			t.Errorf("chunk %d of %d: finishReason %v, usageMetadata %v", i, len(chunks), finish(c), c["usageMetadata"])
		}
	}
	if b.String() != text {
		t.Errorf("joined text %q, want %q", b.String(), text)
	}
	u := chunks[len(chunks)-1]["usageMetadata"]
	if get(u, "promptTokenCount") != float64(mockapi.GeminiPromptTokens) || get(u, "candidatesTokenCount") != float64(len(chunks)+1) ||
		get(u, "totalTokenCount") != float64(mockapi.GeminiPromptTokens+len(chunks)+1) {
		t.Errorf("usageMetadata %v", u)
	}
	if got := srv.Prompts(); len(got) != 1 || got[0] != prompt {
		t.Errorf("Prompts() = %q", got)
	}
	// Unscripted: the default text.
	chunks = geminiStream(t, srv.URL(), geminiBody("hello there"))
	var all strings.Builder
	for _, c := range chunks {
		all.WriteString(get(parts(c)[0], "text").(string))
	}
	if all.String() != "MOCK-REPLY: hello there" {
		t.Errorf("default reply %q", all.String())
	}
}

// A Tool reply is a run_shell_command functionCall; the follow-up carrying
// the functionResponse is KindToolResult and gets the text. An Agent's
// MCP call is named the way Gemini CLI names MCP tools.
func TestGeminiToolCall(t *testing.T) {
	srv := mockapi.NewGemini(t, mockapi.Script{
		mockapi.Prefix("USE-TOOL", mockapi.Reply{Tool: "echo hi", Text: "AFTER-TOOL"}),
		mockapi.Prefix("LEAD", mockapi.Reply{Agent: func(results []string) (*mockapi.ToolCall, string) {
			if len(results) == 0 {
				return &mockapi.ToolCall{Name: "mcp__dlgt__delegate", Input: map[string]any{"prompt": "x"}}, ""
			}
			return nil, "LED: " + results[0]
		}}),
	})
	chunks := geminiStream(t, srv.URL(), geminiBody("USE-TOOL now"))
	if len(chunks) != 1 || finish(chunks[0]) != "STOP" {
		t.Fatalf("chunks %v", chunks)
	}
	fc := get(parts(chunks[0])[0], "functionCall")
	if get(fc, "name") != "run_shell_command" || get(fc, "args", "command") != "echo hi" {
		t.Fatalf("functionCall %v", fc)
	}
	followUp := geminiBody("USE-TOOL now",
		map[string]any{"role": "model", "parts": []map[string]any{{"functionCall": fc}}},
		map[string]any{"role": "user", "parts": []map[string]any{{"functionResponse": map[string]any{
			"id": "x", "name": "run_shell_command", "response": map[string]any{"output": "Output: hi"}}}}})
	chunks = geminiStream(t, srv.URL(), followUp)
	if got := get(parts(chunks[0])[0], "text"); got != "AFTER-TOOL" {
		t.Errorf("after the tool: %v", got)
	}
	reqs := srv.Requests()
	if reqs[1].Kind != mockapi.KindToolResult || reqs[1].Prompt != "USE-TOOL now" || len(reqs[1].ToolResults) != 1 || reqs[1].ToolResults[0] != "Output: hi" {
		t.Errorf("follow-up recorded as %+v", reqs[1])
	}

	chunks = geminiStream(t, srv.URL(), geminiBody("LEAD it"))
	if fc := get(parts(chunks[0])[0], "functionCall"); get(fc, "name") != "mcp_dlgt_delegate" || get(fc, "args", "prompt") != "x" {
		t.Errorf("MCP call %v", fc)
	}
	chunks = geminiStream(t, srv.URL(), geminiBody("LEAD it",
		map[string]any{"role": "model", "parts": []map[string]any{{"functionCall": map[string]any{"name": "mcp_dlgt_delegate"}}}},
		map[string]any{"role": "user", "parts": []map[string]any{{"functionResponse": map[string]any{
			"name": "mcp_dlgt_delegate", "response": map[string]any{"error": "denied"}}}}}))
	if got := get(parts(chunks[0])[0], "text"); got != "LED: denied" {
		t.Errorf("agent's final text %v", got)
	}
}

// The side calls: the routing classifier's JSON schema gets a conforming
// object (an integer score of at least 1), the summarizer plain text;
// neither is a prompt.
func TestGeminiSideCalls(t *testing.T) {
	srv := mockapi.NewGemini(t, nil)
	body := map[string]any{
		"contents": []map[string]any{{"role": "user", "parts": []map[string]any{{"text": "classify this"}}}},
		"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": map[string]any{
			"type": "object", "properties": map[string]any{
				"complexity_reasoning": map[string]any{"type": "string"},
				"complexity_score":     map[string]any{"type": "integer", "minimum": 1},
			}}},
	}
	resp := post(t, context.Background(), srv.URL()+"/v1beta/models/gemini-3.5-flash-lite:generateContent", body)
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var answer map[string]any
	if err := json.Unmarshal([]byte(get(parts(out)[0], "text").(string)), &answer); err != nil {
		t.Fatalf("classifier answer %v: %v", out, err)
	}
	if answer["complexity_score"] != float64(1) || answer["complexity_reasoning"] != "mock" {
		t.Errorf("classifier answer %v", answer)
	}
	resp = post(t, context.Background(), srv.URL()+"/v1beta/models/gemini-3.5-flash-lite:generateContent", map[string]any{
		"contents": []map[string]any{{"role": "user", "parts": []map[string]any{{"text": "Summarize the user's primary intent"}}}},
	})
	out = nil
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if get(parts(out)[0], "text") != "Mock summary" {
		t.Errorf("summary %v", out)
	}
	if p := srv.Prompts(); len(p) != 0 {
		t.Errorf("side calls listed as prompts: %q", p)
	}
	for _, r := range srv.Requests() {
		if r.Kind != mockapi.KindTitle {
			t.Errorf("%s recorded as %s", r.Path, r.Kind)
		}
	}
}

// Scripted failures answer with the API's error shape; unknown paths 404.
func TestGeminiErrors(t *testing.T) {
	srv := mockapi.NewGemini(t, mockapi.Script{mockapi.Prefix("FAIL", mockapi.Reply{Status: 503, ErrorMessage: "overloaded", Failures: 1})})
	resp := post(t, context.Background(), srv.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse", geminiBody("FAIL once"))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !bytes.Contains(b, []byte(`"status":"UNAVAILABLE"`)) || !bytes.Contains(b, []byte("overloaded")) {
		t.Errorf("failure: %d %s", resp.StatusCode, b)
	}
	var text strings.Builder
	for _, c := range geminiStream(t, srv.URL(), geminiBody("FAIL once")) {
		text.WriteString(get(parts(c)[0], "text").(string))
	}
	if text.String() != "MOCK-REPLY: FAIL once" {
		t.Errorf("second try %q", text.String())
	}
	resp = post(t, context.Background(), srv.URL()+"/v1beta/other", map[string]any{})
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// A slow reply stops streaming when the client goes away (a cancel).
func TestGeminiSlowReplyStopsOnDisconnect(t *testing.T) {
	srv := mockapi.NewGemini(t, mockapi.Script{mockapi.Prefix("SLOW", mockapi.Reply{Text: mockapi.Lines("slow", 200), Chunk: 8, Delay: 100 * time.Millisecond})})
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, srv.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse", geminiBody("SLOW one"))
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	// The handler returns soon after; the request is then recorded.
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream went on after the client left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
