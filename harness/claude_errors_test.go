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
