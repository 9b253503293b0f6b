package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The Gemini CLI row of the scenario table (e2e_scenarios_test.go): the
// real CLI (pinned by .ci/install-harnesses) against the loopback mock
// Gemini API, skipped when it is absent, plus the cases only Gemini has
// (geminiSteps).

// e2eGeminiBin is DLGT_GEMINI_BIN, else the script .ci/install-harnesses
// puts under the module root (run by the node on PATH).
func e2eGeminiBin(t *testing.T) string {
	t.Helper()
	p := pinned.Bin(t, "gemini")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH (Gemini CLI is a Node script)")
	}
	return p
}

// geminiChunked is a reply streamed in many small chunks: Gemini's
// AfterAgent prompt_response joins such chunks with spaces and repeats
// them; the result must be this text byte for byte.
var geminiChunked = mockapi.Lines("chunk\tline \"quoted\" ünïcode", 9)

// geminiRig is the real Gemini CLI's environment against a mock scripted
// by script, with every process marked. The "user's" Gemini home is HOME
// (auth, model and offline settings, session retention left at its
// default, on); dlgt must leave its settings as they are.
func geminiRig(t *testing.T, script mockapi.Script) *e2eRig {
	t.Helper()
	r, _ := geminiRigMock(t, script)
	return r
}

// geminiRigMock is geminiRig, also returning its mock.
func geminiRigMock(t *testing.T, script mockapi.Script) (*e2eRig, *mockapi.Server) {
	t.Helper()
	bin := e2eGeminiBin(t)
	mark := newE2EMark(t)
	mock := mockapi.NewGemini(t, script)
	home := t.TempDir()
	if err := mockapi.WriteGeminiHome(home); err != nil {
		t.Fatal(err)
	}
	// The user's own settings keep Gemini's default retention (on).
	settingsPath := filepath.Join(home, ".gemini", "settings.json")
	settings, err := os.ReadFile(settingsPath)
	if err != nil {
		t.Fatal(err)
	}
	settings = []byte(strings.Replace(string(settings), `"enabled": false`, `"enabled": true`, 1))
	if err := os.WriteFile(settingsPath, settings, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if got, err := os.ReadFile(settingsPath); err != nil || string(got) != string(settings) {
			t.Errorf("the user's settings.json changed (err %v):\n%s", err, got)
		}
	})
	env := map[string]string{
		"PATH":            os.Getenv("PATH"),
		"HOME":            home,
		"DLGT_GEMINI_BIN": bin,
		"GORACE":          "atexit_sleep_ms=0",
		"TERM":            "xterm-256color",
	}
	for _, kv := range mockapi.GeminiEnv(mock.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	addMark(env, mark)
	return &e2eRig{env: env, mark: mark, requests: mockRequests(mock), textSource: rpc.TextSourceTranscript,
		isHarness: func(argv string) bool { return strings.Contains(argv, "\x00"+bin+"\x00") }}, mock
}

