package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The Claude Code rows of the scenario table (e2e_scenarios_test.go): the
// real CLI (pinned by .ci/install-harnesses) against the loopback mock
// Anthropic server, skipped when the binary is absent, and the fake Claude
// (harnesstest/fakeclaude), which always runs.

const e2eClaudeKey = "sk-ant-mock-key"

// e2eClaudeBin is DLGT_CLAUDE_BIN, else the binary .ci/install-harnesses
// puts under the module root; the test is skipped when it is absent.
func e2eClaudeBin(t *testing.T) string {
	t.Helper()
	return pinned.Bin(t, "claude")
}

// startE2EClaude is a daemon hosting the real Claude Code against a mock
// scripted by script.
func startE2EClaude(t *testing.T, script mockapi.Script) *e2eRig {
	t.Helper()
	e := claudeRig(t, script)
	e.td = startTestDaemonWith(t, e.env)
	return e
}

// claudeRig is the real Claude Code's environment against a mock
// scripted by script, with every process marked.
func claudeRig(t *testing.T, script mockapi.Script) *e2eRig {
	t.Helper()
	r, _ := claudeRigMock(t, script)
	return r
}

// claudeRigMock is claudeRig, also returning its mock.
func claudeRigMock(t *testing.T, script mockapi.Script) (*e2eRig, *mockapi.Server) {
	t.Helper()
	mark := newE2EMark(t)
	mock, env := e2eClaudeEnv(t, script)
	addMark(env, mark)
	bin := env["DLGT_CLAUDE_BIN"]
	return &e2eRig{env: env, mark: mark, requests: mockRequests(mock),
		isHarness: func(argv string) bool { return strings.HasPrefix(argv, bin+"\x00") }}, mock
}

// e2eClaudeEnv starts the mock and returns it with the client
// environment that runs the real Claude Code offline against it.
func e2eClaudeEnv(t *testing.T, script mockapi.Script) (*mockapi.Server, map[string]string) {
	t.Helper()
	bin := e2eClaudeBin(t)
	// Created before the daemon so that its cleanup (which stops every
	// Claude process) runs before the mock closes and these directories
	// are removed.
	mock := mockapi.NewAnthropic(t, script)
	home := t.TempDir()
	// Claude Code remembers approved keys by their last 20 characters.
	approved := e2eClaudeKey
	if len(approved) > 20 {
		approved = approved[len(approved)-20:]
	}
	state := map[string]any{
		"hasCompletedOnboarding":        true,
		"customApiKeyResponses":         map[string]any{"approved": []string{approved}, "rejected": []string{}},
		"hasSeenAutoDefaultNotice":      true,
		"bypassPermissionsModeAccepted": true,
	}
	data, _ := json.MarshalIndent(state, "", "  ")
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PATH":               os.Getenv("PATH"),
		"HOME":               home,
		"ANTHROPIC_BASE_URL": mock.URL(),
		"ANTHROPIC_API_KEY":  e2eClaudeKey,
		"DLGT_CLAUDE_BIN":    bin,
		"GORACE":             "atexit_sleep_ms=0",
		"TERM":               "xterm-256color",
	}
	for _, kv := range mockapi.ClaudeOfflineEnv() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return mock, env
}

// e2eSlowReply streams for about a minute, to be canceled.
var e2eSlowReply = mockapi.Reply{Text: strings.Repeat("slow ", 300), Chunk: 1, Delay: 40 * time.Millisecond}

