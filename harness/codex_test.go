package harness

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// codexSamples reads testdata/codex-hooks.jsonl: hook payloads captured
// from codex-cli 0.171.0 (exec and TUI), paths scrubbed.
func codexSamples(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/codex-hooks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		out[s.Event] = s.Payload
	}
	return out
}

func TestCodexParseHookSamples(t *testing.T) {
	samples := codexSamples(t)
	const thread = "01a2383d-01dc-7012-9a17-76961f00d070"
	const turn = "01a2383d-0215-7272-af1a-007a3cc730fc"
	parse := func(event string) Evidence {
		t.Helper()
		p, ok := samples[event]
		if !ok {
			t.Fatalf("no %s sample", event)
		}
		ev, err := Codex{}.ParseHook(event, p)
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		if ev.Event != event || ev.ProviderID == "" || !strings.HasSuffix(ev.Transcript, ev.ProviderID+".jsonl") {
			t.Fatalf("%s: evidence %+v", event, ev)
		}
		return ev
	}
	if ev := parse("SessionStart"); ev.Kind != KindReady || ev.ProviderID != thread || ev.Reason != "startup" {
		t.Fatalf("SessionStart = %+v", ev)
	}
	if ev := parse("UserPromptSubmit"); ev.Kind != KindPromptSubmitted || ev.Prompt == nil || *ev.Prompt != "USE-TOOL please" || ev.TurnID != turn {
		t.Fatalf("UserPromptSubmit = %+v", ev)
	}
	if ev := parse("PreToolUse"); ev.Kind != KindActivity || ev.Tool != "Bash" {
		t.Fatalf("PreToolUse = %+v", ev)
	}
	if ev := parse("PostToolUse"); ev.Kind != KindActivity {
		t.Fatalf("PostToolUse = %+v", ev)
	}
	if ev := parse("Stop"); ev.Kind != KindStop || ev.FinalText == nil || *ev.FinalText != "MOCK-AFTER-TOOL" || ev.TurnID != turn {
		t.Fatalf("Stop = %+v", ev)
	}
	if ev := parse("SessionEnd"); ev.Kind != KindSessionEnd || ev.Reason != "other" {
		t.Fatalf("SessionEnd = %+v", ev)
	}
	if ev := parse("PermissionRequest"); ev.Kind != KindBlocked || ev.Reason != "permission" || ev.Tool != "Bash" || ev.Command != "touch escmarker" || ev.TurnID == "" {
		t.Fatalf("PermissionRequest = %+v", ev)
	}
	if ev := parse("Interrupt"); ev.Kind != KindInterruptRequested || ev.TurnID == "" {
		t.Fatalf("Interrupt = %+v", ev)
	}
}

func TestCodexParseHookRejects(t *testing.T) {
	if _, err := (Codex{}).ParseHook("Stop", []byte("not json")); err == nil {
		t.Fatal("non-JSON accepted")
	}
	if _, err := (Codex{}).ParseHook("Stop", []byte(`{"hook_event_name":"SessionStart"}`)); err == nil {
		t.Fatal("mismatched event accepted")
	}
	ev, err := Codex{}.ParseHook("PreCompact", []byte(`{"session_id":"x"}`))
	if err != nil || ev.Kind != KindIgnored {
		t.Fatalf("unknown event: %+v %v", ev, err)
	}
}

func TestCodexParseTranscriptLine(t *testing.T) {
	data, err := os.ReadFile("testdata/codex-rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var failures, aborted []Evidence
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ev := Codex{}.ParseTranscriptLine([]byte(line))
		switch ev.Kind {
		case KindIgnored:
		case KindStopFailure:
			failures = append(failures, ev)
		case KindInterrupted:
			aborted = append(aborted, ev)
		default:
			t.Fatalf("unexpected evidence %+v from %s", ev, line)
		}
	}
	// One turn of the capture failed on a 400 from the mock.
	if len(failures) != 1 || failures[0].TurnID != "01a23af4-44cb-78b0-a660-55d6bafac51e" ||
		failures[0].Error != "invalid_request_error: mock bad request" {
		t.Fatalf("failures = %+v", failures)
	}
	// One turn of the capture was interrupted with Esc.
	if len(aborted) != 1 || aborted[0].TurnID != "01a23af4-9c1e-7233-b2d3-1b98ab0ace3d" ||
		aborted[0].Reason != "interrupted" || aborted[0].Event != "rollout:turn_aborted" {
		t.Fatalf("aborted = %+v", aborted)
	}
	if ev := (Codex{}).ParseTranscriptLine([]byte(`{"type":"event_msg","payload":{"type":"stream_error","message":"Reconnecting... 2/5","attempt":2}}`)); ev.Kind != KindRetrying || ev.Attempt != 2 {
		t.Fatalf("stream_error = %+v", ev)
	}
	if ev := (Codex{}).ParseTranscriptLine([]byte(`garbage`)); ev.Kind != KindIgnored {
		t.Fatalf("garbage = %+v", ev)
	}
}

