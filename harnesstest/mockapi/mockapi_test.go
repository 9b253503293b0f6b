package mockapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

type event struct {
	Name string
	Data map[string]any
	Raw  string
}

// post sends body to srv and returns the response (the caller closes it).
func post(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readSSE parses a whole text/event-stream body.
func readSSE(t *testing.T, r io.Reader) []event {
	t.Helper()
	var evs []event
	var cur event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name != "" {
				evs = append(evs, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Raw = strings.TrimPrefix(line, "data: ")
			if err := json.Unmarshal([]byte(cur.Raw), &cur.Data); err != nil {
				t.Fatalf("bad data %q: %v", cur.Raw, err)
			}
			if cur.Data["type"] != cur.Name {
				t.Errorf("event %q carries type %v", cur.Name, cur.Data["type"])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func stream(t *testing.T, url string, body any) []event {
	t.Helper()
	resp := post(t, context.Background(), url, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	return readSSE(t, resp.Body)
}

func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

// get walks a decoded JSON value along keys.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// claudeBody builds a request shaped like Claude Code's: the prompt follows a
// system-reminder text block, and a "system" message follows it.
func claudeBody(prompt string, extra ...map[string]any) map[string]any {
	msgs := []map[string]any{{
		"role": "user",
		"content": []map[string]any{
			{"type": "text", "text": "<system-reminder>\nattribution\n</system-reminder>\n"},
			{"type": "text", "text": prompt},
		},
	}}
	msgs = append(msgs, extra...)
	msgs = append(msgs, map[string]any{"role": "system", "content": []map[string]any{{"type": "text", "text": "# Environment"}}})
	return map[string]any{
		"model": "claude-test", "stream": true, "max_tokens": 1000,
		"tools":    []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}},
		"messages": msgs,
	}
}

// anthropicText concatenates the text deltas of a stream.
func anthropicText(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			b.WriteString(get(e.Data, "delta", "text").(string))
		}
	}
	return b.String()
}

func stopReason(evs []event) any {
	for _, e := range evs {
		if e.Name == "message_delta" {
			return get(e.Data, "delta", "stop_reason")
		}
	}
	return nil
}

func TestAnthropicText(t *testing.T) {
	srv := mockapi.NewAnthropic(t, mockapi.Script{
		mockapi.Prefix("hello", mockapi.Reply{Text: "Hi there 你好 ●"}),
		mockapi.Contains("multi", mockapi.Reply{Text: mockapi.Lines("row", 50), Chunk: 7}),
	})
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL = %q", srv.URL())
	}

	evs := stream(t, srv.URL()+"/v1/messages?beta=true", claudeBody("hello world"))
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	if got := anthropicText(evs); got != "Hi there 你好 ●" {
		t.Fatalf("text = %q", got)
	}
	if got := stopReason(evs); got != "end_turn" {
		t.Fatalf("stop_reason = %v", got)
	}
	if get(evs[0].Data, "message", "model") != "claude-test" || get(evs[1].Data, "content_block", "type") != "text" {
		t.Fatalf("message_start/content_block_start = %s / %s", evs[0].Raw, evs[1].Raw)
	}
	if get(evs[5].Data, "usage", "output_tokens") == nil {
		t.Fatalf("message_delta without usage: %s", evs[5].Raw)
	}

	evs = stream(t, srv.URL()+"/v1/messages", claudeBody("a multi-line reply please"))
	if got := anthropicText(evs); got != mockapi.Lines("row", 50) {
		t.Fatalf("long text = %q", got)
	}
	if n := len(evs) - 6; n != (len(mockapi.Lines("row", 50))+6)/7 {
		t.Fatalf("%d deltas for a 7-rune chunk size", n)
	}

	evs = stream(t, srv.URL()+"/v1/messages", claudeBody("unmatched prompt that is longer than forty characters"))
	if got := anthropicText(evs); got != "MOCK-REPLY: unmatched prompt that is longer than for" {
		t.Fatalf("default text = %q", got)
	}

	want = []string{"hello world", "a multi-line reply please", "unmatched prompt that is longer than forty characters"}
	if got := srv.Prompts(); !slices.Equal(got, want) {
		t.Fatalf("Prompts = %q", got)
	}
}

func TestAnthropicToolCall(t *testing.T) {
	srv := mockapi.NewAnthropic(t, mockapi.Script{
		mockapi.Prefix("USE-TOOL", mockapi.Reply{Tool: `echo "probe" > probe.txt`, Text: "MOCK-AFTER-TOOL"}),
	})
	url := srv.URL() + "/v1/messages?beta=true"

	evs := stream(t, url, claudeBody("USE-TOOL now"))
	if got := stopReason(evs); got != "tool_use" {
		t.Fatalf("stop_reason = %v", got)
	}
	block := get(evs[1].Data, "content_block").(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "Bash" || block["id"] == "" {
		t.Fatalf("content_block = %v", block)
	}
	var js strings.Builder
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			if get(e.Data, "delta", "type") != "input_json_delta" {
				t.Fatalf("delta = %s", e.Raw)
			}
			js.WriteString(get(e.Data, "delta", "partial_json").(string))
		}
	}
	var input struct{ Command string }
	if err := json.Unmarshal([]byte(js.String()), &input); err != nil || input.Command != `echo "probe" > probe.txt` {
		t.Fatalf("tool input %q: %v", js.String(), err)
	}

	// The follow-up carries the tool_use and its result; Claude Code
	// appends reminders to the tool_result message.
	followUp := claudeBody("USE-TOOL now",
		map[string]any{"role": "assistant", "content": []map[string]any{
			{"type": "tool_use", "id": block["id"], "name": "Bash", "input": map[string]any{"command": input.Command}},
		}},
		map[string]any{"role": "user", "content": []map[string]any{
			{"type": "tool_result", "tool_use_id": block["id"], "content": "done"},
			{"type": "text", "text": "<system-reminder>\nnote\n</system-reminder>"},
		}},
	)
	evs = stream(t, url, followUp)
	if got := anthropicText(evs); got != "MOCK-AFTER-TOOL" {
		t.Fatalf("follow-up text = %q", got)
	}
	if got := stopReason(evs); got != "end_turn" {
		t.Fatalf("follow-up stop_reason = %v", got)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Kind != mockapi.KindPrompt || reqs[1].Kind != mockapi.KindToolResult || reqs[1].Prompt != "USE-TOOL now" {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := srv.Prompts(); !slices.Equal(got, []string{"USE-TOOL now"}) {
		t.Fatalf("Prompts = %q", got)
	}
}

func TestAnthropicTitleRequest(t *testing.T) {
	srv := mockapi.NewAnthropic(t, nil)
	body := map[string]any{
		"model": "claude-test", "stream": true,
		"messages":      []map[string]any{{"role": "user", "content": "Generate a title for: hello"}},
		"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{}}},
	}
	evs := stream(t, srv.URL()+"/v1/messages?beta=true", body)
	var title map[string]string
	if err := json.Unmarshal([]byte(anthropicText(evs)), &title); err != nil || title["title"] == "" {
		t.Fatalf("title reply %q: %v", anthropicText(evs), err)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Kind != mockapi.KindTitle {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := srv.Prompts(); len(got) != 0 {
		t.Fatalf("Prompts = %q", got)
	}
}

func TestAnthropicErrors(t *testing.T) {
	srv := mockapi.NewAnthropic(t, mockapi.Script{
		mockapi.Prefix("BAD", mockapi.Reply{Status: 400, ErrorMessage: "bad prompt"}),
		mockapi.Prefix("BUSY", mockapi.Reply{Status: 529, Failures: 2, Text: "finally"}),
	})
	url := srv.URL() + "/v1/messages"
	check := func(prompt string, status int, typ string) {
		t.Helper()
		resp := post(t, context.Background(), url, claudeBody(prompt))
		defer resp.Body.Close()
		var body struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != status || body.Type != "error" || body.Error.Type != typ {
			t.Fatalf("%s: status %d body %+v", prompt, resp.StatusCode, body)
		}
	}
	check("BAD", 400, "invalid_request_error")
	check("BAD", 400, "invalid_request_error")
	check("BUSY", 529, "overloaded_error")
	check("BUSY", 529, "overloaded_error")
	if got := anthropicText(stream(t, url, claudeBody("BUSY"))); got != "finally" {
		t.Fatalf("after failures: %q", got)
	}
	var statuses []int
	for _, r := range srv.Requests() {
		statuses = append(statuses, r.Status)
	}
	if !slices.Equal(statuses, []int{400, 400, 529, 529, 200}) {
		t.Fatalf("statuses = %v", statuses)
	}

	resp, err := http.Get(srv.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/models: %d", resp.StatusCode)
	}
}

// TestSlowReplyCancel checks that a slow stream stops as soon as the client
// goes away.
func TestSlowReplyCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(testing.TB, mockapi.Script) *mockapi.Server
		path string
		body func(string) any
	}{
		{"anthropic", mockapi.NewAnthropic, "/v1/messages", func(p string) any { return claudeBody(p) }},
		{"responses", mockapi.NewResponses, "/v1/responses", func(p string) any { return codexBody(p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := mockapi.Reply{Text: strings.Repeat("x", 100), Chunk: 1, Delay: 50 * time.Millisecond}
			srv := tc.new(t, mockapi.Script{mockapi.Prefix("SLOW", slow)})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start := time.Now()
			resp := post(t, ctx, srv.URL()+tc.path, tc.body("SLOW"))
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			deltas := 0
			for deltas < 3 {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(line, "delta") && strings.HasPrefix(line, "data: ") {
					deltas++
				}
			}
			if d := time.Since(start); d < 100*time.Millisecond {
				t.Fatalf("3 slow deltas in %v", d)
			}
			cancel()
			// The handler records the request when it returns.
			deadline := time.Now().Add(2 * time.Second)
			for len(srv.Requests()) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the stream did not stop after the client left")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("stream ran %v after cancel (full reply takes 5s)", d)
			}
		})
	}
}

// bigPromptLF is a ~100 KB multi-line prompt with awkward bytes.
func bigPromptLF() string {
	var b strings.Builder
	for i := 0; b.Len() < 100<<10; i++ {
		b.WriteString("line\t\"q\" \\ <x> ● 你好 \r\n\u00a0")
		b.WriteString(strings.Repeat("z", i%50))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestBigPromptByteExact(t *testing.T) {
	p := bigPromptLF()
	a := mockapi.NewAnthropic(t, nil)
	stream(t, a.URL()+"/v1/messages", claudeBody(p))
	r := mockapi.NewResponses(t, nil)
	stream(t, r.URL()+"/v1/responses", codexBody(p))
	for name, srv := range map[string]*mockapi.Server{"anthropic": a, "responses": r} {
		if got := srv.Prompts(); len(got) != 1 || got[0] != p {
			t.Errorf("%s: prompt not byte-exact (%d prompts)", name, len(got))
		}
	}
}

// codexBody builds a request shaped like Codex's: developer messages, an
// environment_context user message, then the prompt as its own user message.
func codexBody(prompt string, extra ...map[string]any) map[string]any {
	text := func(role, s string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []map[string]any{{"type": "input_text", "text": s}}}
	}
	input := []map[string]any{
		text("developer", "You are a coding agent"),
		text("user", "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"),
		text("user", prompt),
	}
	return map[string]any{
		"model": "mock-model", "stream": true,
		"tools": []map[string]any{{"type": "function", "name": "exec_command"}},
		"input": append(input, extra...),
	}
}

func responsesText(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Name == "response.output_text.delta" {
			b.WriteString(e.Data["delta"].(string))
		}
	}
	return b.String()
}

func TestResponsesText(t *testing.T) {
	srv := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Contains("hello", mockapi.Reply{Text: "Hi • › 你好"}),
	})
	evs := stream(t, srv.URL()+"/v1/responses", codexBody("say hello"))
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	if got := responsesText(evs); got != "Hi • › 你好" {
		t.Fatalf("text = %q", got)
	}
	last := evs[len(evs)-1].Data
	if get(last, "response", "id") == nil || get(last, "response", "usage", "total_tokens") == nil {
		t.Fatalf("response.completed = %s", evs[len(evs)-1].Raw)
	}
	done := get(evs[7].Data, "item").(map[string]any)
	if done["type"] != "message" || get(done["content"].([]any)[0], "text") != "Hi • › 你好" {
		t.Fatalf("output_item.done = %s", evs[7].Raw)
	}

	evs = stream(t, srv.URL()+"/v1/responses", codexBody("other"))
	if got := responsesText(evs); got != "MOCK-REPLY: other" {
		t.Fatalf("default text = %q", got)
	}
	if got := srv.Prompts(); !slices.Equal(got, []string{"say hello", "other"}) {
		t.Fatalf("Prompts = %q", got)
	}
}

