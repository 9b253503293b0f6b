package harness

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Bounds ParseHook promises on whatever a hook delivers.
const (
	maxHookCommand = 512
	maxHookError   = 1024
)

// FuzzParseHook feeds Claude{}.ParseHook arbitrary event names and
// payloads. The committed corpus (testdata/fuzz/FuzzParseHook) holds the
// real payloads of harness-samples/claude-hooks-*.jsonl plus hostile
// variants. ParseHook must never panic, must keep its derived fields
// bounded, and must only ever report the event name it was given.
func FuzzParseHook(f *testing.F) {
	long := strings.Repeat("é", 300) // 600 bytes: the 512-byte cut lands mid-rune
	for _, s := range []struct{ event, payload string }{
		{"PermissionRequest", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"` + long + `"}}`},
		{"PermissionRequest", `{"tool_input":{"command":"` + strings.Repeat("a", 511) + `€"}}`},
		{"PermissionRequest", `{"tool_input":"not an object"}`},
		{"StopFailure", `{"error":"` + strings.Repeat("x", 2000) + `"}`},
		{"StopFailure", `{"error":{"type":"` + strings.Repeat("t", 1000) + `","message":"` + long + `"}}`},
		{"StopFailure", `{"error":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`},
		{"StopFailure", `{}`},
		{"UserPromptSubmit", `{"prompt":"<pasted_content id=\"abcd\">\n"}`},
		{"UserPromptSubmit", `{"prompt":"\n\n<pasted_content id=\"abcd\">\nx\n</pasted_content id=\"abcd\">\n\n\n<pasted_content id=\"0123\">\n\n</pasted_content id=\"0123\">"}`},
		{"UserPromptSubmit", `{"prompt":null}`},
		{"Stop", `{"hook_event_name":"Stop","last_assistant_message":"\u001b[2Kdone"}`},
		{"Stop", `{"hook_event_name":"SessionStart"}`},
		{"Stop", `{"session_id":1}`},
		{"", `{}`},
		{"Stop", ``},
		{"Stop", "{\"x\":\"\xff\xfe\"}"},
	} {
		f.Add(s.event, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		ev, err := Claude{}.ParseHook(event, payload)
		if err != nil {
			if ev.Kind != KindIgnored || ev.Event != "" {
				t.Fatalf("error %v came with evidence %+v", err, ev)
			}
			return
		}
		if ev.Event != event {
			t.Fatalf("evidence event %q, delivered as %q", ev.Event, event)
		}
		want, known := map[string]Kind{
			"SessionStart": KindReady, "UserPromptSubmit": KindPromptSubmitted,
			"PermissionRequest": KindBlocked, "PreToolUse": KindActivity,
			"PostToolUse": KindActivity, "Stop": KindStop,
			"StopFailure": KindStopFailure, "SessionEnd": KindSessionEnd,
		}[event]
		switch {
		case known && ev.Kind != want:
			t.Fatalf("event %q gave kind %d, want %d", event, ev.Kind, want)
		case event == "Notification":
			if ev.Kind != KindIgnored && ev.Kind != KindBlocked && ev.Kind != KindIdlePrompt {
				t.Fatalf("Notification gave kind %d", ev.Kind)
			}
		case !known && ev.Kind != KindIgnored:
			t.Fatalf("unknown event %q gave kind %d", event, ev.Kind)
		}
		if len(ev.Command) > maxHookCommand {
			t.Fatalf("Command is %d bytes, want at most %d", len(ev.Command), maxHookCommand)
		}
		if !utf8.ValidString(ev.Command) {
			t.Fatalf("Command %q is not valid UTF-8", ev.Command)
		}
		if len(ev.Error) > maxHookError {
			t.Fatalf("Error is %d bytes, want at most %d", len(ev.Error), maxHookError)
		}
		// Not asserted: a StopFailure whose error is "", null or {} yields
		// an empty Error (sanitizeError's fallback message only covers a
		// missing error); corpus entry 61ec89486069076f. Reported.
		if ev.Kind != KindStopFailure && ev.Error != "" {
			t.Fatalf("kind %d carries error %q", ev.Kind, ev.Error)
		}
		if ev.Command != "" && ev.Kind != KindBlocked {
			t.Fatalf("kind %d carries command %q", ev.Kind, ev.Command)
		}
		if ev.Prompt != nil {
			var raw struct {
				Prompt *string `json:"prompt"`
			}
			if json.Unmarshal(payload, &raw) != nil || raw.Prompt == nil {
				t.Fatalf("prompt %q appeared from nowhere", *ev.Prompt)
			}
			// Unwrapping paste blocks only ever removes bytes.
			if len(*ev.Prompt) > len(*raw.Prompt) {
				t.Fatalf("unwrapped prompt grew: %d > %d bytes", len(*ev.Prompt), len(*raw.Prompt))
			}
			if *ev.Prompt != *raw.Prompt && !strings.Contains(*raw.Prompt, "<pasted_content") {
				t.Fatalf("prompt without a paste block changed: %q -> %q", *raw.Prompt, *ev.Prompt)
			}
		}
		// Everything derived from the payload re-encodes as JSON.
		if _, err := json.Marshal(ev); err != nil {
			t.Fatalf("evidence does not marshal: %v", err)
		}
	})
}
