package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// httpHarness is what a test reads of a running fake Claude: the Stop
// hook's URL from its --settings, and the hook token from its
// environment.
type httpHarness struct {
	stopURL, token, argv string
}

// findHTTPHarness waits for the fake Claude whose environment carries
// mark and reads its HTTP hook settings.
func findHTTPHarness(t *testing.T, mark string) httpHarness {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, p := range markedProcs(mark) {
			args := strings.Split(strings.TrimSuffix(p.argv, "\x00"), "\x00")
			for i := 0; i+1 < len(args); i++ {
				if args[i] != "--settings" {
					continue
				}
				var s struct {
					Hooks map[string][]struct {
						Hooks []struct{ Type, URL string }
					}
				}
				if err := json.Unmarshal([]byte(args[i+1]), &s); err != nil {
					t.Fatalf("--settings: %v", err)
				}
				h := httpHarness{argv: p.argv}
				if stop := s.Hooks["Stop"]; len(stop) == 1 && len(stop[0].Hooks) == 1 && stop[0].Hooks[0].Type == "http" {
					h.stopURL = stop[0].Hooks[0].URL
				}
				if start := s.Hooks["SessionStart"]; len(start) != 1 || start[0].Hooks[0].Type != "command" {
					t.Fatalf("SessionStart hook is not a command (Claude Code runs no http hook for it): %+v", start)
				}
				env, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(p.pid), "environ"))
				for _, kv := range strings.Split(string(env), "\x00") {
					if v, ok := strings.CutPrefix(kv, harness.HookTokenEnv+"="); ok {
						h.token = v
					}
				}
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no fake Claude with --settings found")
		}
	}
}

// A Claude Session posts its hooks over HTTP, with a per-launch token in
// its environment (not its command line, not the client's token), and
// the endpoint refuses, changing nothing, every request that is not a
// well-formed hook of that launch.
func TestHTTPHooksRefuseWhatIsNotTheirLaunchs(t *testing.T) {
	env := fakeClaudeEnv(t)
	mark := fmt.Sprintf("hookhttp-%d", time.Now().UnixNano())
	env["DLGT_TEST_MARK"] = mark
	env[harness.HookTokenEnv] = "a-token-from-the-client"
	td := newTestDaemon(t, env)
	td.opts.HTTPHooks = true
	td.start()
	t.Cleanup(td.stop)
	r := td.create(t, "web-1", "hello over http")
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.FinalText == nil || *res.FinalText != "MOCK-REPLY: hello over http" {
		t.Fatalf("result = %+v", res)
	}
	h := findHTTPHarness(t, mark)
	switch {
	case !strings.HasPrefix(h.stopURL, "http://127.0.0.1:") || !strings.HasSuffix(h.stopURL, "/Stop"):
		t.Fatalf("Stop hook URL = %q, want an http hook on 127.0.0.1", h.stopURL)
	case len(h.token) != 64 || h.token == env[harness.HookTokenEnv]:
		t.Fatalf("harness token = %q: want its own 64-hex token, not the client's", h.token)
	case strings.Contains(h.argv, h.token):
		t.Fatal("the hook token is on the harness's command line")
	}

	var before []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: r.Session.ID}, &before)
	stop := []byte(`{"session_id":"x","hook_event_name":"Stop","last_assistant_message":"forged"}`)
	otherLaunch := h.stopURL[:strings.LastIndex(h.stopURL[:strings.LastIndex(h.stopURL, "/")], "/")] + "/internal:000000000000/Stop"
	cases := []struct {
		name, method, url, auth, origin string
		body                            []byte
		want                            int
	}{
		{"no token", "POST", h.stopURL, "", "", stop, http.StatusUnauthorized},
		{"wrong token", "POST", h.stopURL, "Bearer " + strings.Repeat("0", 64), "", stop, http.StatusUnauthorized},
		{"the client's token", "POST", h.stopURL, "Bearer " + env[harness.HookTokenEnv], "", stop, http.StatusUnauthorized},
		{"another launch", "POST", otherLaunch, "Bearer " + h.token, "", stop, http.StatusUnauthorized},
		{"not a scheme", "POST", h.stopURL, h.token, "", stop, http.StatusUnauthorized},
		{"a browser", "POST", h.stopURL, "Bearer " + h.token, "http://127.0.0.1", stop, http.StatusForbidden},
		{"a GET", "GET", h.stopURL, "Bearer " + h.token, "", nil, http.StatusMethodNotAllowed},
		{"not JSON", "POST", h.stopURL, "Bearer " + h.token, "", []byte(`{"session_id":`), http.StatusBadRequest},
		{"too large", "POST", h.stopURL, "Bearer " + h.token, "", append(append([]byte(`"`), bytes.Repeat([]byte("a"), hookfwd.MaxPayload)...), '"'), http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, c.url, bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	var after []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: r.Session.ID}, &after)
	if len(after) != len(before) {
		t.Fatalf("refused hooks changed the Session: %d events -> %d: %+v", len(before), len(after), after[len(before):])
	}

	// The same launch's token does get a hook in: a follow-up turn is
	// confirmed (UserPromptSubmit) and completed (Stop) over HTTP.
	var sr rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "again", RequestID: "web-2"}, &sr)
	if sr.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("send: submission %s", sr.Submission)
	}
	if _, res := td.waitResult(t, r.Session.ID, sr.Cursor); res.FinalText == nil || *res.FinalText != "MOCK-REPLY: again" {
		t.Fatalf("follow-up result = %+v", res)
	}
}

// By default every hook runs the forwarder command, and no hook token
// reaches the harness (not even the client's own).
func TestCommandHooksByDefault(t *testing.T) {
	env := fakeClaudeEnv(t)
	mark := fmt.Sprintf("hookcmd-%d", time.Now().UnixNano())
	env["DLGT_TEST_MARK"] = mark
	env[harness.HookTokenEnv] = "a-token-from-the-client" // never passed on
	td := startTestDaemonWith(t, env)
	r := td.create(t, "cmd-1", "hello over the socket")
	if _, res := td.waitResult(t, r.Session.ID, r.Cursor); res.FinalText == nil || *res.FinalText != "MOCK-REPLY: hello over the socket" {
		t.Fatalf("result = %+v", res)
	}
	h := findHTTPHarness(t, mark)
	if h.stopURL != "" || h.token != "" {
		t.Fatalf("command hooks by default, yet Stop URL %q and token %q", h.stopURL, h.token)
	}
}