// e2eGeminiCLI is the real Gemini CLI's row.
var e2eGeminiCLI = e2eAdapter{
	name:    "gemini",
	harness: "gemini",
	start: func(t *testing.T) *e2eRig {
		return geminiRig(t, mockapi.Script{
			mockapi.Contains("BIG-PROMPT:", mockapi.Reply{Text: "BIG-REPLY"}),
			// About three minutes of streaming, to be canceled or cut by kill -9.
			mockapi.Prefix("E2E-SLOW", mockapi.Reply{Text: mockapi.Lines("slow line", 1200), Chunk: 4, Delay: 50 * time.Millisecond}),
			mockapi.Prefix("E2E-FAIL", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
			mockapi.Prefix("E2E-RUN", mockapi.Reply{Tool: "touch dlgt-usage-marker", Text: "AFTER-TOOL"}),
			mockapi.Prefix("E2E-TOOL", mockapi.Reply{Tool: "touch dlgt-e2e-marker", Text: "AFTER-TOOL"}),
			mockapi.Prefix("E2E-CHUNKS", mockapi.Reply{Text: geminiChunked, Chunk: 5}),
		})
	},
	prompt:    func(p string) string { return p },
	streaming: "slow line",
	failText:  "mock bad request",
	// Without auto_approve Gemini runs in its default approval mode and
	// asks before a shell command; with it, yolo.
	// mockapi sends a function call as one chunk: two candidate tokens,
	// what one chunk of text costs.
	toolInput: func(string) string { return "x" },
	resumed: func(argv, id string) bool {
		return strings.Contains(argv, "\x00--resume\x00"+strings.TrimPrefix(id, "gemini:")+"\x00")
	},
	// Gemini writes the prompt to its transcript before the model
	// answers, so a resume after kill -9 carries it.
	caps:  e2eCaps{resumeCarriesHistory: true},
	extra: geminiSteps,
}

// geminiSteps are the cases only Gemini has, run after the table on the
// same Session.
var geminiSteps = []e2eStep{
	{"ManyChunksByteExact", false, stepGeminiChunks},
	{"SecondGeminiSameProject", false, stepGeminiSecondProcess},
}

// stepGeminiChunks: a reply streamed in 5-rune chunks (tabs, quotes,
// UTF-8, newlines) is the result byte for byte, read from the transcript.
func stepGeminiChunks(t *testing.T, s *e2eScenario) {
	seq, reqID := s.next()
	r := s.send(t, s.id, "E2E-CHUNKS a reply in many pieces", reqID)
	_, res := s.waitResult(t, s.id, r.Cursor)
	if res.Status != rpc.StatusCompleted || res.ExecutionSeq != seq || res.FinalText == nil || *res.FinalText != geminiChunked || res.FinalTextSource != rpc.TextSourceTranscript {
		t.Fatalf("result = %+v text %q, want %q from the transcript", res, fetchdoc.DerefText(&res), geminiChunked)
	}
	// One candidate token per chunk plus one, as the mock charged.
	chunks := int64((utf8.RuneCountInString(geminiChunked) + 4) / 5)
	wantUsage(t, "many chunks", &res, rpc.Usage{InputTokens: 10, OutputTokens: chunks + 1, TotalTokens: 11 + chunks, Requests: 1})
}

// stepGeminiSecondProcess: while the Session runs a resumed conversation
// (the table restarted it, a resume), another gemini is started in the
// same project by the user, with their own settings (session cleanup on,
// which deletes a resumed session's files when it starts there). The
// Session's conversation survives: its transcript is still there, and a
// follow-up is answered with the earlier turns sent along.
func stepGeminiSecondProcess(t *testing.T, s *e2eScenario) {
	transcript := s.geminiTranscript(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.env["DLGT_GEMINI_BIN"], "-p", "a second gemini in the same project", "--skip-trust")
	cmd.Dir = s.cwd
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the second gemini: %v\n%s", err, out)
	}
	if _, err := os.Stat(transcript); err != nil {
		t.Fatalf("the Session's transcript is gone after another gemini started: %v", err)
	}
	const prompt = "still the same conversation"
	seq, reqID := s.next()
	r := s.send(t, s.id, prompt, reqID)
	s.expectReply(t, s.id, r.Cursor, prompt, seq)
	for _, req := range s.requests() {
		if req.prompt == prompt && !strings.Contains(req.context, "hello again after a restart") {
			t.Fatalf("the follow-up went without the conversation so far")
		}
	}
}

// geminiTranscript is the Session's transcript file: the one file of its
// session id under its own Gemini home.
func (s *e2eScenario) geminiTranscript(t *testing.T) string {
	t.Helper()
	var rd rpc.SessionReadResult
	s.call(t, rpc.MethodSessionRead, rpc.SessionReadParams{Session: s.id}, &rd)
	id := strings.TrimPrefix(s.id, "gemini:")
	var found []string
	filepath.WalkDir(s.td.paths.DataDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "-"+id[:8]+".jsonl") {
			found = append(found, p)
		}
		return nil
	})
	if len(found) == 0 {
		t.Fatalf("no transcript of %s under the daemon's data directory", id)
	}
	return found[0]
}
