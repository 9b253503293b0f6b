package fakeclaude_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// Claude Code's settings can stop http hooks, as they do with the real
// CLI: allowedHttpHookUrls (merged over the settings files) drops a hook
// whose URL no pattern matches, and httpHookAllowedEnvVars empties a
// header variable it does not list. Command hooks run regardless.
func TestHTTPHookPolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		user, project string // ~/.claude/settings.json, .claude/settings.local.json
		posted        bool
		authorization string
	}{
		{name: "unset", posted: true, authorization: "Bearer t1"},
		{name: "other urls only", user: `{"allowedHttpHookUrls":["https://hooks.example/*"]}`},
		{name: "beside settings the fake does not model", user: `{"hooks":{"Stop":"unexpected"},"model":7,"allowedHttpHookUrls":["https://hooks.example/*"]}`},
		{name: "merged with the project's", user: `{"allowedHttpHookUrls":["https://hooks.example/*"]}`,
			project: `{"allowedHttpHookUrls":["http://127.0.0.1:*"]}`, posted: true, authorization: "Bearer t1"},
		{name: "variable not allowed", project: `{"httpHookAllowedEnvVars":["OTHER"]}`, posted: true, authorization: "Bearer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			for path, body := range map[string]string{
				filepath.Join(w.home, ".claude", "settings.json"):      c.user,
				filepath.Join(w.cwd, ".claude", "settings.local.json"): c.project,
			} {
				if body == "" {
					continue
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var auth []string
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				auth = append(auth, r.Header.Get("Authorization"))
			}))
			defer srv.Close()
			command := func(ev string) map[string]any {
				return map[string]any{"hooks": []any{map[string]any{"type": "command", "command": shellQuote(append(append([]string{}, w.hookArgv...), ev))}}}
			}
			posted := func(ev string) map[string]any {
				return map[string]any{"hooks": []any{map[string]any{
					"type": "http", "url": srv.URL + "/hook/" + ev,
					"headers": map[string]string{"Authorization": "Bearer ${TOK}"}, "allowedEnvVars": []string{"TOK"},
				}}}
			}
			settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{
				"SessionStart":     []any{command("SessionStart")},
				"UserPromptSubmit": []any{posted("UserPromptSubmit")},
				"Stop":             []any{posted("Stop"), command("Stop")},
			}})
			p := w.start(w.baseEnv("TOK=t1"), "--session-id", sessionID, "--settings", string(settings))
			p.waitOutput(promptMark)
			p.submit("hello policy")
			// The Stop command hook has run: UserPromptSubmit's hooks had
			// all ended before it began, Stop's http hook runs beside it.
			w.waitCount("Stop", 1)
			for deadline := time.Now().Add(5 * time.Second); c.posted && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := len(auth)
				mu.Unlock()
				if n >= 2 {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !c.posted {
				if len(auth) != 0 {
					t.Fatalf("%d http hooks posted, want none", len(auth))
				}
				return
			}
			if len(auth) != 2 {
				t.Fatalf("%d http hooks posted, want 2 (UserPromptSubmit, Stop)", len(auth))
			}
			for _, a := range auth {
				if strings.TrimSpace(a) != c.authorization {
					t.Errorf("Authorization %q, want %q", a, c.authorization)
				}
			}
		})
	}
}