func TestCodexPrepare(t *testing.T) {
	spec := Spec{
		Cwd: `/work/a "b"`, Env: map[string]string{"DLGT_CODEX_BIN": "/bin/codex", "CODEX_HOME": "/home/u/.codex"},
		HookArgv: []string{"/usr/bin/dlgt", "hook", "--socket", "/s", "--launch", "internal:1"},
		Model:    "gpt-5.5", Effort: "high", Options: []string{"model_providers.mock.request_max_retries=0"},
	}
	l, err := Codex{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, "\x00")
	for _, want := range []string{
		"--no-daemon", "check_for_update_on_startup=false", `projects={"/work/a \"b\""={trust_level="trusted"}}`,
		"--dangerously-bypass-hook-trust", `model="gpt-5.5"`, `model_reasoning_effort="high"`,
		`approval_policy="on-request"`, "model_providers.mock.request_max_retries=0",
		`hooks.Stop=[{hooks=[{type="command",command="exec /usr/bin/dlgt hook --socket /s --launch internal:1 Stop",timeout=30}]}]`,
		// The forwarder waits for session.respond's answer: a timeout
		// above hookfwd.DecisionWait.
		`hooks.PermissionRequest=[{matcher="*",hooks=[{type="command",command="exec /usr/bin/dlgt hook --socket /s --launch internal:1 PermissionRequest",timeout=600}]}]`,
		`hooks.PreToolUse=[{matcher="*",hooks=[{type="command",command="exec /usr/bin/dlgt hook --socket /s --launch internal:1 PreToolUse",timeout=30}]}]`,
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q:\n%s", want, strings.ReplaceAll(argv, "\x00", " "))
		}
	}
	if l.Argv[0] != "/bin/codex" || l.ProviderID != "" || slices.Contains(l.Argv, "resume") {
		t.Fatalf("argv = %q provider %q", l.Argv, l.ProviderID)
	}
	if !slices.Contains(l.Env, "CODEX_HOME=/home/u/.codex") {
		t.Fatalf("env lost CODEX_HOME: %q", l.Env)
	}
	spec.Resume, spec.ProviderID, spec.AutoApprove = true, "01a2383d-01dc-7012-9a17-76961f00d070", true
	l, err = Codex{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	if l.Argv[1] != "resume" || l.Argv[len(l.Argv)-1] != spec.ProviderID || l.Argv[len(l.Argv)-2] != "--" || !slices.Contains(l.Argv, `approval_policy="never"`) {
		t.Fatalf("resume argv = %q", l.Argv)
	}
	if l.ProviderID != spec.ProviderID || !l.ReadyAtSpawn {
		t.Fatalf("restart launch: provider %q ready at spawn %v", l.ProviderID, l.ReadyAtSpawn)
	}
	// Resume with a prompt: Codex submits it, and its SessionStart is the
	// ready point.
	spec.Prompt = "-looks like a flag\nsecond line"
	if l, err = (Codex{}).Prepare(spec); err != nil || l.ReadyAtSpawn || !slices.Equal(l.Argv[len(l.Argv)-3:], []string{"--", spec.ProviderID, spec.Prompt}) {
		t.Fatalf("resume with prompt: %q ready %v err %v", l.Argv, l.ReadyAtSpawn, err)
	}
	// A new thread: the first prompt after "--".
	spec.Resume, spec.ProviderID = false, ""
	if l, err = (Codex{}).Prepare(spec); err != nil || l.ReadyAtSpawn || l.ProviderID != "" || !slices.Equal(l.Argv[len(l.Argv)-2:], []string{"--", spec.Prompt}) {
		t.Fatalf("new with prompt: %q err %v", l.Argv, err)
	}
	if err := (Codex{}).LaunchPrompt(strings.Repeat("x", 131072)); err == nil {
		t.Fatal("a prompt over one argv string's limit was accepted")
	}
	if err := (Codex{}).LaunchPrompt(strings.Repeat("x", 131071)); err != nil {
		t.Fatal(err)
	}
}

func TestCodexValidateOptions(t *testing.T) {
	if err := (Codex{}).ValidateOptions([]string{"model_providers.x.base_url=\"http://h\"", "sandbox_mode=read-only"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"hooks.Stop=[]", "notify=[]", "projects.x.trust_level=1", "projects={}", "model=o3", "noequals", "Bad Key=1"} {
		if err := (Codex{}).ValidateOptions([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCodexSpareReady: a warm Codex spare waits for bracketed paste and
// then for the footer Codex draws once its thread started, boundedly;
// Claude Code and Gemini CLI spares are ready at their SessionStart.
func TestCodexSpareReady(t *testing.T) {
	var h Harness = Codex{}
	r, ok := h.(SpareReadier)
	if !ok {
		t.Fatal("Codex is not a SpareReadier")
	}
	a := r.SpareReady()
	if !a.PasteMode || len(a.Shown) == 0 || a.Timeout <= 0 || len(a.Echo) != 0 {
		t.Errorf("SpareReady() = %+v", a)
	}
	for _, other := range []Harness{Claude{}, Gemini{}} {
		if _, ok := other.(SpareReadier); ok {
			t.Errorf("%s is a SpareReadier", other.Name())
		}
	}
}
