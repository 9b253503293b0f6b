package mockapi_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

var echoID = regexp.MustCompile(`ID:([0-9a-f]+)`)

// echoAgent is the scripted leader model of these tests: it calls the echo
// MCP server's tool, calls it again with the ID the first result carried,
// runs a shell command, and answers with what it saw.
func echoAgent(results []string) (*mockapi.ToolCall, string) {
	switch len(results) {
	case 0:
		return &mockapi.ToolCall{Name: "mcp__echo__echo", Input: map[string]any{"text": "first"}}, ""
	case 1:
		m := echoID.FindStringSubmatch(results[0])
		if m == nil {
			return nil, "NO-ID in " + results[0]
		}
		return &mockapi.ToolCall{Name: "mcp__echo__echo", Input: map[string]any{"text": "again " + m[1]}}, ""
	case 2:
		return ptr(mockapi.Shell("echo SHELL-$((6*7))")), ""
	}
	var id, shell string
	if m := echoID.FindStringSubmatch(results[0]); m != nil {
		id = m[1]
	}
	if strings.Contains(results[2], "SHELL-42") {
		shell = "SHELL-42"
	}
	return nil, "FINAL id=" + id + " second=" + fmt.Sprint(strings.Contains(results[1], "again "+id)) + " " + shell
}

func ptr[T any](v T) *T { return &v }

// agentStreamCall returns the tool call in an Anthropic stream: its name,
// id and decoded input; name is "" when the stream is a text answer.
func anthropicCall(t *testing.T, evs []event) (name, id string, input map[string]any) {
	t.Helper()
	var js strings.Builder
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			b := get(e.Data, "content_block").(map[string]any)
			if b["type"] == "tool_use" {
				name, id = b["name"].(string), b["id"].(string)
			}
		case "content_block_delta":
			if s, ok := get(e.Data, "delta", "partial_json").(string); ok {
				js.WriteString(s)
			}
		}
	}
	if name != "" {
		if err := json.Unmarshal([]byte(js.String()), &input); err != nil {
			t.Fatalf("tool input %q: %v", js.String(), err)
		}
		if got := stopReason(evs); got != "tool_use" {
			t.Fatalf("stop_reason = %v", got)
		}
	}
	return name, id, input
}

