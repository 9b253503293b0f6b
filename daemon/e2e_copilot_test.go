package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The GitHub Copilot CLI row of the scenario table (e2e_scenarios_test.go):
// the real CLI (pinned by .ci/install-harnesses) against the loopback
// Anthropic Messages mock (COPILOT_PROVIDER_TYPE=anthropic, offline),
// skipped only when it is absent.

// e2eCopilotBin is DLGT_COPILOT_BIN, else the native binary
// .ci/install-harnesses puts under the module root.
func e2eCopilotBin(t *testing.T) string {
	t.Helper()
	return pinned.Bin(t, "copilot")
}

// copilotUserConfig is the "user's" config.json: Copilot's own comment
// lines, then JSON trusting the temporary directory every test folder is
// made in (and nothing else).
func copilotUserConfig() string {
	cfg, _ := json.MarshalIndent(map[string]any{
		"firstLaunchAt": "2026-01-01T00:00:00.000Z", "appTipShown": true,
		"trustedFolders": []string{os.TempDir()},
	}, "", "  ")
	return "// User settings belong in settings.json.\n// This file is managed automatically.\n" + string(cfg) + "\n"
}

// copilotRig is the real Copilot CLI's environment against a mock
// scripted by script, with every process marked.
func copilotRig(t *testing.T, script mockapi.Script) (*e2eRig, *mockapi.Server) {
	t.Helper()
	bin := e2eCopilotBin(t)
	mark := newE2EMark(t)
	mock, env := e2eCopilotEnv(t, script)
	addMark(env, mark)
	return &e2eRig{env: env, mark: mark, requests: mockRequests(mock), textSource: rpc.TextSourceTranscript,
		isHarness: func(argv string) bool { return strings.HasPrefix(argv, bin+"\x00") }}, mock
}

// e2eCopilotEnv starts a mock scripted by script and returns it with the
// client environment that runs the real Copilot CLI offline against it.
// The user's COPILOT_HOME (config.json with their trusted folders) must
// come out of the test as it went in: no hook file, no session of dlgt's,
// no rewritten config.
func e2eCopilotEnv(t *testing.T, script mockapi.Script) (*mockapi.Server, map[string]string) {
	t.Helper()
	bin := e2eCopilotBin(t)
	mock := mockapi.NewAnthropic(t, script)
	home := t.TempDir()
	userDir := filepath.Join(home, ".copilot")
	if err := os.MkdirAll(userDir, 0o700); err != nil {
		t.Fatal(err)
	}
	config := copilotUserConfig()
	if err := os.WriteFile(filepath.Join(userDir, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if got, err := os.ReadFile(filepath.Join(userDir, "config.json")); err != nil || string(got) != config {
			t.Errorf("the user's config.json changed (err %v):\n%s", err, got)
		}
		ents, _ := os.ReadDir(userDir)
		for _, e := range ents {
			if e.Name() != "config.json" {
				t.Errorf("dlgt left %s in the user's Copilot directory", e.Name())
			}
		}
	})
	return mock, map[string]string{
		"PATH": os.Getenv("PATH"),
		"HOME": home,
		// Named too, so that a leader that sets HOME of its own passes
		// the user's Copilot directory on (its default is under HOME).
		"COPILOT_HOME":              userDir,
		"DLGT_COPILOT_BIN":          bin,
		"COPILOT_PROVIDER_TYPE":     "anthropic",
		"COPILOT_PROVIDER_BASE_URL": mock.URL(),
		"COPILOT_PROVIDER_API_KEY":  "mock-key",
		"COPILOT_MODEL":             "claude-sonnet-4.5",
		"COPILOT_OFFLINE":           "true",
		"GORACE":                    "atexit_sleep_ms=0",
		"TERM":                      "xterm-256color",
	}
}

