package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// copilotRecordedHooks are the hook payloads GitHub Copilot CLI 1.0.102
// sent for one tool turn in its TUI (offline, a mock model): a prompt, a
// bash call asked at the dialog and allowed, the reply, then Ctrl-C twice.
func copilotRecordedHooks(t *testing.T) []struct {
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
} {
	t.Helper()
	f, err := os.Open("testdata/copilot-hooks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []struct {
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var h struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// The recorded hooks map to the lifecycle: ready on sessionStart (which
// Copilot runs only with the first prompt), the prompt on
// userPromptSubmitted, nothing on permissionRequest (it also fires for
// tools that are allowed), blocked on notification permission_prompt,
// activity on the tool hooks, the end on agentStop.
func TestCopilotRecordedHooks(t *testing.T) {
	const id = "22222222-2222-4333-8444-555555555555"
	want := map[string]Kind{
		"sessionStart": KindReady, "userPromptSubmitted": KindPromptSubmitted,
		"preToolUse": KindActivity, "permissionRequest": KindIgnored,
		"notification": KindBlocked, "postToolUse": KindActivity,
		"agentStop": KindStop, "sessionEnd": KindSessionEnd,
	}
	hooks := copilotRecordedHooks(t)
	if len(hooks) != len(want) {
		t.Fatalf("%d recorded hooks, want %d", len(hooks), len(want))
	}
	for _, h := range hooks {
		ev, err := Copilot{}.ParseHook(h.Event, h.Payload)
		if err != nil {
			t.Fatalf("%s: %v", h.Event, err)
		}
		if ev.Kind != want[h.Event] || ev.ProviderID != id {
			t.Errorf("%s: kind %v provider %q, want %v %q", h.Event, ev.Kind, ev.ProviderID, want[h.Event], id)
		}
		switch h.Event {
		case "userPromptSubmitted":
			if ev.Prompt == nil || *ev.Prompt != "USE-TOOL now.txt please" || ev.TurnID != copilotTurnID("USE-TOOL now.txt please") {
				t.Errorf("prompt %v turn %q", ev.Prompt, ev.TurnID)
			}
		case "notification":
			if ev.Reason != "permission" || !ev.Answerable || ev.Command != "date > now.txt" || ev.Tool != "bash" {
				t.Errorf("blocked = %+v", ev)
			}
		case "preToolUse":
			// The call as the recorded hook lists it; no id, since
			// postToolUse gives none: the daemon pairs the two by name
			// and input.
			tc := ev.ToolCall
			if tc == nil || tc.Phase != ToolStarted || tc.ID != "" || tc.Name != "bash" || tc.Command != "date > now.txt" ||
				string(tc.Input) != `{"command":"date > now.txt","description":"mockapi tool call"}` {
				t.Errorf("preToolUse tool call %+v", tc)
			}
		case "postToolUse":
			tc := ev.ToolCall
			if tc == nil || tc.Phase != ToolCompleted || tc.ID != "" || tc.Name != "bash" || tc.Command != "date > now.txt" ||
				string(tc.Input) != `{"command":"date > now.txt","description":"mockapi tool call"}` ||
				string(tc.Output) != `"\n<shellId: 0 completed with exit code 0>"` || tc.Error != "" {
				t.Errorf("postToolUse tool call %+v", tc)
			}
		case "agentStop":
			// The text is read by the daemon once the log holds the
			// turn (LastReply): Copilot writes it after this hook.
			if !strings.HasSuffix(ev.Transcript, "/session-state/"+id+"/events.jsonl") || ev.FinalText != nil {
				t.Errorf("transcript %q text %v", ev.Transcript, ev.FinalText)
			}
		}
	}
	if _, err := (Copilot{}).ParseHook("agentStop", []byte("[1]")); err == nil {
		t.Error("a payload that is not an object was taken")
	}
}

// The other shapes of Copilot's tool hooks: a preToolUse naming its tool
// as postToolUse does (toolName, toolArgs), and a tool that did not
// succeed, whose text for the model is the error.
func TestCopilotToolHookShapes(t *testing.T) {
	ev, err := Copilot{}.ParseHook("preToolUse", []byte(`{"sessionId":"x","toolName":"bash","toolArgs":{"command":"ls"}}`))
	if err != nil || ev.Kind != KindActivity || ev.ToolCall == nil || ev.ToolCall.Name != "bash" || ev.ToolCall.Command != "ls" || ev.ToolCall.Phase != ToolStarted {
		t.Errorf("preToolUse with toolName: %+v %v", ev.ToolCall, err)
	}
	ev, err = Copilot{}.ParseHook("postToolUse", []byte(`{"sessionId":"x","toolName":"bash","toolArgs":{"command":"false"},"toolResult":{"resultType":"failure","textResultForLlm":"exit code 1"}}`))
	if err != nil || ev.ToolCall == nil || ev.ToolCall.Phase != ToolFailed || ev.ToolCall.Error != "exit code 1" {
		t.Errorf("failed postToolUse: %+v %v", ev.ToolCall, err)
	}
	// A hook with no tool in it reports activity and no call.
	ev, err = Copilot{}.ParseHook("preToolUse", []byte(`{"sessionId":"x"}`))
	if err != nil || ev.Kind != KindActivity || ev.ToolCall != nil {
		t.Errorf("preToolUse without a tool: %+v %v", ev, err)
	}
}

// A notification other than a permission prompt is not a block.
func TestCopilotOtherNotification(t *testing.T) {
	ev, err := Copilot{}.ParseHook("notification", []byte(`{"sessionId":"x","message":"done","notification_type":"idle_prompt"}`))
	if err != nil || ev.Kind != KindIgnored {
		t.Fatalf("%+v %v", ev, err)
	}
}

// A turn's text is the last assistant message of its turn in the log,
// byte for byte (markdown, blank lines and the trailing newline kept),
// matched by the turn's prompt; a turn that failed or was aborted, a
// prompt the log does not hold and a turn whose last model call is not
// written yet have none.
func TestCopilotLastReply(t *testing.T) {
	read := func(path, prompt string) (string, bool) {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return Copilot{}.LastReply(f, prompt)
	}
	const session, tool = "testdata/copilot-session.jsonl", "testdata/copilot-tool-turn.jsonl"
	if text, ok := read(session, "MULTI go"); !ok || text != "first line\n\n  second **bold** line\nthird\n" {
		t.Fatalf("text %q %v", text, ok)
	}
	for _, p := range []string{"FAIL please", "SLOW please", "never sent"} {
		if text, ok := read(session, p); ok {
			t.Errorf("%q: text %q, want none", p, text)
		}
	}
	if text, ok := read(tool, "USE-TOOL now.txt please"); !ok || text != "Wrote the date to now.txt." {
		t.Fatalf("tool turn: %q %v", text, ok)
	}
	// The log cut after the tool call's message: the turn is not ended.
	data, err := os.ReadFile(tool)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := ""
	for _, l := range lines {
		cut += l
		if strings.Contains(l, `"type":"assistant.message"`) {
			break
		}
	}
	if text, ok := (Copilot{}).LastReply(strings.NewReader(cut), "USE-TOOL now.txt please"); ok {
		t.Fatalf("a turn cut after its tool call gave %q", text)
	}
	// The same prompt earlier with its reply, then again with none yet:
	// the earlier reply is not this turn's.
	turn := func(prompt, reply string) string {
		u, _ := json.Marshal(map[string]any{"type": "user.message", "data": map[string]any{"content": prompt}})
		out := string(u) + "\n"
		if reply != "" {
			a, _ := json.Marshal(map[string]any{"type": "assistant.message", "data": map[string]any{"content": reply, "toolRequests": []any{}}})
			out += string(a) + "\n"
		}
		return out
	}
	if text, ok := (Copilot{}).LastReply(strings.NewReader(turn("again", "OLD")+turn("again", "")), "again"); ok {
		t.Fatalf("the earlier turn's reply %q taken", text)
	}
	// A long paste Copilot saved to a file: the user message names it.
	paste := filepath.Join(t.TempDir(), "paste-1.txt")
	big := strings.Repeat("BIG-PROMPT: line\n", 2000)
	if err := os.WriteFile(paste, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	tag := `<pasted_content file="` + paste + `" size="33.2 KB" lines="2000" />`
	if text, ok := (Copilot{}).LastReply(strings.NewReader(turn(tag, "BIG-REPLY")), big); !ok || text != "BIG-REPLY" {
		t.Fatalf("saved paste: %q %v", text, ok)
	}
	if text, ok := (Copilot{}).LastReply(strings.NewReader(turn(tag, "BIG-REPLY")), big+"more"); ok {
		t.Fatalf("a saved paste of another prompt gave %q", text)
	}
}

// The log's abort (Ctrl-C while working, Esc at the dialog) and
// session.error (a failed model call) are the turn's end no hook reports.
func TestCopilotLogLines(t *testing.T) {
	data, err := os.ReadFile("testdata/copilot-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	var failure string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ev := Copilot{}.ParseTranscriptLine([]byte(line))
		if ev.Kind != KindIgnored {
			kinds = append(kinds, ev.Kind)
		}
		if ev.Kind == KindStopFailure {
			failure = ev.Error
		}
	}
	if len(kinds) != 2 || kinds[0] != KindStopFailure || kinds[1] != KindInterrupted {
		t.Fatalf("kinds %v, want a failure then an abort", kinds)
	}
	if failure != "400 scripted bad request" {
		t.Fatalf("failure %q", failure)
	}
}

// A tool turn's usage is both model calls' usage records, once each.
func TestCopilotTurnUsage(t *testing.T) {
	f, err := os.Open("testdata/copilot-tool-turn.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, st := Copilot{}.TurnUsage(f, copilotTurnID("USE-TOOL now.txt please"))
	if st != TurnEnded || u == nil || u.Requests != 2 || u.InputTokens != 20 || u.OutputTokens != 9 {
		t.Fatalf("usage %+v state %v", u, st)
	}
	f.Seek(0, 0)
	if u, st := (Copilot{}).TurnUsage(f, copilotTurnID("another prompt")); u != nil || st != TurnUnseen {
		t.Fatalf("another turn: %+v %v", u, st)
	}
}

// Trust is the user's: a folder in trustedFolders or under one, never a
// sibling sharing a prefix, nor anything without a config.
func TestCopilotTrusted(t *testing.T) {
	dir := t.TempDir()
	cfg := "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"trustedFolders\": [\"/home/u/work\", \"relative\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	for cwd, want := range map[string]bool{
		"/home/u/work": true, "/home/u/work/repo": true, "/home/u/work/": true,
		"/home/u/workshop": false, "/home/u": false, "/relative": false,
	} {
		if got := CopilotTrusted(dir, cwd, none); got != want {
			t.Errorf("%s: trusted %v, want %v", cwd, got, want)
		}
	}
	if CopilotTrusted(t.TempDir(), "/home/u/work", none) {
		t.Error("trusted without any config")
	}
	allow := func(k string) string {
		if k == "COPILOT_ALLOW_ALL" {
			return "true"
		}
		return ""
	}
	if !CopilotTrusted("", "/anywhere", allow) {
		t.Error("COPILOT_ALLOW_ALL=true does not trust")
	}
}

// A launch in a folder the user does not trust fails with a hint and
// writes nothing; a trusted one gets a home of its own whose hooks are
// dlgt's and the user's, with copies of their config and links to the
// rest, and the user's directory is left exactly as it was.
func TestCopilotPrepareHome(t *testing.T) {
	user := t.TempDir()
	cfg := []byte(`{"trustedFolders": ["/work"]}`)
	os.WriteFile(filepath.Join(user, "config.json"), cfg, 0o600)
	os.WriteFile(filepath.Join(user, "mcp-config.json"), []byte(`{"mcpServers":{}}`), 0o600)
	os.MkdirAll(filepath.Join(user, "hooks"), 0o700)
	os.WriteFile(filepath.Join(user, "hooks", "mine.json"), []byte(`{"version":1,"hooks":{}}`), 0o600)
	bin := filepath.Join(t.TempDir(), "copilot")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	state := t.TempDir()
	spec := Spec{Cwd: "/elsewhere", StateDir: state, HookArgv: []string{"/bin/dlgt", "hook"},
		Env: map[string]string{"DLGT_COPILOT_BIN": bin, "COPILOT_HOME": user, "HOME": "/nonexistent"}}
	_, err := Copilot{}.Prepare(spec)
	var re *rpc.Error
	if !asRPC(err, &re) || re.Code != rpc.CodeLaunchFailed || !strings.Contains(re.Message, "does not trust /elsewhere") {
		t.Fatalf("untrusted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "copilot-home")); !os.IsNotExist(err) {
		t.Fatalf("an untrusted launch wrote its home: %v", err)
	}
	spec.Cwd, spec.Prompt, spec.AutoApprove = "/work/repo", "-starts with a dash", true
	l, err := Copilot{}.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, "\x00")
	for _, want := range []string{"--session-id=" + l.ProviderID, "--allow-all-tools", "--interactive=-starts with a dash"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv %q lacks %q", l.Argv, want)
		}
	}
	home := filepath.Join(state, "copilot-home")
	if !strings.Contains(strings.Join(l.Env, "\n"), "COPILOT_HOME="+home) {
		t.Errorf("env lacks COPILOT_HOME=%s", home)
	}
	var hooks struct {
		Hooks map[string][]struct{ Bash string }
	}
	data, _ := os.ReadFile(filepath.Join(home, "hooks", copilotHookFile))
	if err := json.Unmarshal(data, &hooks); err != nil || len(hooks.Hooks) != len(copilotHookEvents) ||
		!strings.Contains(hooks.Hooks["agentStop"][0].Bash, "agentStop") {
		t.Fatalf("hook file: %v\n%s", err, data)
	}
	if dst, err := os.Readlink(filepath.Join(home, "hooks", "mine.json")); err != nil || dst != filepath.Join(user, "hooks", "mine.json") {
		t.Errorf("the user's hook is not linked: %q %v", dst, err)
	}
	if dst, err := os.Readlink(filepath.Join(home, "mcp-config.json")); err != nil || dst != filepath.Join(user, "mcp-config.json") {
		t.Errorf("the user's MCP servers are not linked: %q %v", dst, err)
	}
	if fi, err := os.Lstat(filepath.Join(home, "config.json")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("config.json is not a copy: %v", err)
	}
	if got := copilotLog(l.ProviderID); got != filepath.Join(home, "session-state", l.ProviderID, "events.jsonl") {
		t.Errorf("session log %q", got)
	}
	ents, _ := os.ReadDir(user)
	if len(ents) != 3 {
		t.Errorf("the user's directory holds %d entries, want its 3", len(ents))
	}
	// A resume without a prompt is ready at spawn.
	spec.Resume, spec.Prompt, spec.ProviderID = true, "", l.ProviderID
	l, err = Copilot{}.Prepare(spec)
	if err != nil || !l.ReadyAtSpawn || !strings.Contains(strings.Join(l.Argv, " "), "--resume="+spec.ProviderID) {
		t.Fatalf("resume: %+v %v", l, err)
	}
}

func asRPC(err error, re **rpc.Error) bool {
	e, ok := err.(*rpc.Error)
	*re = e
	return ok
}

// Options dlgt manages are refused; others pass as --KEY=VALUE.
func TestCopilotValidateOptions(t *testing.T) {
	if err := (Copilot{}).ValidateOptions([]string{"allow-tool=shell(git:*)", "add-dir=/x"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"session-id=x", "resume=x", "allow-all-tools=true", "noequals", "bad key=1"} {
		if err := (Copilot{}).ValidateOptions([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The dialog is answered with its keys once drawn; a deny takes no message.
func TestCopilotAnswerKeys(t *testing.T) {
	k, err := Copilot{}.AnswerKeys(rpc.DecisionAllow, "")
	if err != nil || len(k) != 1 || string(k[0].Data) != "\r" || k[0].Await == nil || k[0].Await.Shown[0] != copilotDialogShown {
		t.Fatalf("allow: %+v %v", k, err)
	}
	k, err = Copilot{}.AnswerKeys(rpc.DecisionDeny, "")
	if err != nil || len(k) != 1 || string(k[0].Data) != "\x1b" {
		t.Fatalf("deny: %+v %v", k, err)
	}
	if _, err := (Copilot{}).AnswerKeys(rpc.DecisionDeny, "why"); err == nil {
		t.Fatal("a deny message was taken")
	}
}

// Copilot's --version ends its sentence with a period ("GitHub Copilot CLI
// 1.0.102."): the release number is read without it, so doctor and
// harness.list compare it with the tested version as it is.
func TestProbeVersionCopilot(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "copilot")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'GitHub Copilot CLI 1.0.102.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := ProbeVersion(context.Background(), bin, nil)
	if err != nil || v != CopilotTestedVersion {
		t.Fatalf("version %q %v, want %q", v, err, CopilotTestedVersion)
	}
}
