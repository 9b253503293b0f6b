package harness

import (
	"strings"
	"testing"
)

func TestClaudeStopFailureErrorNeverEmpty(t *testing.T) {
	for _, errField := range []string{`""`, `null`, `{}`, `{"type":"","message":""}`, `"  "`} {
		ev, err := Claude{}.ParseHook("StopFailure", []byte(`{"session_id":"s","hook_event_name":"StopFailure","error":`+errField+`}`))
		if err != nil || ev.Kind != KindStopFailure || strings.TrimSpace(ev.Error) == "" {
			t.Errorf("error %s: %+v, %v", errField, ev, err)
		}
	}
	ev, _ := Claude{}.ParseHook("StopFailure", []byte(`{"hook_event_name":"StopFailure","error":{"type":"overloaded_error","message":"busy"}}`))
	if ev.Error != "overloaded_error: busy" {
		t.Errorf("error = %q", ev.Error)
	}
	ev, _ = Claude{}.ParseHook("StopFailure", []byte(`{"hook_event_name":"StopFailure","error":{"message":"only message"}}`))
	if ev.Error != "only message" {
		t.Errorf("error = %q", ev.Error)
	}
}

func TestClaudeParseHookRejectsNonObjects(t *testing.T) {
	for _, p := range []string{`null`, `[]`, `"x"`, `1`, ``} {
		if _, err := (Claude{}).ParseHook("Stop", []byte(p)); err == nil {
			t.Errorf("payload %q accepted", p)
		}
	}
}

// Claude Code's StopFailure carries a category in "error" (often just
// "unknown") and the readable text in last_assistant_message: the message
// is that text, never the bare category.
func TestClaudeStopFailureReadableMessage(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{`{"hook_event_name":"StopFailure","error":"unknown","last_assistant_message":"API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}"}`,
			`API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`},
		{`{"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"API Error: 429 too many requests"}`,
			"rate_limit: API Error: 429 too many requests"},
		{`{"hook_event_name":"StopFailure","error":"server_error","last_assistant_message":"server_error: upstream died"}`,
			"server_error: upstream died"},
		{`{"hook_event_name":"StopFailure","error":"unknown","last_assistant_message":"  ","error_details":"connection reset"}`,
			"connection reset"},
		{`{"hook_event_name":"StopFailure","error":"unknown"}`, "unknown"},
		{`{"hook_event_name":"StopFailure","last_assistant_message":"API Error: 401 invalid x-api-key"}`, "API Error: 401 invalid x-api-key"},
		{`{"hook_event_name":"StopFailure","error":"","last_assistant_message":"API Error: 500"}`, "API Error: 500"},
		{`{"hook_event_name":"StopFailure","error":{"type":"overloaded_error","message":"busy"},"last_assistant_message":"ignored"}`, "overloaded_error: busy"},
	} {
		ev, err := Claude{}.ParseHook("StopFailure", []byte(tc.payload))
		if err != nil || ev.Kind != KindStopFailure || ev.Error != tc.want {
			t.Errorf("%s:\n got %q (%v)\nwant %q", tc.payload, ev.Error, err, tc.want)
		}
	}
	long := strings.Repeat("x", 5000)
	ev, _ := Claude{}.ParseHook("StopFailure", []byte(`{"hook_event_name":"StopFailure","error":"unknown","last_assistant_message":"`+long+`"}`))
	if len(ev.Error) > 1100 || !strings.HasPrefix(ev.Error, "xxx") {
		t.Errorf("a long message is not clipped: %d bytes", len(ev.Error))
	}
}