func TestResponsesToolCall(t *testing.T) {
	srv := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Prefix("USE-TOOL", mockapi.Reply{Tool: "echo probe > probe.txt", Text: "MOCK-AFTER-TOOL"}),
		mockapi.Prefix("ESCALATE", mockapi.Reply{Tool: "touch /etc/x", Escalated: true}),
	})
	url := srv.URL() + "/v1/responses"

	evs := stream(t, url, codexBody("USE-TOOL please"))
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.output_item.done", "response.completed"}
	if got := slices.Compact(names(evs)); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	item := get(evs[len(evs)-2].Data, "item").(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["call_id"] == "" {
		t.Fatalf("item = %v", item)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil || args["cmd"] != "echo probe > probe.txt" || args["yield_time_ms"] != 60000.0 {
		t.Fatalf("arguments %v: %v", item["arguments"], err)
	}
	if _, ok := args["sandbox_permissions"]; ok {
		t.Fatalf("unescalated call asks for escalation: %v", args)
	}

	followUp := codexBody("USE-TOOL please",
		map[string]any{"type": "function_call", "call_id": item["call_id"], "name": "exec_command", "arguments": item["arguments"]},
		map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": "ok"},
	)
	evs = stream(t, url, followUp)
	if got := responsesText(evs); got != "MOCK-AFTER-TOOL" {
		t.Fatalf("follow-up text = %q", got)
	}

	evs = stream(t, url, codexBody("ESCALATE"))
	item = get(evs[len(evs)-2].Data, "item").(map[string]any)
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil || args["sandbox_permissions"] != "require_escalated" {
		t.Fatalf("escalated arguments %v: %v", item["arguments"], err)
	}

	var kinds []mockapi.RequestKind
	for _, r := range srv.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if !slices.Equal(kinds, []mockapi.RequestKind{mockapi.KindPrompt, mockapi.KindToolResult, mockapi.KindPrompt}) {
		t.Fatalf("kinds = %q", kinds)
	}
	if got := srv.Prompts(); !slices.Equal(got, []string{"USE-TOOL please", "ESCALATE"}) {
		t.Fatalf("Prompts = %q", got)
	}
}

func TestResponsesTitleAndErrors(t *testing.T) {
	srv := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Prefix("FAIL", mockapi.Reply{Status: 500, ErrorMessage: "boom"}),
	})
	url := srv.URL() + "/v1/responses"

	// Codex's TUI names threads with a tool-less side request.
	title := codexBody("Generate a concise, single-line task title...\n\nUser prompt:\nhi")
	delete(title, "tools")
	if got := responsesText(stream(t, url, title)); got == "" {
		t.Fatal("empty title reply")
	}

	resp := post(t, context.Background(), url, codexBody("FAIL now"))
	var body struct {
		Error struct{ Message, Type string }
	}
	err := json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 500 || body.Error.Message != "boom" || body.Error.Type != "server_error" {
		t.Fatalf("status %d body %+v err %v", resp.StatusCode, body, err)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Kind != mockapi.KindTitle || reqs[1].Status != 500 {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := srv.Prompts(); !slices.Equal(got, []string{"FAIL now"}) {
		t.Fatalf("Prompts = %q", got)
	}
}

func TestHelpers(t *testing.T) {
	if got := mockapi.DefaultText(strings.Repeat("é", 50)); got != "MOCK-REPLY: "+strings.Repeat("é", 40) {
		t.Fatalf("DefaultText = %q", got)
	}
	if got := mockapi.Lines("L", 3); got != "L 1\nL 2\nL 3" {
		t.Fatalf("Lines = %q", got)
	}
}

func TestClosedServerRefuses(t *testing.T) {
	srv := mockapi.NewAnthropic(nil, nil)
	url := srv.URL()
	srv.Close()
	srv.Close() // idempotent
	if _, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("closed server still answers")
	}
}

