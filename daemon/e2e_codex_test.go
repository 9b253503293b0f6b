package daemon

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
)

// The Codex row of the scenario table (e2e_scenarios_test.go): the real
// CLI (pinned by .ci/install-harnesses) against the loopback mock
// Responses API, skipped when the binary is absent.

// e2eCodexBin is DLGT_CODEX_BIN, else the binary .ci/install-harnesses
// puts under the module root.
func e2eCodexBin(t *testing.T) string {
	t.Helper()
	return pinned.Bin(t, "codex")
}

// writeCodexConfig writes a config.toml in codexHome that runs Codex
// offline against the mock Responses API at url (key in MOCK_API_KEY), and
// returns its text and path.
func writeCodexConfig(t *testing.T, codexHome, url string) (string, string) {
	t.Helper()
	config := mockapi.CodexConfig(url)
	cfgPath := filepath.Join(codexHome, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, cfgPath
}

// startE2ECodex is a daemon hosting the real Codex against a mock
// scripted by script; it returns the process mark too.
func startE2ECodex(t *testing.T, script mockapi.Script) (*e2eRig, string) {
	t.Helper()
	e := codexRig(t, script)
	e.td = startTestDaemonWith(t, e.env)
	return e, e.mark
}

// codexOwnState matches what Codex writes to config.toml by itself (see
// codexRig): the [tui] table's screen_reader_detection_done and the
// [tui.model_availability_nux] table of per-model tip counts.
var codexOwnState = regexp.MustCompile(`\n\[tui\]\nscreen_reader_detection_done = true\n|\n?\[tui\.model_availability_nux\]\n("[^"\n]*" = \d+\n)*`)

// codexRig is the real Codex's environment against a mock scripted by
// script, with every process marked. The user's CODEX_HOME must come out
// of the test as it went in.
func codexRig(t *testing.T, script mockapi.Script) *e2eRig {
	t.Helper()
	r, _ := codexRigMock(t, script)
	return r
}

// codexRigMock is codexRig, also returning its mock.
func codexRigMock(t *testing.T, script mockapi.Script) (*e2eRig, *mockapi.Server) {
	t.Helper()
	bin := e2eCodexBin(t)
	mark := newE2EMark(t)
	mock := mockapi.NewResponses(t, script)
	home := t.TempDir()
	// The "user's" CODEX_HOME: dlgt must leave config.toml as it is.
	codexHome := t.TempDir()
	config, cfgPath := writeCodexConfig(t, codexHome, mock.URL())
	t.Cleanup(func() {
		// Codex itself records its first TUI start (a screen-reader probe)
		// in config.toml, and in a trusted folder how often it has shown
		// its new-model tip; a -c override does not stop either, and it
		// does the same for a user's own runs. Nothing else may change.
		got, err := os.ReadFile(cfgPath)
		own := codexOwnState.ReplaceAllString(string(got), "")
		if err != nil || own != config {
			t.Errorf("the user's config.toml changed (err %v):\n%s", err, got)
		}
		if _, err := os.Stat(filepath.Join(codexHome, "hooks.json")); err == nil {
			t.Error("a hooks.json appeared in the user's CODEX_HOME")
		}
	})
	env := map[string]string{
		"PATH":           os.Getenv("PATH"),
		"HOME":           home,
		"CODEX_HOME":     codexHome,
		"MOCK_API_KEY":   "mock-key",
		"DLGT_CODEX_BIN": bin,
		"GORACE":         "atexit_sleep_ms=0",
		"TERM":           "xterm-256color",
	}
	addMark(env, mark)
	return &e2eRig{env: env, mark: mark, requests: mockRequests(mock),
		isHarness: func(argv string) bool { return strings.HasPrefix(argv, bin+"\x00") }}, mock
}

// e2eCodexCLI is the real Codex's row.
var e2eCodexCLI = e2eAdapter{
	name:    "codex",
	harness: "codex",
	start: func(t *testing.T) *e2eRig {
		return codexRig(t, mockapi.Script{
			mockapi.Contains("BIG-PROMPT:", mockapi.Reply{Text: "BIG-REPLY"}),
			// About three minutes of streaming, to be canceled or cut by kill -9.
			mockapi.Prefix("E2E-SLOW", mockapi.Reply{Text: mockapi.Lines("slow line", 1200), Chunk: 4, Delay: 50 * time.Millisecond}),
			mockapi.Prefix("E2E-FAIL", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
			mockapi.Prefix("E2E-RUN", mockapi.Reply{Tool: "touch dlgt-usage-marker", Text: "AFTER-TOOL"}),
			// Escalated: the command asks for approval outside the sandbox.
			mockapi.Prefix("E2E-TOOL", mockapi.Reply{Tool: "touch dlgt-e2e-marker", Text: "AFTER-TOOL", Escalated: true}),
		})
	},
	prompt:    func(p string) string { return p },
	streaming: "slow line",
	failText:  "mock bad request",
	// mockapi's shell call.
	toolInput: func(c string) string { return toolInputJSON(map[string]any{"cmd": c, "yield_time_ms": 60000}) },
	// Codex resumes with `codex resume ... -- <thread id>`.
	resumed: func(argv, id string) bool {
		args := strings.Split(argv, "\x00")
		return len(args) > 1 && args[1] == "resume" && strings.Contains(argv, "\x00--\x00"+strings.TrimPrefix(id, "codex:")+"\x00")
	},
	// Codex shows a large paste as a placeholder and submits the text
	// itself, unwrapped. It reports nothing before a turn.
	caps: e2eCaps{restartUnready: true},
}
