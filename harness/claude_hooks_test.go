package harness

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// claudeHookSettings prepares a Claude launch and returns its --settings
// hooks by event, with the launch.
func claudeHookSettings(t *testing.T, web *HTTPHook) (map[string][]map[string]any, *Launch) {
	t.Helper()
	spec := Spec{
		Cwd: t.TempDir(), Env: map[string]string{"DLGT_CLAUDE_BIN": "/bin/claude", "HOME": t.TempDir()},
		HookArgv: []string{"/usr/bin/dlgt", "hook", "--socket", "/s", "--launch", "internal:1"},
		HookHTTP: web,
	}
	l, err := Claude{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(l.Argv, "--settings")
	if i < 0 {
		t.Fatalf("no --settings in %q", l.Argv)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(l.Argv[i+1]), &s); err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]any{}
	for ev, groups := range s.Hooks {
		if len(groups) != 1 {
			t.Fatalf("%s: %d hook groups", ev, len(groups))
		}
		out[ev] = groups[0].Hooks
	}
	return out, l
}

// With an HTTP endpoint every event Claude Code can post goes there, with
// the token read from the environment; SessionStart, which Claude runs
// only as a command, stays the forwarder. Without one, all are commands.
func TestClaudeHTTPHooks(t *testing.T) {
	web := &HTTPHook{URL: "http://127.0.0.1:4711/hook/internal:1", Token: strings.Repeat("ab", 32)}
	hooks, l := claudeHookSettings(t, web)
	if len(hooks) != len(claudeHookEvents) {
		t.Fatalf("%d events, want %d", len(hooks), len(claudeHookEvents))
	}
	for _, ev := range claudeHookEvents {
		h := hooks[ev]
		if len(h) != 1 {
			t.Fatalf("%s: %d hooks", ev, len(h))
		}
		if ev == "SessionStart" {
			if h[0]["type"] != "command" || !strings.HasSuffix(h[0]["command"].(string), " SessionStart") {
				t.Errorf("SessionStart hook = %v, want the forwarder command", h[0])
			}
			continue
		}
		hdr, _ := h[0]["headers"].(map[string]any)
		allowed, _ := h[0]["allowedEnvVars"].([]any)
		if h[0]["type"] != "http" || h[0]["url"] != web.URL+"/"+ev || hdr["Authorization"] != "Bearer ${"+HookTokenEnv+"}" ||
			len(allowed) != 1 || allowed[0] != HookTokenEnv {
			t.Errorf("%s hook = %v", ev, h[0])
		}
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		if !slices.Contains(l.Env, k+"=127.0.0.1") {
			t.Errorf("loopback is not exempt from proxies (%s): %q", k, l.Env)
		}
	}
	if !slices.Contains(l.Env, HookTokenEnv+"="+web.Token) {
		t.Errorf("the token is not in the harness environment")
	}
	for _, a := range l.Argv {
		if strings.Contains(a, web.Token) {
			t.Fatalf("the token is on the command line: %q", a)
		}
	}

	hooks, l = claudeHookSettings(t, nil)
	for _, ev := range claudeHookEvents {
		if h := hooks[ev]; len(h) != 1 || h[0]["type"] != "command" || !strings.HasSuffix(h[0]["command"].(string), " "+ev) {
			t.Errorf("without an endpoint, %s hook = %v", ev, h)
		}
	}
	for _, e := range l.Env {
		if strings.HasPrefix(e, HookTokenEnv+"=") {
			t.Errorf("a token with no endpoint: %s", e)
		}
	}
}

func TestWithLoopbackExempt(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "127.0.0.1",
		"corp.example":            "corp.example,127.0.0.1",
		"corp.example, 127.0.0.1": "corp.example, 127.0.0.1",
		"*":                       "*",
		"127.0.0.10":              "127.0.0.10,127.0.0.1",
	} {
		if got := withLoopbackExempt(in); got != want {
			t.Errorf("withLoopbackExempt(%q) = %q, want %q", in, got, want)
		}
	}
}