// e2eClaudeCLI is the real Claude Code's row.
var e2eClaudeCLI = e2eAdapter{
	name:    "claude",
	harness: "claude",
	start: func(t *testing.T) *e2eRig {
		return claudeRig(t, mockapi.Script{
			mockapi.Contains("BIG-PROMPT:", mockapi.Reply{Text: "BIG-REPLY"}),
			// A command that is not read-only, so default mode asks first.
			mockapi.Prefix("E2E-TOOL", mockapi.Reply{Tool: "touch dlgt-e2e-marker", Text: "AFTER-TOOL"}),
			mockapi.Prefix("E2E-RUN", mockapi.Reply{Tool: "touch dlgt-usage-marker", Text: "AFTER-TOOL"}),
			mockapi.Prefix("E2E-SLOW", e2eSlowReply),
			mockapi.Prefix("E2E-FAIL", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
		})
	},
	prompt:     func(p string) string { return p },
	streaming:  "slow slow slow",
	failText:   "mock bad request",
	askOptions: []string{"permission-mode=default"},
	runOptions: []string{"allowed-tools=Bash"},
	// mockapi's Bash tool call.
	toolInput: func(c string) string {
		return toolInputJSON(map[string]any{"command": c, "description": "mockapi tool call"})
	},
	resumed: claudeResumed,
	caps:    e2eCaps{pasteTagged: true, resumeCarriesHistory: true},
}

// e2eClaudeCLIHTTP is the real Claude Code's row again, its hooks posted
// over HTTP (DLGT_HOOKS=http) instead of run as forwarder commands.
var e2eClaudeCLIHTTP = func() e2eAdapter {
	a := e2eClaudeCLI
	a.name, a.httpHooks = "claude-http", true
	return a
}()

// claudeResumed: Claude Code resumes with --resume <session uuid>.
func claudeResumed(argv, id string) bool {
	return strings.Contains(argv, "\x00--resume\x00"+strings.TrimPrefix(id, "claude:")+"\x00")
}

// e2eFakeClaude is the fake Claude's row: Claude-shaped (the "claude"
// harness), scripted by [[directives]] in place of a mock server, and
// fast enough for every test run.
var e2eFakeClaude = e2eAdapter{
	name:    "fake",
	harness: "claude",
	start: func(t *testing.T) *e2eRig {
		mark := newE2EMark(t)
		env := fakeClaudeEnv(t)
		addMark(env, mark)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		home := env["HOME"]
		return &e2eRig{env: env, mark: mark,
			requests: func() []e2eRequest { return fakeRequests(t, home) },
			// The hook forwarder is this binary too, with --socket.
			isHarness: func(argv string) bool {
				return strings.HasPrefix(argv, exe+"\x00") && !strings.Contains(argv, "\x00--socket\x00")
			}}
	},
	prompt: func(p string) string {
		switch {
		case strings.Contains(p, "BIG-PROMPT:"):
			return "[[reply BIG-REPLY]] " + p
		case strings.HasPrefix(p, "E2E-SLOW"):
			return "[[slow 600000]] " + p
		case strings.HasPrefix(p, "E2E-TOOL"):
			return "[[tool touch dlgt-e2e-marker]] " + p
		case strings.HasPrefix(p, "E2E-RUN"):
			return "[[tool touch dlgt-usage-marker]] [[reply AFTER-TOOL]] " + p
		case strings.HasPrefix(p, "E2E-FAIL"):
			return "[[fail]] " + p
		}
		return p
	},
	streaming:  "Working…",
	failText:   "MOCK-FAIL: simulated server error",
	askOptions: []string{"permission-mode=default"},
	// The fake's own Bash tool call.
	toolInput: func(c string) string {
		return toolInputJSON(map[string]any{"command": c, "description": "Run the scripted command"})
	},
	resumed: claudeResumed,
	caps:    e2eCaps{resumeCarriesHistory: true},
}

// fakeRequests is what the fake Claude's "model" received: every user
// prompt in the transcripts under home, each with its transcript up to
// it (what a real request would carry).
func fakeRequests(t *testing.T, home string) []e2eRequest {
	files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	var out []e2eRequest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("fake transcript: %v", err)
			continue
		}
		lines := strings.SplitAfter(string(data), "\n")
		for i, l := range lines {
			var e struct {
				Type    string `json:"type"`
				Message struct {
					Content any `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(l), &e) != nil || e.Type != "user" {
				continue
			}
			if p, ok := e.Message.Content.(string); ok {
				out = append(out, e2eRequest{prompt: p, context: strings.Join(lines[:i+1], "")})
			}
		}
	}
	return out
}

// With http hooks on (DLGT_HOOKS=http), a user whose Claude Code settings
// allow http hooks only to other URLs (allowedHttpHookUrls) would have
// every hook but SessionStart dropped by the real CLI: such a launch runs
// the forwarder command for each hook instead, and its turns are
// confirmed and completed as usual. With the setting allowing 127.0.0.1
// the real CLI posts its hooks over HTTP, and the turn completes too. The
// fake Claude applies the setting as the real CLI does, so its row
// catches a broken check in every test run.
func TestE2EClaudeHookTransportFollowsItsSettings(t *testing.T) {
	for _, rig := range []struct {
		name  string
		start func(t *testing.T) *e2eRig
	}{
		{"claude", func(t *testing.T) *e2eRig { return claudeRig(t, mockapi.Script{}) }},
		{"fake", e2eFakeClaude.start},
	} {
		for _, c := range []struct {
			name, settings string
			wantHTTP       bool
		}{
			{"forbidden", `{"allowedHttpHookUrls":["https://hooks.example/*"]}`, false},
			{"allowed", `{"allowedHttpHookUrls":["https://hooks.example/*","http://127.0.0.1:*"]}`, true},
		} {
			t.Run(rig.name+"/"+c.name, func(t *testing.T) {
				e := rig.start(t)
				if err := os.MkdirAll(filepath.Join(e.env["HOME"], ".claude"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(e.env["HOME"], ".claude", "settings.json"), []byte(c.settings), 0o600); err != nil {
					t.Fatal(err)
				}
				e.td = newTestDaemon(t, e.env)
				e.td.opts.HTTPHooks = true
				e.td.start()
				t.Cleanup(e.td.stop)
				cwd := t.TempDir()
				var r rpc.Receipt
				e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
					Title: "hook transport", Harness: "claude", Cwd: cwd, Prompt: "transport " + c.name,
					RequestID: "transport-" + c.name, Environment: e.env,
				}, &r)
				if r.Submission != rpc.SubmissionConfirmed {
					t.Fatalf("create: submission %s", r.Submission)
				}
				e.expectReply(t, r.Session.ID, r.Cursor, "transport "+c.name, 1)
				argv := e.waitHarness(t, cwd)
				if got := strings.Contains(argv, `"type":"http"`); got != c.wantHTTP {
					t.Fatalf("http hooks in the harness's settings: %v, want %v", got, c.wantHTTP)
				}
			})
		}
	}
}

// claudeForwardEnv is the --forward-env flags that pass names and the
// variables of mockapi.ClaudeOfflineEnv to an MCP server a leader starts
// with a filtered environment.
func claudeForwardEnv(names ...string) []string {
	for _, kv := range mockapi.ClaudeOfflineEnv() {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	var flags []string
	for _, n := range names {
		flags = append(flags, "--forward-env", n)
	}
	return flags
}

// A prompt sent while Claude Code is still ending its previous turn (a
// Stop hook of the user's own still running) is queued by Claude Code,
// which then runs UserPromptSubmit for it with the previous turn's
// prompt_id. The queued turn's result still carries its own usage, and a
// queued turn can still be canceled.
func TestE2EClaudeQueuedPrompt(t *testing.T) {
	e := claudeRig(t, mockapi.Script{mockapi.Prefix("E2E-SLOW", e2eSlowReply)})
	home := e.env["HOME"]
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	// dlgt's own Stop hook reports the turn's end at once; this one keeps
	// Claude Code ending the turn for five seconds more, the window the
	// send must land in. With one second the send came after it in 2 of 3
	// runs at a load average of 20 to 30 (the daemon may hold the Stop up
	// to transcript.UsageMax for the transcript, and the hooks run together).
	settings := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"sleep 5"}]}]}}`
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	e.td = startTestDaemonWith(t, e.env)
	var r rpc.Receipt
	e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "queued", Harness: "claude", Cwd: t.TempDir(), Prompt: "the first question",
		RequestID: "queued-1", Environment: e.env,
	}, &r)
	id := r.Session.ID
	e.expectReply(t, id, r.Cursor, "the first question", 1)

	// Sent as the result arrives: Claude Code is in its Stop hooks.
	const queued = "a question sent while the first turn ends"
	r2 := e.send(t, id, queued, "queued-2")
	e.expectReply(t, id, r2.Cursor, queued, 2) // its usage included
	if !transcriptHas(t, home, `"promptSource":"queued"`) {
		t.Fatal("Claude Code did not queue the prompt: this test no longer tests what it says")
	}

	e.send(t, id, "E2E-SLOW and queued again", "queued-3")
	e.waitLive(t, id, "slow slow slow")
	e.cancelOK(t, id, 3)
}

// transcriptHas reports whether a Claude Code transcript under home
// holds s.
func transcriptHas(t *testing.T, home, s string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
