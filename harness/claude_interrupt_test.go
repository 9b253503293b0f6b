package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Lines as Claude Code 2.1.332 writes them (fields trimmed).
func TestClaudeParseTranscriptLine(t *testing.T) {
	cases := []struct {
		name, line string
		kind       Kind
		turn       string
	}{
		{"interrupt", `{"parentUuid":"3ffe","isSidechain":false,"promptId":"3561c103","type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"rowSource":"harness","interruptedMessageId":"msg_1"}`, KindInterrupted, "3561c103"},
		{"tool use declined", `{"promptId":"931a2792","type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"rowSource":"harness"}`, KindInterrupted, "931a2792"},
		{"trailing newline", `{"promptId":"p","type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]\n"}]},"rowSource":"harness"}`, KindInterrupted, "p"},
		{"typed by a person", `{"promptId":"p","type":"user","message":{"role":"user","content":"[Request interrupted by user]"},"origin":{"kind":"human"}}`, KindIgnored, ""},
		{"typed as blocks", `{"promptId":"p","type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"origin":{"kind":"human"}}`, KindIgnored, ""},
		{"assistant quoting it", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"[Request interrupted by user]"}]}}`, KindIgnored, ""},
		{"in a longer text", `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user] and more"}]},"rowSource":"harness"}`, KindIgnored, ""},
		{"tool result", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"[Request interrupted by user]"}]},"rowSource":"harness"}`, KindIgnored, ""},
		{"other line", `{"type":"last-prompt","lastPrompt":"hi"}`, KindIgnored, ""},
		{"not json", `[Request interrupted by user]`, KindIgnored, ""},
	}
	for _, c := range cases {
		ev := Claude{}.ParseTranscriptLine([]byte(c.line))
		if ev.Kind != c.kind || ev.TurnID != c.turn {
			t.Errorf("%s: kind %v turn %q, want %v %q", c.name, ev.Kind, ev.TurnID, c.kind, c.turn)
		}
	}
}

func TestClaudeIdleSince(t *testing.T) {
	cfg := t.TempDir()
	transcript := filepath.Join(cfg, "projects", "-tmp-x", "0f0e.jsonl")
	os.MkdirAll(filepath.Join(cfg, "sessions"), 0o700)
	const pid = 4242
	since := time.UnixMilli(1796286210000)
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(cfg, "sessions", fmt.Sprintf("%d.json", pid)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := Claude{}
	if c.IdleSince(transcript, pid, since) {
		t.Fatal("idle without a status file")
	}
	cases := []struct {
		body string
		want bool
	}{
		{`{"pid":4242,"status":"idle","statusUpdatedAt":1796286210151}`, true},
		{`{"pid":4242,"status":"idle","statusUpdatedAt":1796286210000}`, true},
		{`{"pid":4242,"status":"idle","statusUpdatedAt":1796286209999}`, false}, // before the interrupt
		{`{"pid":4242,"status":"busy","statusUpdatedAt":1796286210151}`, false},
		{`{"pid":4242,"status":"waiting","waitingFor":"permission prompt","statusUpdatedAt":1796286210151}`, false},
		{`{"pid":4243,"status":"idle","statusUpdatedAt":1796286210151}`, false}, // another process
		{`{"pid":4242,"status":"idle","statusUpd`, false},                       // half written
	}
	for _, tc := range cases {
		write(tc.body)
		if got := c.IdleSince(transcript, pid, since); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
	}
	write(cases[0].body)
	if c.IdleSince(filepath.Join(cfg, "elsewhere", "0f0e.jsonl"), pid, since) || c.IdleSince("", pid, since) {
		t.Fatal("a transcript outside <config>/projects/ must not resolve a status file")
	}
}