// Reply.StopReason ends Claude's message with that stop_reason, and cuts
// Codex's response (response.incomplete, max_output_tokens).
func TestReplyStopReason(t *testing.T) {
	script := mockapi.Script{
		mockapi.Prefix("cut", mockapi.Reply{Text: "PART", StopReason: mockapi.StopMaxTokens}),
		mockapi.Prefix("refuse", mockapi.Reply{Text: "NO", StopReason: mockapi.StopRefusal}),
	}
	claude := mockapi.NewAnthropic(t, script)
	for prompt, want := range map[string]string{"cut it": "max_tokens", "refuse it": "refusal", "other": "end_turn"} {
		if got := stopReason(stream(t, claude.URL()+"/v1/messages", claudeBody(prompt))); got != want {
			t.Errorf("%s: stop_reason %v, want %s", prompt, got, want)
		}
	}
	codex := mockapi.NewResponses(t, script)
	evs := stream(t, codex.URL()+"/v1/responses", codexBody("cut it"))
	last := evs[len(evs)-1]
	if last.Name != "response.incomplete" || get(last.Data, "response", "status") != "incomplete" ||
		get(last.Data, "response", "incomplete_details", "reason") != "max_output_tokens" || responsesText(evs) != "PART" {
		t.Errorf("cut: %s", last.Raw)
	}
	if evs = stream(t, codex.URL()+"/v1/responses", codexBody("other")); evs[len(evs)-1].Name != "response.completed" {
		t.Errorf("other: %s", evs[len(evs)-1].Raw)
	}
}
