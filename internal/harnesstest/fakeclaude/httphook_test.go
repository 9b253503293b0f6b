package fakeclaude_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// http hooks are posted as the real CLI posts them: the payload as a JSON
// body, header values filled only from allowedEnvVars, never for
// SessionStart (which the real CLI skips), in the same order as command
// hooks and with the same payloads.
func TestHTTPHooks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	var headers []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		headers = append(headers, r.Header.Clone())
		ev := strings.TrimPrefix(r.URL.Path, "/hook/")
		f, err := os.OpenFile(w.log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
		if err == nil {
			f.WriteString(ev + "\t" + string(body) + "\n")
			f.Close()
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s with content type %q", r.Method, r.URL, r.Header.Get("Content-Type"))
		}
	}))
	defer srv.Close()
	hooks := map[string]any{}
	for _, ev := range hookEvents {
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{
			"type": "http", "url": srv.URL + "/hook/" + ev, "timeout": 30,
			"headers":        map[string]string{"Authorization": "Bearer ${TOK}", "X-Other": "$SECRET-$TOK"},
			"allowedEnvVars": []string{"TOK"},
		}}}}
	}
	hooks["SessionStart"] = []any{
		map[string]any{"hooks": []any{map[string]any{"type": "command", "command": shellQuote(append(append([]string{}, w.hookArgv...), "SessionStart"))}}},
		map[string]any{"hooks": []any{map[string]any{"type": "http", "url": srv.URL + "/hook/SessionStart-over-http"}}},
	}
	settings, _ := json.Marshal(map[string]any{"hooks": hooks})
	p := w.start(w.baseEnv("TOK=t1", "SECRET=s1"), "--session-id", sessionID, "--settings", string(settings))
	p.waitOutput(promptMark)
	p.submit("hello http")
	evs := w.waitCount("Stop", 1)
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "Stop")
	if evs[1].str("prompt") != "hello http" || evs[2].str("hook_event_name") != "Stop" || evs[2].str("session_id") != sessionID {
		t.Errorf("payloads: %s / %s", evs[1].raw, evs[2].raw)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range headers {
		if h.Get("Authorization") != "Bearer t1" || h.Get("X-Other") != "-t1" {
			t.Errorf("headers: Authorization %q, X-Other %q (want the listed variable only)", h.Get("Authorization"), h.Get("X-Other"))
		}
	}
}
