package harness

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// The fixtures are real transcripts of the pinned CLIs against mockapi
// (large request-dump lines dropped, paths replaced), two turns each:
// "please write now.txt" (a Bash tool call, then a text reply: two model
// requests) and "hello there" (one). mockapi answers every request with
// input_tokens 10 and output_tokens = deltas + 1.
const (
	claudeTurn1 = "6c6e35e5-eaed-4c79-b0d5-ef1f322f7bc5"
	claudeTurn2 = "18a0b58e-94bb-46ee-8bcf-8a4ce29212e3"
	codexTurn1  = "01a23e48-2541-7dd2-bc34-dc9921345638"
	codexTurn2  = "01a23e48-2da8-7290-b4b7-f6fa4e9b73dd"
)

func usageOnly(u *rpc.Usage, _ TurnState) *rpc.Usage { return u }

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func usageOf(in, out, read, write, reasoning, requests int64) *rpc.Usage {
	return &rpc.Usage{
		InputTokens: in, OutputTokens: out, CacheReadInputTokens: read, CacheCreationInputTokens: write,
		ReasoningOutputTokens: reasoning, Requests: requests, TotalTokens: in + out + read + write,
	}
}

func checkUsage(t *testing.T, what string, got, want *rpc.Usage) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && *got != *want) {
		t.Errorf("%s: usage %s, want %s", what, got.JSON(), want.JSON())
	}
}

func TestClaudeTurnUsageFixture(t *testing.T) {
	data := readFixture(t, "claude-usage.jsonl")
	c := Claude{}
	checkUsage(t, "turn 1", usageOnly(c.TurnUsage(bytes.NewReader(data), claudeTurn1)), usageOf(20, 9, 0, 0, 0, 2))
	checkUsage(t, "turn 2", usageOnly(c.TurnUsage(bytes.NewReader(data), claudeTurn2)), usageOf(10, 3, 0, 0, 0, 1))
	checkUsage(t, "another turn", usageOnly(c.TurnUsage(bytes.NewReader(data), "no-such-prompt")), nil)
	// No turn id: the first turn read is taken.
	checkUsage(t, "first turn", usageOnly(c.TurnUsage(bytes.NewReader(data), "")), usageOf(20, 9, 0, 0, 0, 2))
	// Read from where turn 2 started (the daemon seeks to the execution's
	// start): turn 1's lines are not there.
	at := bytes.Index(data, []byte(`"promptId":"`+claudeTurn2))
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	checkUsage(t, "from turn 2", usageOnly(c.TurnUsage(bytes.NewReader(data[start:]), "")), usageOf(10, 3, 0, 0, 0, 1))
	checkUsage(t, "turn 1 from turn 2", usageOnly(c.TurnUsage(bytes.NewReader(data[start:]), claudeTurn1)), nil)
	checkUsage(t, "empty", usageOnly(c.TurnUsage(bytes.NewReader(nil), claudeTurn1)), nil)
}

// fixtureLine returns the fixture's first line containing sub, decoded.
func fixtureLine(t *testing.T, data []byte, sub string) map[string]any {
	t.Helper()
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte(sub)) {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no fixture line contains %q", sub)
	return nil
}