func TestAgentAnthropic(t *testing.T) {
	srv := mockapi.NewAnthropic(t, mockapi.Script{
		mockapi.Prefix("LEAD", mockapi.Reply{Agent: echoAgent}),
	})
	url := srv.URL() + "/v1/messages?beta=true"
	var extra []map[string]any
	// The results the "CLI" sends back, in both content forms Claude uses.
	results := []any{
		[]map[string]any{{"type": "text", "text": "ECHO:first ID:00ab12"}},
		"ECHO:again 00ab12 ID:ffee",
		[]map[string]any{{"type": "text", "text": "SHELL-42"}, {"type": "text", "text": "(exit 0)"}},
	}
	var calls []string
	for step := 0; ; step++ {
		evs := stream(t, url, claudeBody("LEAD go", extra...))
		name, id, input := anthropicCall(t, evs)
		if name == "" {
			want := "FINAL id=00ab12 second=true SHELL-42"
			if got := anthropicText(evs); got != want {
				t.Fatalf("final text = %q, want %q", got, want)
			}
			break
		}
		if step >= len(results) {
			t.Fatalf("call %d (%s) after the script's end", step, name)
		}
		// A retried request (same body) gets the same call: the step is
		// taken from the request, not from server state.
		if again, _, in2 := anthropicCall(t, stream(t, url, claudeBody("LEAD go", extra...))); again != name || !mapsEqualJSON(in2, input) {
			t.Fatalf("retry of step %d: %s %v, first %s %v", step, again, in2, name, input)
		}
		b, _ := json.Marshal(input)
		calls = append(calls, name+" "+string(b))
		extra = append(extra,
			map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": id, "name": name, "input": input}}},
			map[string]any{"role": "user", "content": []map[string]any{
				{"type": "tool_result", "tool_use_id": id, "content": results[step]},
				{"type": "text", "text": "<system-reminder>\nnote\n</system-reminder>"},
			}},
		)
	}
	want := []string{
		`mcp__echo__echo {"text":"first"}`,
		`mcp__echo__echo {"text":"again 00ab12"}`,
		`Bash {"command":"echo SHELL-$((6*7))","description":"mockapi tool call"}`,
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls = %q, want %q", calls, want)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	wantResults := []string{"ECHO:first ID:00ab12", "ECHO:again 00ab12 ID:ffee", "SHELL-42\n(exit 0)"}
	if last.Kind != mockapi.KindToolResult || last.Prompt != "LEAD go" || !slices.Equal(last.ToolResults, wantResults) {
		t.Fatalf("last request: kind %s prompt %q results %q", last.Kind, last.Prompt, last.ToolResults)
	}
	if reqs[0].ToolResults != nil {
		t.Fatalf("the prompt request has tool results %q", reqs[0].ToolResults)
	}
	if got := srv.Prompts(); !slices.Equal(got, []string{"LEAD go", "LEAD go"}) {
		t.Fatalf("Prompts = %q", got)
	}
}

func mapsEqualJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// responsesCallItem returns the function_call item of a Responses stream, or
// nil when the stream is a text answer.
func responsesCallItem(evs []event) map[string]any {
	for _, e := range evs {
		if e.Name == "response.output_item.done" {
			if it := get(e.Data, "item").(map[string]any); it["type"] == "function_call" {
				return it
			}
		}
	}
	return nil
}

func TestAgentResponses(t *testing.T) {
	srv := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Prefix("LEAD", mockapi.Reply{Agent: echoAgent}),
	})
	url := srv.URL() + "/v1/responses"
	mcpOut := func(text string) any {
		return []map[string]any{
			{"type": "input_text", "text": "Wall time: 0.0123 seconds\nOutput:"},
			{"type": "input_text", "text": text},
		}
	}
	results := []any{
		mcpOut("ECHO:first ID:00ab12"),
		mcpOut("ECHO:again 00ab12 ID:ffee"),
		"Chunk ID: 1\nWall time: 0.01 seconds\nProcess exited with code 0\nOutput:\nSHELL-42\n",
	}
	var calls []string
	var extra []map[string]any
	for step := 0; ; step++ {
		evs := stream(t, url, codexBody("LEAD go", extra...))
		item := responsesCallItem(evs)
		if item == nil {
			want := "FINAL id=00ab12 second=true SHELL-42"
			if got := responsesText(evs); got != want {
				t.Fatalf("final text = %q, want %q", got, want)
			}
			break
		}
		if step >= len(results) {
			t.Fatalf("call %d (%v) after the script's end", step, item)
		}
		ns, _ := item["namespace"].(string)
		calls = append(calls, ns+"|"+item["name"].(string)+" "+item["arguments"].(string))
		extra = append(extra,
			map[string]any{"type": "function_call", "call_id": item["call_id"], "name": item["name"], "namespace": item["namespace"], "arguments": item["arguments"]},
			map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": results[step]},
		)
	}
	want := []string{
		`mcp__echo|echo {"text":"first"}`,
		`mcp__echo|echo {"text":"again 00ab12"}`,
		`|exec_command {"cmd":"echo SHELL-$((6*7))","yield_time_ms":60000}`,
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls = %q, want %q", calls, want)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	wantResults := []string{
		"Wall time: 0.0123 seconds\nOutput:\nECHO:first ID:00ab12",
		"Wall time: 0.0123 seconds\nOutput:\nECHO:again 00ab12 ID:ffee",
		results[2].(string),
	}
	if last.Kind != mockapi.KindToolResult || last.Prompt != "LEAD go" || !slices.Equal(last.ToolResults, wantResults) {
		t.Fatalf("last request: kind %s prompt %q results %q", last.Kind, last.Prompt, last.ToolResults)
	}
}

// An Agent that never stops is cut at MaxAgentSteps with an error text, and
// a final "" falls back to the default text.
func TestAgentBounds(t *testing.T) {
	srv := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Prefix("LOOP", mockapi.Reply{Agent: func([]string) (*mockapi.ToolCall, string) {
			return ptr(mockapi.Shell("true")), ""
		}}),
		mockapi.Prefix("EMPTY", mockapi.Reply{Agent: func([]string) (*mockapi.ToolCall, string) { return nil, "" }}),
	})
	url := srv.URL() + "/v1/responses"
	var extra []map[string]any
	for i := 0; i < mockapi.MaxAgentSteps; i++ {
		extra = append(extra, map[string]any{"type": "function_call_output", "call_id": "c", "output": "x"})
	}
	if item := responsesCallItem(stream(t, url, codexBody("LOOP", extra[:1]...))); item == nil {
		t.Fatal("LOOP at step 1 did not call")
	}
	evs := stream(t, url, codexBody("LOOP", extra...))
	if item := responsesCallItem(evs); item != nil {
		t.Fatalf("call after MaxAgentSteps: %v", item)
	}
	if got := responsesText(evs); !strings.Contains(got, "MaxAgentSteps") {
		t.Fatalf("text = %q", got)
	}
	if got := responsesText(stream(t, url, codexBody("EMPTY"))); got != mockapi.DefaultText("EMPTY") {
		t.Fatalf("text = %q", got)
	}
}