// e2eCopilotCLI is the real Copilot CLI's row.
var e2eCopilotCLI = e2eAdapter{
	name:    "copilot",
	harness: "copilot",
	start: func(t *testing.T) *e2eRig {
		r, _ := copilotRig(t, mockapi.Script{
			mockapi.Contains("BIG-PROMPT:", mockapi.Reply{Text: "BIG-REPLY"}),
			mockapi.Prefix("<pasted_content file=", mockapi.Reply{Text: "BIG-REPLY"}),
			// About three minutes of streaming, to be canceled or cut by kill -9.
			mockapi.Prefix("E2E-SLOW", mockapi.Reply{Text: mockapi.Lines("slow line", 1200), Chunk: 4, Delay: 50 * time.Millisecond}),
			mockapi.Prefix("E2E-FAIL", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
			mockapi.Prefix("E2E-RUN", mockapi.Reply{Tool: "touch dlgt-usage-marker", Text: "AFTER-TOOL"}),
			mockapi.Prefix("E2E-TOOL", mockapi.Reply{Tool: "touch dlgt-e2e-marker", Text: "AFTER-TOOL"}),
			mockapi.Prefix("E2E-CHUNKS", mockapi.Reply{Text: copilotChunked, Chunk: 5}),
		})
		return r
	},
	prompt:    func(p string) string { return p },
	streaming: "slow line",
	failText:  "mock bad request",
	// mockapi's shell call, under Copilot's name for its shell tool (bash).
	toolInput: func(c string) string {
		return toolInputJSON(map[string]any{"command": c, "description": "mockapi tool call"})
	},
	resumed: func(argv, id string) bool {
		return strings.Contains(argv, "\x00--resume="+strings.TrimPrefix(id, "copilot:")+"\x00")
	},
	// Copilot runs no hook before a turn (a restart is ready at spawn),
	// writes the prompt to its session log before the model answers, and
	// saves a paste over 8-21 KB to a file it names to the model.
	caps:  e2eCaps{restartUnready: true, resumeCarriesHistory: true, pasteSaved: true},
	extra: copilotSteps,
}

// copilotChunked is a reply streamed in many small chunks: the result
// must be this text byte for byte, read from Copilot's session log.
var copilotChunked = mockapi.Lines("chunk\tline \"quoted\" ünïcode  **not bold**", 9) + "\n"

// copilotSteps are the cases only Copilot has, run after the table on the
// same Session.
var copilotSteps = []e2eStep{
	{"ManyChunksByteExact", false, stepCopilotChunks},
}

// stepCopilotChunks: a reply streamed in 5-rune chunks (tabs, quotes,
// UTF-8, markdown, a trailing newline) is the result byte for byte, read
// from the session log (the screen renders markdown and wraps).
func stepCopilotChunks(t *testing.T, s *e2eScenario) {
	seq, reqID := s.next()
	r := s.send(t, s.id, "E2E-CHUNKS a reply in many pieces", reqID)
	_, res := s.waitResult(t, s.id, r.Cursor)
	if res.Status != rpc.StatusCompleted || res.ExecutionSeq != seq || res.FinalText == nil || *res.FinalText != copilotChunked || res.FinalTextSource != rpc.TextSourceTranscript {
		t.Fatalf("result = %+v text %q, want %q from the transcript", res, fetchdoc.DerefText(&res), copilotChunked)
	}
}

// savedPasteRE is Copilot CLI's reference to a paste it saved to a file.
var savedPasteRE = regexp.MustCompile(`^<pasted_content file="([^"]+)" size="[^"]*" lines="\d+" />$`)

// readSavedPaste is the content of the file a `<pasted_content file=…/>`
// prompt names, and whether the prompt is that and nothing else.
func readSavedPaste(p string) (string, bool) {
	m := savedPasteRE.FindStringSubmatch(p)
	if m == nil {
		return "", false
	}
	data, err := os.ReadFile(m[1])
	if err != nil {
		return "", false
	}
	return string(data), true
}