func jsonLine(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// A message written as several lines (one per content block, as Claude
// Code does for thinking + text) is counted once, with its final figures;
// cache and thinking tokens are carried; Claude's own API-error messages
// and lines of other turns are not counted.
// Claude Code may run its Stop hook before the turn's last message is in
// the transcript: a turn is open from its prompt line, and ended only once
// a message of it ended for another reason than a tool call; a transcript
// holding nothing of the turn leaves it unseen.
func TestClaudeTurnRecorded(t *testing.T) {
	data := readFixture(t, "claude-usage.jsonl")
	at := func(sub string) int {
		i := bytes.Index(data, []byte(sub))
		if i < 0 {
			t.Fatalf("fixture has no %q", sub)
		}
		return bytes.IndexByte(data[i:], '\n') + i + 1 // the end of that line
	}
	cases := []struct {
		name string
		upTo int
		turn string
		want TurnState
		u    *rpc.Usage
	}{
		{"empty", 0, claudeTurn1, TurnUnseen, nil},
		{"empty, no turn id", 0, "", TurnUnseen, nil},
		{"prompt only", at(`"promptId":"` + claudeTurn1), claudeTurn1, TurnOpen, nil},
		{"prompt only, no turn id", at(`"promptId":"` + claudeTurn1), "", TurnOpen, nil},
		{"after the tool call", at(`"stop_reason":"tool_use"`), claudeTurn1, TurnOpen, usageOf(10, 6, 0, 0, 0, 1)},
		{"after the tool result", at(`"tool_use_id"`), claudeTurn1, TurnOpen, usageOf(10, 6, 0, 0, 0, 1)},
		{"whole turn 1", at(`"text":"Wrote the date to now.txt."`), claudeTurn1, TurnEnded, usageOf(20, 9, 0, 0, 0, 2)},
		{"turn 2 before its prompt", at(`"text":"Wrote the date to now.txt."`), claudeTurn2, TurnUnseen, nil},
		{"turn 2 before its reply", at(`"promptId":"` + claudeTurn2), claudeTurn2, TurnOpen, nil},
		{"whole file", len(data), claudeTurn2, TurnEnded, usageOf(10, 3, 0, 0, 0, 1)},
		{"whole file, another turn", len(data), "no-such-prompt", TurnUnseen, nil},
	}
	for _, c := range cases {
		u, st := Claude{}.TurnUsage(bytes.NewReader(data[:c.upTo]), c.turn)
		if st != c.want {
			t.Errorf("%s: state %v, want %v", c.name, st, c.want)
		}
		checkUsage(t, c.name, u, c.u)
	}
	// A failed request: Claude Code's own error message ends the turn.
	prompt := fixtureLine(t, data, `"promptId":"`+claudeTurn2)
	reply := fixtureLine(t, data, `"text":"MOCK-REPLY: hello there"`)
	reply["isApiErrorMessage"] = true
	reply["message"].(map[string]any)["model"] = "<synthetic>"
	reply["message"].(map[string]any)["stop_reason"] = "stop_sequence"
	if u, st := (Claude{}).TurnUsage(strings.NewReader(jsonLine(t, prompt)+jsonLine(t, reply)), claudeTurn2); st != TurnEnded || u != nil {
		t.Errorf("API error: state %v usage %s, want ended and none", st, u.JSON())
	}
}

func TestClaudeTurnUsageOneMessageSeveralLines(t *testing.T) {
	data := readFixture(t, "claude-usage.jsonl")
	user := fixtureLine(t, data, `"promptId":"`+claudeTurn2)
	asst := fixtureLine(t, data, `"text":"MOCK-REPLY: hello there"`)
	var b strings.Builder
	b.WriteString(jsonLine(t, user))
	msg := asst["message"].(map[string]any)
	usage := map[string]any{
		"input_tokens": 7, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000,
		"output_tokens": 1, "output_tokens_details": map[string]any{"thinking_tokens": 0},
	}
	msg["usage"] = usage
	msg["content"] = []any{map[string]any{"type": "thinking", "thinking": "…", "signature": "x"}}
	asst["uuid"] = "00000000-0000-4000-8000-000000000001"
	b.WriteString(jsonLine(t, asst))
	usage["output_tokens"] = 50
	usage["output_tokens_details"] = map[string]any{"thinking_tokens": 30}
	msg["content"] = []any{map[string]any{"type": "text", "text": "done"}}
	asst["uuid"] = "00000000-0000-4000-8000-000000000002"
	b.WriteString(jsonLine(t, asst))
	// A tool result (same promptId) and a second message of the turn.
	tool := fixtureLine(t, data, `"tool_use_id"`)
	tool["promptId"] = claudeTurn2
	b.WriteString(jsonLine(t, tool))
	msg["id"] = "msg_second"
	msg["usage"] = map[string]any{"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2100, "output_tokens": 4}
	b.WriteString(jsonLine(t, asst))
	// Claude Code's own error message costs nothing.
	msg["id"] = "msg_synthetic"
	msg["model"] = "<synthetic>"
	b.WriteString(jsonLine(t, asst))
	// The next turn's lines are not this turn's.
	user["promptId"] = "next-turn"
	b.WriteString(jsonLine(t, user))
	msg["id"], msg["model"] = "msg_next", "claude-opus-5-5"
	b.WriteString(jsonLine(t, asst))
	b.WriteString("not json\n{\"type\":\"assistant\",\"message\":7}\n")

	got, state := Claude{}.TurnUsage(strings.NewReader(b.String()), claudeTurn2)
	checkUsage(t, "two messages", got, usageOf(10, 54, 4100, 100, 30, 2))
	if state != TurnEnded {
		t.Errorf("a turn whose last message ended (end_turn) is %v, not ended", state)
	}
}

func TestCodexTurnUsageFixture(t *testing.T) {
	data := readFixture(t, "codex-usage.jsonl")
	c := Codex{}
	checkUsage(t, "turn 1", usageOnly(c.TurnUsage(bytes.NewReader(data), codexTurn1)), usageOf(20, 6, 0, 0, 0, 2))
	checkUsage(t, "turn 2", usageOnly(c.TurnUsage(bytes.NewReader(data), codexTurn2)), usageOf(10, 3, 0, 0, 0, 1))
	checkUsage(t, "another turn", usageOnly(c.TurnUsage(bytes.NewReader(data), "no-such-turn")), nil)
	checkUsage(t, "first turn", usageOnly(c.TurnUsage(bytes.NewReader(data), "")), usageOf(20, 6, 0, 0, 0, 2))

	// Without token_usage_record lines (older releases): the turn's
	// token_count events, a repeated one (same running total) once.
	var events bytes.Buffer
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Contains(l, []byte(`"type":"token_usage_record"`)) {
			continue
		}
		events.Write(l)
		if bytes.Contains(l, []byte(`"type":"token_count"`)) {
			events.Write(l) // re-emitted
		}
	}
	ev := events.Bytes()
	checkUsage(t, "events turn 1", usageOnly(c.TurnUsage(bytes.NewReader(ev), codexTurn1)), usageOf(20, 6, 0, 0, 0, 2))
	checkUsage(t, "events turn 2", usageOnly(c.TurnUsage(bytes.NewReader(ev), codexTurn2)), usageOf(10, 3, 0, 0, 0, 1))
	checkUsage(t, "events, another turn", usageOnly(c.TurnUsage(bytes.NewReader(ev), "no-such-turn")), nil)
}

// Codex records a response before running its Stop hook: a rollout with
// anything of the turn is ended (never open, which would hold every Codex
// result), one with nothing of it unseen.
func TestCodexTurnState(t *testing.T) {
	data := readFixture(t, "codex-usage.jsonl")
	started := bytes.Index(data, []byte(`"task_started"`))
	if started < 0 {
		t.Fatal("the fixture has no task_started")
	}
	upToStart := data[:bytes.IndexByte(data[started:], '\n')+started+1] // turn 1's first line
	for _, c := range []struct {
		name string
		in   []byte
		turn string
		want TurnState
	}{
		{"turn 1", data, codexTurn1, TurnEnded},
		{"turn 2", data, codexTurn2, TurnEnded},
		{"no turn id", data, "", TurnEnded},
		{"turn 1 just started", upToStart, codexTurn1, TurnEnded},
		{"another turn", data, "no-such-turn", TurnUnseen},
		{"empty", nil, codexTurn1, TurnUnseen},
	} {
		if _, st := (Codex{}).TurnUsage(bytes.NewReader(c.in), c.turn); st != c.want {
			t.Errorf("%s: state %v, want %v", c.name, st, c.want)
		}
	}
}

// Codex's input_tokens counts cached input too: it is split into the
// cache read and write parts and the rest; a response recorded twice
// counts once.
func TestCodexTurnUsageCachedInput(t *testing.T) {
	data := readFixture(t, "codex-usage.jsonl")
	rec := fixtureLine(t, data, `"type":"token_usage_record"`)
	p := rec["payload"].(map[string]any)
	turn := p["turn_id"].(string)
	p["usage"] = map[string]any{
		"input_tokens": 1000, "cached_input_tokens": 600, "cache_write_input_tokens": 100,
		"output_tokens": 80, "reasoning_output_tokens": 50, "total_tokens": 1080,
	}
	line := jsonLine(t, rec)
	in := line + line // the same response_id twice
	p["response_id"] = "resp_other"
	p["usage"] = map[string]any{"input_tokens": 5, "cached_input_tokens": 9, "output_tokens": 1}
	in += jsonLine(t, rec) // cached above input: clamped, never negative
	got := usageOnly(Codex{}.TurnUsage(strings.NewReader(in), turn))
	checkUsage(t, "cached", got, usageOf(300, 81, 609, 100, 50, 2))
}

func TestTurnUsageBoundedLines(t *testing.T) {
	data := readFixture(t, "claude-usage.jsonl")
	user := jsonLine(t, fixtureLine(t, data, `"promptId":"`+claudeTurn2))
	asst := jsonLine(t, fixtureLine(t, data, `"text":"MOCK-REPLY: hello there"`))
	huge := `{"type":"assistant","x":"` + strings.Repeat("a", maxUsageLine) + `"}` + "\n"
	// An overlong line is skipped, the lines around it still read; a last
	// line without its newline (being written) is not read yet.
	in := user + huge + asst + strings.TrimSuffix(strings.Replace(asst, "msg_mock", "msg_late", 1), "\n")
	checkUsage(t, "bounded", usageOnly(Claude{}.TurnUsage(strings.NewReader(in), claudeTurn2)), usageOf(10, 3, 0, 0, 0, 1))
}

func TestUsageSaturates(t *testing.T) {
	var s usageSum
	s.add(math.MaxInt64, 1, 0, -5, 0)
	s.add(math.MaxInt64, 0, 0, 2, 0)
	u := s.result()
	if u.InputTokens != math.MaxInt64 || u.TotalTokens != math.MaxInt64 || u.OutputTokens != 2 || u.Requests != 2 {
		t.Fatalf("saturating sum: %s", u.JSON())
	}
	if (&usageSum{}).result() != nil {
		t.Fatal("no request must give no usage")
	}
}

func TestUsageJSONRoundTrip(t *testing.T) {
	u := usageOf(1, 2, 3, 4, 1, 5)
	got, err := rpc.DecodeUsage(u.JSON())
	if err != nil || got == nil || *got != *u {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if got, err := rpc.DecodeUsage(nil); got != nil || err != nil {
		t.Fatalf("absent usage: %v %v", got, err)
	}
	if got, err := rpc.DecodeUsage(json.RawMessage(" null ")); got != nil || err != nil {
		t.Fatalf("null usage: %v %v", got, err)
	}
	if _, err := rpc.DecodeUsage(json.RawMessage(`"lots"`)); err == nil {
		t.Fatal("a string decoded as usage")
	}
	if string((*rpc.Usage)(nil).JSON()) != "null" {
		t.Fatal("nil usage is not null")
	}
	want := `{"input_tokens":1,"cache_read_input_tokens":3,"cache_creation_input_tokens":4,"output_tokens":2,"reasoning_output_tokens":1,"total_tokens":10,"requests":5}`
	if string(u.JSON()) != want {
		t.Fatalf("wire shape %s, want %s", u.JSON(), want)
	}
}

// TurnEnd's stop reason, from Claude Code 2.1.332's own transcripts of a
// reply cut at the token limit (the mock answering max_tokens each time:
// three continuations, then Claude Code's error message) and of a refused
// one (retried once, then its error message): the last model message's
// max_tokens or refusal; a continuation that ended normally, a tool call,
// a normal turn say nothing.
func TestClaudeTurnStopReason(t *testing.T) {
	cut := readFixture(t, "claude-stop-max-tokens.jsonl")
	refused := readFixture(t, "claude-stop-refusal.jsonl")
	usage := readFixture(t, "claude-usage.jsonl")
	firstLine := func(data []byte, sub string) []byte {
		i := bytes.Index(data, []byte(sub))
		if i < 0 {
			t.Fatalf("fixture has no %q", sub)
		}
		return data[:bytes.IndexByte(data[i:], '\n')+i+1]
	}
	// The cut message continued, and the continuation ended normally.
	recovered := append([]byte(nil), firstLine(cut, `"stop_reason":"max_tokens"`)...)
	cont := fixtureLine(t, cut, `"isMeta":true`)
	reply := fixtureLine(t, cut, `"stop_reason":"max_tokens"`)
	reply["message"].(map[string]any)["stop_reason"] = "end_turn"
	reply["message"].(map[string]any)["id"] = "msg_continued"
	recovered = append(recovered, jsonLine(t, cont)+jsonLine(t, reply)...)
	cases := []struct {
		name string
		data []byte
		turn string
		want string
	}{
		{"cut three times, then Claude Code's error", cut, "", rpc.StopMaxTokens},
		{"cut once, still open", firstLine(cut, `"stop_reason":"max_tokens"`), "", rpc.StopMaxTokens},
		{"cut, then continued to its end", recovered, "", ""},
		{"refused, retried, Claude Code's error", refused, "", rpc.StopRefusal},
		{"refused once", firstLine(refused, `"stop_reason":"refusal"`), "", rpc.StopRefusal},
		{"another turn", cut, "no-such-prompt", ""},
		{"a tool call, then end_turn", usage, claudeTurn1, ""},
		{"after the tool call only", firstLine(usage, `"stop_reason":"tool_use"`), claudeTurn1, ""},
	}
	for _, c := range cases {
		_, _, got := Claude{}.TurnEnd(bytes.NewReader(c.data), c.turn)
		if got != c.want {
			t.Errorf("%s: stop reason %q, want %q", c.name, got, c.want)
		}
	}
	if u, st, _ := (Claude{}).TurnEnd(bytes.NewReader(cut), ""); st != TurnEnded || u == nil || u.Requests != 4 {
		t.Errorf("cut turn: state %v usage %s, want ended, 4 requests", st, u.JSON())
	}
}
