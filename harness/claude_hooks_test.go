package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		if ev == "SessionStart" || ev == "PermissionRequest" {
			// PermissionRequest's forwarder waits for session.respond's
			// answer and prints it, which an http hook cannot.
			if h[0]["type"] != "command" || !strings.HasSuffix(h[0]["command"].(string), " "+ev) {
				t.Errorf("%s hook = %v, want the forwarder command", ev, h[0])
			}
			if ev == "PermissionRequest" && h[0]["timeout"] != float64(ClaudePermissionTimeout) {
				t.Errorf("PermissionRequest timeout = %v", h[0]["timeout"])
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

// Settings that would stop Claude Code from delivering dlgt's http hooks
// (an allowedHttpHookUrls without the endpoint, an httpHookAllowedEnvVars
// without the token's variable), in any source it merges, make the
// launch use command hooks and say why; settings that allow them, or do
// not mention them, leave the http hooks in place.
func TestClaudeHTTPHooksFallBackWhenSettingsForbidThem(t *testing.T) {
	managed := t.TempDir()
	old := claudeManagedDir
	claudeManagedDir = managed
	t.Cleanup(func() { claudeManagedDir = old })
	web := &HTTPHook{URL: "http://127.0.0.1:4711/hook/internal:1", Token: strings.Repeat("cd", 32)}

	cases := []struct {
		name, file, body string
		blocked          bool
	}{
		{"nothing set", "", "", false},
		{"user: other URLs only", "user", `{"allowedHttpHookUrls":["https://hooks.example/*"]}`, true},
		{"user: loopback allowed", "user", `{"allowedHttpHookUrls":["https://hooks.example/*","http://127.0.0.1:*"]}`, false},
		{"user: no URL at all", "user", `{"allowedHttpHookUrls":[]}`, true},
		{"managed: other URLs", "managed", `{"allowedHttpHookUrls":["https://x/*"]}`, true},
		{"managed drop-in: other URLs", "managed.d", `{"allowedHttpHookUrls":["https://x/*"]}`, true},
		{"project: env var not listed", "project", `{"httpHookAllowedEnvVars":["OTHER"]}`, true},
		{"local: env var listed", "local", `{"httpHookAllowedEnvVars":["OTHER","` + HookTokenEnv + `"]}`, false},
		{"malformed file", "user", `{"allowedHttpHookUrls":`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, cwd := t.TempDir(), t.TempDir()
			path := map[string]string{
				"user":      home + "/.claude/settings.json",
				"managed":   managed + "/managed-settings.json",
				"managed.d": managed + "/managed-settings.d/50-corp.json",
				"project":   cwd + "/.claude/settings.json",
				"local":     cwd + "/.claude/settings.local.json",
			}[c.file]
			if path != "" {
				writeFile(t, path, c.body)
				t.Cleanup(func() { os.Remove(path) })
			}
			l, err := Claude{}.Prepare(Spec{
				Cwd: cwd, Env: map[string]string{"DLGT_CLAUDE_BIN": "/bin/claude", "HOME": home},
				HookArgv: []string{"/usr/bin/dlgt", "hook"}, HookHTTP: web,
			})
			if err != nil {
				t.Fatal(err)
			}
			settings := l.Argv[slices.Index(l.Argv, "--settings")+1]
			gotHTTP := strings.Contains(settings, `"type":"http"`)
			switch {
			case c.blocked && (gotHTTP || l.Note == "" || slices.Contains(l.Env, HookTokenEnv+"="+web.Token)):
				t.Errorf("blocked, yet http hooks %v, token in env %v, note %q", gotHTTP, slices.Contains(l.Env, HookTokenEnv+"="+web.Token), l.Note)
			case !c.blocked && (!gotHTTP || l.Note != ""):
				t.Errorf("allowed, yet http hooks %v, note %q", gotHTTP, l.Note)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"http://127.0.0.1:*", "http://127.0.0.1:4711/hook/x/Stop", true},
		{"http://127.0.0.1:*/Stop", "http://127.0.0.1:4711/hook/x/Stop", true},
		{"http://127.0.0.1:*/Stop", "http://127.0.0.1:4711/hook/x/UserPromptSubmit", false},
		{"*", "", true},
		{"a*a", "a", false},
		{"a*b*c", "abc", true},
		{"https://127.0.0.1:*", "http://127.0.0.1:1/", false},
		{"http://127.0.0.1:4711/hook/x/Stop", "http://127.0.0.1:4711/hook/x/Stop", true},
	} {
		if got := globMatch(c.pattern, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHookCommandExecsTheForwarder runs an injected hook command line as
// the harnesses do (through /bin/sh -c) and checks that the forwarder
// replaces the shell rather than running as its child, with its argv
// intact.
func TestHookCommandExecsTheForwarder(t *testing.T) {
	// The "forwarder" reports its parent and its arguments.
	fwd := []string{"/bin/sh", "-c", `echo "$PPID|$0|$1"`, "it's a probe"}
	out, err := exec.Command("/bin/sh", "-c", hookCommand(fwd, "Stop")).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d|it's a probe|Stop\n", os.Getpid())
	if string(out) != want {
		t.Fatalf("the hook command printed %q, want %q (parent, argv[0], event)", out, want)
	}
}

// A PermissionRequest is answerable through the hook, with its input as
// bounded text, except for the tools whose dialog needs the person (the
// hook's allow is ignored for them).
func TestClaudePermissionRequestAnswerable(t *testing.T) {
	ev, err := Claude{}.ParseHook("PermissionRequest", []byte(`{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf x\u001b[2J\ny","description":"d"}}`))
	if err != nil || !ev.Answerable || ev.Input != "rm -rf x[2J\ny" || ev.Tool != "Bash" {
		t.Fatalf("Bash: %+v %v", ev, err)
	}
	ev, _ = Claude{}.ParseHook("PermissionRequest", []byte(`{"tool_name":"Write","tool_input":{"file_path":"/a","content":"`+strings.Repeat("z", 5000)+`"}}`))
	if !ev.Answerable || !strings.HasPrefix(ev.Input, `{"file_path":"/a","content":"zz`) || len(ev.Input) != maxToolInputText {
		t.Fatalf("Write: answerable %v input %d bytes %.40q", ev.Answerable, len(ev.Input), ev.Input)
	}
	ev, _ = Claude{}.ParseHook("PermissionRequest", []byte(`{"tool_name":"AskUserQuestion","tool_input":{"questions":[]}}`))
	if ev.Answerable || ev.Kind != KindBlocked {
		t.Fatalf("AskUserQuestion: %+v", ev)
	}
	out, ok := Claude{}.DecisionOutput("PermissionRequest", "deny", "not here")
	if !ok || string(out) != `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"not here"},"hookEventName":"PermissionRequest"}}` {
		t.Fatalf("deny output %s %v", out, ok)
	}
	if _, ok := (Claude{}).DecisionOutput("Stop", "allow", ""); ok {
		t.Fatal("Stop takes no decision")
	}
}
