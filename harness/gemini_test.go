package harness

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// geminiSampleHooks returns the recorded hook payloads (Gemini CLI 0.61.0
// TUI: a SLOW-6 reply cancelled with Esc while streaming, a shell call
// declined with Esc at its approval box, a SLOW-3 reply in three chunks)
// with their transcript path pointed at a copy of the recorded transcript.
func geminiSampleHooks(t *testing.T) ([]map[string]any, string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/gemini-transcript.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	transcript := filepath.Join(dir, "session-2026-12-05T13-14-11111111.jsonl")
	if err := os.WriteFile(transcript, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/gemini-hooks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		m["transcript_path"] = transcript
		out = append(out, m)
	}
	return out, transcript
}

func parseGemini(t *testing.T, m map[string]any) Evidence {
	t.Helper()
	b, _ := json.Marshal(m)
	ev, err := Gemini{}.ParseHook(m["hook_event_name"].(string), b)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// The recorded session's hooks give: ready, the prompts accepted with a
// turn id both ends agree on, the cancelled turn's AfterAgent as an
// interrupt (not a turn end), the approval box as blocked with its
// command, and the three-chunk reply's text from the transcript, byte for
// byte, where prompt_response is garbled.
func TestGeminiParseHookSamples(t *testing.T) {
	hooks, transcript := geminiSampleHooks(t)
	var kinds []Kind
	var stop, blocked, cancelled *Evidence
	var turnIDs []string
	for _, m := range hooks {
		ev := parseGemini(t, m)
		kinds = append(kinds, ev.Kind)
		if ev.ProviderID != "11111111-2222-3333-4444-555555555555" {
			t.Errorf("%s: provider id %q", ev.Event, ev.ProviderID)
		}
		switch ev.Kind {
		case KindStop:
			stop = &ev
		case KindBlocked:
			blocked = &ev
		case KindInterrupted:
			cancelled = &ev
		}
		if ev.Kind == KindPromptSubmitted || ev.Event == "AfterAgent" {
			turnIDs = append(turnIDs, ev.TurnID)
		}
	}
	want := []Kind{KindReady, KindPromptSubmitted, KindInterrupted, KindPromptSubmitted, KindActivity, KindBlocked, KindPromptSubmitted, KindStop, KindSessionEnd}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if stop == nil || stop.FinalText == nil || *stop.FinalText != "slow chunk 1/3. slow chunk 2/3. slow chunk 3/3." || stop.TextSource != rpc.TextSourceTranscript {
		t.Fatalf("stop = %+v", stop)
	}
	if cancelled.Reason != "Request cancelled." || cancelled.FinalText != nil {
		t.Errorf("cancel = %+v", cancelled)
	}
	if blocked.Reason != "permission" || blocked.Command != "touch declined-marker" || blocked.Tool != "run_shell_command" ||
		!blocked.Answerable || blocked.Input != "touch declined-marker" {
		t.Errorf("blocked = %+v", blocked)
	}
	// BeforeAgent and AfterAgent of one turn carry one id; turns differ.
	if len(turnIDs) != 5 || turnIDs[0] != turnIDs[1] || turnIDs[3] != turnIDs[4] || turnIDs[0] == turnIDs[3] || turnIDs[0] == "" {
		t.Errorf("turn ids %q", turnIDs)
	}
	// Without the transcript the turn still ends, with no text rather
	// than the garbled prompt_response.
	os.Remove(transcript)
	ev := parseGemini(t, hooks[len(hooks)-2])
	if ev.Kind != KindStop || ev.FinalText != nil {
		t.Errorf("without a transcript: %+v", ev)
	}
}

// A failed model call: Gemini writes an error record and still runs
// AfterAgent ("[no response text]"); the turn fails with the API's
// message.
func TestGeminiFailedTurn(t *testing.T) {
	dir := t.TempDir()
	transcript := filepath.Join(dir, "session-2026-12-05T13-48-22222222.jsonl")
	lines := `{"sessionId":"22222222-2222-3333-4444-555555555555","kind":"main"}
{"id":"u1","timestamp":"2026-12-05T13:48:24.400Z","type":"user","content":[{"text":"E2E-FAIL please"}]}
{"$set":{"lastUpdated":"2026-12-05T13:48:24.400Z"}}
{"id":"f7","timestamp":"2026-12-05T13:48:24.662Z","type":"error","content":"[API Error: {\"error\":{\"code\":400,\"message\":\"mock bad request\",\"status\":\"INVALID_ARGUMENT\"}}]"}
{"id":"b5","timestamp":"2026-12-05T13:48:24.662Z","type":"info","content":"This request failed. Press F12 for diagnostics."}
`
	os.WriteFile(transcript, []byte(lines), 0o600)
	ev := parseGemini(t, map[string]any{"hook_event_name": "AfterAgent", "session_id": "22222222-2222-3333-4444-555555555555",
		"transcript_path": transcript, "prompt": "E2E-FAIL please", "prompt_response": "[no response text]"})
	if ev.Kind != KindStopFailure || ev.Error != "INVALID_ARGUMENT: mock bad request" || ev.FinalText != nil {
		t.Fatalf("AfterAgent after an API error = %+v", ev)
	}
}

// The transcript's cancel record (written for an approval declined with
// Esc, which runs no hook) is an interrupt; nothing else in it is.
func TestGeminiTranscriptLines(t *testing.T) {
	data, err := os.ReadFile("testdata/gemini-transcript.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if ev := (Gemini{}).ParseTranscriptLine([]byte(line)); ev.Kind != KindIgnored {
			if ev.Kind != KindInterrupted {
				t.Errorf("line %.80s: %+v", line, ev)
			}
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d interrupts, want 2 (the cancel and the decline)", n)
	}
	// A prompt that mentions the phrase is no cancel.
	if ev := (Gemini{}).ParseTranscriptLine([]byte(`{"id":"x","type":"user","content":[{"text":"Request cancelled."}]}`)); ev.Kind != KindIgnored {
		t.Errorf("a user prompt taken for a cancel: %+v", ev)
	}
}

// Usage per turn: the recorded tool turn made two model calls (165 and
// 285 tokens), the tool-call message written twice and counted once.
func TestGeminiTurnUsage(t *testing.T) {
	f, err := os.Open("testdata/gemini-tool-turn.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, st := Gemini{}.TurnUsage(f, "")
	want := rpc.Usage{InputTokens: 135 + 257, OutputTokens: 30 + 28, TotalTokens: 450, Requests: 2}
	if st != TurnEnded || u == nil || *u != want {
		t.Fatalf("usage %+v state %s, want %+v ended", u, st, want)
	}
	// By turn id, in the longer session: the three-chunk turn only; the
	// cancelled turn ended with no model message; an unknown id is unseen.
	data, err := os.ReadFile("testdata/gemini-transcript.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	u, st = Gemini{}.TurnUsage(strings.NewReader(string(data)), geminiTurnID("SLOW-3 complete me"))
	if st != TurnEnded || u == nil || u.Requests != 1 || u.InputTokens != 136 || u.OutputTokens != 24 {
		t.Errorf("SLOW-3 turn: %+v %s", u, st)
	}
	u, st = Gemini{}.TurnUsage(strings.NewReader(string(data)), geminiTurnID("SLOW-6 cancel test"))
	if st != TurnEnded || u != nil {
		t.Errorf("cancelled turn: %+v %s", u, st)
	}
	if u, st = (Gemini{}).TurnUsage(strings.NewReader(string(data)), geminiTurnID("never sent")); st != TurnUnseen || u != nil {
		t.Errorf("unknown turn: %+v %s", u, st)
	}
	// The prompt written, no model message yet: open.
	open := string(data[:strings.Index(string(data), `"SLOW-3 complete me"`)]) + `"SLOW-3 complete me"}]}` + "\n"
	open = open[strings.LastIndex(open[:len(open)-40], "\n")+1:]
	if _, st := (Gemini{}).TurnUsage(strings.NewReader(open), ""); st != TurnOpen {
		t.Errorf("prompt only: %s (%q)", st, open)
	}
}

// A resume in a later minute names a stub transcript; the session's
// original file is used instead, and another session's file never.
func TestGeminiOriginalTranscript(t *testing.T) {
	dir := t.TempDir()
	id := "0d83c31e-cc45-4519-912c-16c8c8de4297"
	write := func(name, sid string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(`{"sessionId":"`+sid+`","kind":"main"}`+"\n"), 0o600)
		return p
	}
	orig := write("session-2026-12-05T07-08-0d83c31e.jsonl", id)
	write("session-2026-12-05T07-01-0d83c31e.jsonl", "0d83c31e-0000-0000-0000-000000000000")
	stub := write("session-2026-12-05T07-15-0d83c31e.jsonl", id)
	if got := geminiOriginalTranscript(stub, id); got != orig {
		t.Errorf("stub -> %s, want %s", got, orig)
	}
	if got := geminiOriginalTranscript(orig, id); got != orig {
		t.Errorf("original -> %s", got)
	}
	ev := parseGemini(t, map[string]any{"hook_event_name": "SessionStart", "session_id": id, "transcript_path": stub, "source": "resume"})
	if ev.Kind != KindReady || ev.Transcript != orig || ev.Reason != "resume" {
		t.Errorf("SessionStart = %+v", ev)
	}
}

// Prepare: a new Session gets --session-id, a resume --resume; the
// Session's Gemini home carries the user's settings (comments allowed)
// with dlgt's hooks added to theirs and retention off, links to the
// user's other entries, and its own tmp; the user's files are untouched.
func TestGeminiPrepare(t *testing.T) {
	home, state, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	user := filepath.Join(home, ".gemini")
	os.MkdirAll(filepath.Join(user, "tmp", "proj"), 0o700)
	userSettings := `{
  // the user's own
  "security": {"auth": {"selectedType": "oauth-personal"}},
  "model": {"name": "gemini-2.5-pro"},
  "general": {"sessionRetention": {"enabled": true, "maxAge": "30d"}},
  "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
}`
	os.WriteFile(filepath.Join(user, "settings.json"), []byte(userSettings), 0o600)
	os.WriteFile(filepath.Join(user, "oauth_creds.json"), []byte(`{"token":"t"}`), 0o600)
	bin := filepath.Join(t.TempDir(), "gemini")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	spec := Spec{Cwd: cwd, Env: map[string]string{"HOME": home, "DLGT_GEMINI_BIN": bin}, StateDir: state,
		HookArgv: []string{"/usr/bin/dlgt-hook", "--socket", "/s", "--launch", "L1"}, AutoApprove: true}
	l, err := Gemini{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	if l.ProviderID == "" || !slices.Contains(l.Argv, "--session-id") || !slices.Contains(l.Argv, l.ProviderID) || !slices.Contains(l.Argv, "--approval-mode=yolo") || !slices.Contains(l.Argv, "--skip-trust") {
		t.Errorf("argv %q", l.Argv)
	}
	ghome := filepath.Join(state, "gemini-home")
	if !slices.Contains(l.Env, "GEMINI_CLI_HOME="+ghome) {
		t.Errorf("env %q", l.Env)
	}
	var got map[string]any
	data, _ := os.ReadFile(filepath.Join(ghome, ".gemini", "settings.json"))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["security"].(map[string]any)["auth"].(map[string]any)["selectedType"] != "oauth-personal" ||
		got["model"].(map[string]any)["name"] != "gemini-2.5-pro" {
		t.Errorf("the user's settings were not carried: %s", data)
	}
	ret := got["general"].(map[string]any)["sessionRetention"].(map[string]any)
	if ret["enabled"] != false || ret["maxAge"] != "30d" {
		t.Errorf("retention %v", ret)
	}
	hooks := got["hooks"].(map[string]any)
	after := hooks["AfterAgent"].([]any)
	if len(after) != 2 || !strings.Contains(string(data), "notify-send done") || !strings.Contains(string(data), "exec /usr/bin/dlgt-hook --socket /s --launch L1 AfterAgent") {
		t.Errorf("hooks %s", data)
	}
	for _, ev := range geminiHookEvents {
		if hooks[ev] == nil {
			t.Errorf("no %s hook", ev)
		}
	}
	if dst, err := os.Readlink(filepath.Join(ghome, ".gemini", "oauth_creds.json")); err != nil || dst != filepath.Join(user, "oauth_creds.json") {
		t.Errorf("credentials link: %q %v", dst, err)
	}
	if _, err := os.Lstat(filepath.Join(ghome, ".gemini", "tmp")); err == nil {
		t.Error("the user's tmp (their conversations) is linked into the Session's home")
	}
	if b, _ := os.ReadFile(filepath.Join(user, "settings.json")); string(b) != userSettings {
		t.Error("the user's settings.json changed")
	}
	// Resume, options, model; effort is refused.
	spec.ProviderID, spec.Resume, spec.Model, spec.Options, spec.AutoApprove = l.ProviderID, true, "flash", []string{"approval-mode=default"}, true
	l2, err := Gemini{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(l2.Argv, " ")
	if !strings.Contains(joined, "--resume "+l.ProviderID) || strings.Contains(joined, "--session-id") || !strings.Contains(joined, "--model flash") ||
		strings.Contains(joined, "yolo") || !strings.Contains(joined, "--approval-mode=default") {
		t.Errorf("resume argv %q", l2.Argv)
	}
	spec.Effort = "high"
	if _, err := (Gemini{}).Prepare(spec); err == nil {
		t.Error("an effort was accepted")
	}
	for _, bad := range []string{"session-id=x", "yolo=true", "m=x", "nokv", "Bad Key=1"} {
		if err := (Gemini{}).ValidateOptions([]string{bad}); err == nil {
			t.Errorf("option %q accepted", bad)
		}
	}
	if err := (Gemini{}).ValidateOptions([]string{"approval-mode=plan", "policy=/p.toml"}); err != nil {
		t.Error(err)
	}
}

// The registry carries Gemini with its binary variable, and its config
// directory follows GEMINI_CLI_HOME the way Gemini does (a home, not the
// directory itself).
func TestGeminiDescriptor(t *testing.T) {
	d, err := Lookup("gemini")
	if err != nil {
		t.Fatal(err)
	}
	if d.BinEnv != "DLGT_GEMINI_BIN" || d.Harness.Name() != "gemini" || d.Harness.Info().TestedVersion != GeminiTestedVersion {
		t.Errorf("descriptor %+v", d)
	}
	env := map[string]string{"HOME": "/home/u"}
	if dir, _ := d.Config.Resolve(func(k string) string { return env[k] }); dir != "/home/u/.gemini" {
		t.Errorf("config dir %q", dir)
	}
	env["GEMINI_CLI_HOME"] = "/srv/g"
	if dir, _ := d.Config.Resolve(func(k string) string { return env[k] }); dir != "/srv/g/.gemini" {
		t.Errorf("config dir with GEMINI_CLI_HOME %q", dir)
	}
	if got := d.Config.Describe(); got != "${GEMINI_CLI_HOME:-~}/.gemini" {
		t.Errorf("Describe %q", got)
	}
	if keys := (Gemini{}).Submit("hello"); keys[len(keys)-1].Retry == nil || string(keys[len(keys)-1].Data) != "\r" {
		t.Errorf("Enter is not retried: %+v", keys[len(keys)-1])
	} else if a := keys[len(keys)-1].Await; a == nil || a.Settle < 40*time.Millisecond {
		t.Errorf("Enter does not wait out Gemini's 40 ms unsafe-paste window: %+v", a)
	}
}
