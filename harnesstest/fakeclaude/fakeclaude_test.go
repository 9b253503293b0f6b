package fakeclaude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
)

const sessionID = "11111111-2222-4333-8444-555555555555"

func expectNames(t *testing.T, evs []event, want ...string) {
	t.Helper()
	if got := strings.Join(names(evs), " "); got != strings.Join(want, " ") {
		t.Fatalf("hook sequence\n  %s\nwant\n  %s", got, strings.Join(want, " "))
	}
}

func TestPromptHooks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv(), "--session-id", sessionID, "--settings", w.settings(),
		"--effort", "high", "--permission-mode=auto", "--some-option=1")
	p.waitOutput(promptMark)
	p.submit("hello fake")
	evs := w.waitCount("Stop", 1)
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "Stop")

	start, ups, stop := evs[0], evs[1], evs[2]
	wantPath := filepath.Join(w.home, ".claude", "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(w.cwd, "-"), sessionID+".jsonl")
	for _, e := range evs {
		if e.str("session_id") != sessionID || e.str("transcript_path") != wantPath || e.str("cwd") != w.cwd || e.str("hook_event_name") != e.name {
			t.Errorf("%s common fields: %s", e.name, e.raw)
		}
	}
	if start.str("source") != "startup" || start.str("model") == "" {
		t.Errorf("SessionStart: %s", start.raw)
	}
	if ups.str("prompt") != "hello fake" || ups.str("permission_mode") != "auto" || ups.str("prompt_id") == "" {
		t.Errorf("UserPromptSubmit: %s", ups.raw)
	}
	want := mockapi.DefaultText("hello fake")
	if stop.str("last_assistant_message") != want || stop.str("prompt_id") != ups.str("prompt_id") ||
		stop.payload["stop_hook_active"] != false || fmt.Sprint(stop.payload["effort"]) != "map[level:high]" {
		t.Errorf("Stop: %s", stop.raw)
	}
	p.waitOutput("● " + want)

	tr := transcriptLines(t, wantPath)
	if len(tr) != 2 || tr[0]["type"] != "user" || tr[1]["type"] != "assistant" || assistantText(tr[1]) != want {
		t.Errorf("transcript: %v", tr)
	}
	if msg := tr[0]["message"].(map[string]any); msg["role"] != "user" || msg["content"] != "hello fake" {
		t.Errorf("transcript user entry: %v", tr[0])
	}

	p.submit("/exit")
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d after /exit", code)
	}
	evs = w.events()
	if end := last(evs, "SessionEnd"); end.str("reason") != "prompt_input_exit" {
		t.Errorf("SessionEnd: %s", end.raw)
	}
	if n := count(evs, "UserPromptSubmit"); n != 1 {
		t.Errorf("/exit fired UserPromptSubmit (%d in all)", n)
	}
	checkShapes(t, evs)
}

// bigPrompt is a ~100 KB multi-line prompt with tabs, quotes, backslashes
// and non-ASCII text.
func bigPrompt() string {
	var b strings.Builder
	b.WriteString("[[echo]] BIG-PROMPT\n")
	for i := 0; b.Len() < 100<<10; i++ {
		fmt.Fprintf(&b, "line %05d\t\"quoted\" back\\slash <tag> & $HOME `tick` 你好 ●\n", i)
	}
	b.WriteString("END")
	return b.String()
}

func TestBigPaste(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv(), "--session-id", sessionID, "--settings", w.settings())
	p.waitOutput(promptMark)
	prompt := bigPrompt()
	p.submit(prompt)
	evs := w.waitCount("Stop", 1)
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "Stop")
	if got := evs[1].str("prompt"); got != prompt {
		t.Fatalf("the %d-byte prompt arrived as %d bytes", len(prompt), len(got))
	}
	if got := evs[2].str("last_assistant_message"); got != prompt {
		t.Fatalf("the echo reply is %d bytes, want %d", len(got), len(prompt))
	}
	// Nothing else was submitted: an Enter now finds an empty draft.
	p.write("\r")
	p.submit("small")
	evs = w.waitCount("Stop", 2)
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "Stop", "UserPromptSubmit", "Stop")
	if got := evs[3].str("prompt"); got != "small" {
		t.Fatalf("second prompt %q", got)
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv("FAKECLAUDE_IDLE_MS=50"), "--session-id", sessionID, "--settings", w.settings())
	p.waitOutput(promptMark)
	p.submit("[[slow 600000]] take your time")
	w.waitCount("UserPromptSubmit", 1)
	p.waitOutput("esc to interrupt")
	p.keys(harness.Claude{}.Interrupt())
	p.waitOutput("⎿  Interrupted")
	// Only the idle notification follows an interrupted turn.
	evs := w.waitCount("Notification", 1)
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "Notification")
	if n := evs[2]; n.str("notification_type") != "idle_prompt" || n.str("prompt_id") != evs[1].str("prompt_id") {
		t.Errorf("Notification: %s", n.raw)
	}

	p.submit("after the interrupt")
	evs = w.waitCount("Stop", 1)
	stop := last(evs, "Stop")
	if stop.str("last_assistant_message") != mockapi.DefaultText("after the interrupt") || stop.str("prompt_id") != last(evs, "UserPromptSubmit").str("prompt_id") {
		t.Errorf("Stop: %s", stop.raw)
	}
	tr := transcriptLines(t, evs[0].str("transcript_path"))
	if len(tr) != 4 || !strings.Contains(fmt.Sprint(tr[1]["message"]), "[Request interrupted by user]") {
		t.Errorf("transcript: %v", tr)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	evs = w.events()
	if end := last(evs, "SessionEnd"); end.str("reason") != "other" || end.str("prompt_id") != stop.str("prompt_id") {
		t.Errorf("SessionEnd: %s", end.raw)
	}
	checkShapes(t, evs)
}

func TestPermission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv("FAKECLAUDE_PERMISSION_NOTIFY_MS=20"), "--session-id", sessionID,
		"--settings", w.settings(), "--permission-mode", "default")
	p.waitOutput(promptMark)
	const dialog = "Do you want to proceed?\r\n❯ 1. Yes\r\n  2. No"

	p.submit("[[tool echo probe > probe.txt]] write it")
	w.waitEvents("permission_prompt", func(evs []event) bool {
		return last(evs, "Notification").str("notification_type") == "permission_prompt"
	})
	p.waitOutput(dialog)
	p.write("1")
	evs := w.waitCount("Stop", 1)
	// The PermissionRequest hook and the dialog's Notification run at
	// once, as in the real CLI: their lines land in the log in either
	// order.
	if len(evs) > 4 && evs[3].name == "Notification" && evs[4].name == "PermissionRequest" {
		evs[3], evs[4] = evs[4], evs[3]
	}
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Notification", "PostToolUse", "Stop")
	pre, req, post := evs[2], evs[3], evs[5]
	for _, e := range []event{pre, req, post} {
		if e.str("tool_name") != "Bash" || fmt.Sprint(e.payload["tool_input"].(map[string]any)["command"]) != "echo probe > probe.txt" {
			t.Errorf("%s: %s", e.name, e.raw)
		}
	}
	if pre.str("tool_use_id") == "" || pre.str("tool_use_id") != post.str("tool_use_id") {
		t.Errorf("tool_use_id: %s / %s", pre.raw, post.raw)
	}
	if b, err := os.ReadFile(filepath.Join(w.cwd, "probe.txt")); err != nil || string(b) != "probe\n" {
		t.Errorf("probe.txt = %q, %v", b, err)
	}

	// Declined with Esc (harness.Claude.DismissDialog): like the real CLI,
	// the turn ends as an interrupt, with no PostToolUse and no Stop, and
	// the transcript says so.
	p.submit("[[tool echo no > declined.txt]] again")
	w.waitCount("PermissionRequest", 2)
	p.waitOutput("again")
	deadline := time.Now().Add(waitFor)
	for strings.Count(p.output(), dialog) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("second dialog not shown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.keys(harness.Claude{}.DismissDialog())
	p.waitOutput("Interrupted")
	tpath := filepath.Join(w.home, ".claude", "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(w.cwd, "-"), sessionID+".jsonl")
	for deadline := time.Now().Add(waitFor); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(tpath); strings.Contains(string(b), "[Request interrupted by user for tool use]") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the transcript does not record the declined tool as an interrupt")
		}
	}
	evs = w.events()
	if n := count(evs, "Stop"); n != 1 {
		t.Errorf("%d Stop hooks, want only the first turn's", n)
	}
	if n := count(evs, "PostToolUse"); n != 1 {
		t.Errorf("%d PostToolUse", n)
	}
	if _, err := os.Stat(filepath.Join(w.cwd, "declined.txt")); err == nil {
		t.Error("the declined command ran")
	}
	checkShapes(t, evs)
}

func TestResume(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv(), "--session-id", sessionID, "--settings", w.settings())
	p.waitOutput(promptMark)
	p.submit("first prompt")
	w.waitCount("Stop", 1)
	p.submit("/exit")
	p.wait()

	if code, out := w.runPlain("--session-id", sessionID); code != 1 || !strings.Contains(out, "already in use") {
		t.Errorf("reusing --session-id: exit %d, %q", code, out)
	}
	if code, out := w.runPlain("--resume", "22222222-2222-4333-8444-555555555555"); code != 1 || !strings.Contains(out, "No conversation found") {
		t.Errorf("resuming an unknown id: exit %d, %q", code, out)
	}

	p = w.start(w.baseEnv(), "--resume", sessionID, "--settings", w.settings())
	evs := w.waitCount("SessionStart", 2)
	start := last(evs, "SessionStart")
	if start.str("session_id") != sessionID || start.str("source") != "resume" || start.str("transcript_path") != evs[0].str("transcript_path") {
		t.Errorf("resumed SessionStart: %s", start.raw)
	}
	p.waitOutput("● " + mockapi.DefaultText("first prompt")) // history replayed
	p.waitOutput(promptMark)
	p.submit("second prompt")
	evs = w.waitCount("Stop", 2)
	if stop := last(evs, "Stop"); stop.str("session_id") != sessionID || stop.str("last_assistant_message") != mockapi.DefaultText("second prompt") {
		t.Errorf("Stop after resume: %s", stop.raw)
	}
	if tr := transcriptLines(t, start.str("transcript_path")); len(tr) != 4 {
		t.Errorf("transcript has %d entries, want 4", len(tr))
	}
	checkShapes(t, evs)
}

func TestDirectives(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	settings := filepath.Join(t.TempDir(), "settings.json") // --settings also takes a file
	if err := os.WriteFile(settings, []byte(w.settings()), 0o600); err != nil {
		t.Fatal(err)
	}
	p := w.start(w.baseEnv(), "--session-id", sessionID, "--settings", settings)
	p.waitOutput(promptMark)
	w.waitCount("SessionStart", 1)
	stops := 0
	turn := func(prompt, end string) []event {
		t.Helper()
		before := len(w.events())
		p.submit(prompt)
		all := w.waitEvents(end+" for "+prompt, func(evs []event) bool { return count(evs[min(before, len(evs)):], end) > 0 })
		if end == "Stop" {
			stops++
		}
		return all[before:]
	}

	// Auto mode: the tool runs without a permission request.
	evs := turn("[[tool echo hi]] run", "Stop")
	expectNames(t, evs, "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
	if resp := evs[2].payload["tool_response"].(map[string]any); resp["stdout"] != "hi" {
		t.Errorf("PostToolUse: %s", evs[2].raw)
	}
	// A command that exits non-zero: PostToolUseFailure, as 2.1.332.
	evs = turn("[[tool echo oops >&2; exit 3]] run", "Stop")
	expectNames(t, evs, "UserPromptSubmit", "PreToolUse", "PostToolUseFailure", "Stop")
	if f := evs[2]; f.str("error") != "Exit code 3\noops" || f.str("tool_use_id") == "" || f.str("tool_use_id") != evs[1].str("tool_use_id") {
		t.Errorf("PostToolUseFailure: %s", f.raw)
	}

	evs = turn("[[long 5]]", "Stop")
	if got := last(evs, "Stop").str("last_assistant_message"); got != mockapi.Lines("MOCK-LONG", 5) {
		t.Errorf("long reply %q", got)
	}

	evs = turn("[[noreply]] quiet", "Stop")
	stop := last(evs, "Stop")
	if _, ok := stop.payload["last_assistant_message"]; ok {
		t.Errorf("noreply Stop: %s", stop.raw)
	}
	tr := transcriptLines(t, stop.str("transcript_path"))
	if got := assistantText(tr[len(tr)-1]); got != mockapi.DefaultText("[[noreply]] quiet") {
		t.Errorf("transcript's last reply %q", got)
	}

	// [[notranscript]]: the turn leaves the transcript as it was.
	evs = turn("[[notranscript]] unrecorded", "Stop")
	if got := len(transcriptLines(t, last(evs, "Stop").str("transcript_path"))); got != len(tr) {
		t.Errorf("notranscript turn: transcript has %d entries, want %d", got, len(tr))
	}
	// [[lateend N]]: the prompt is written before Stop, the reply after.
	evs = turn("[[lateend 200]] late", "Stop")
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr = transcriptLines(t, last(evs, "Stop").str("transcript_path"))
		if got := assistantText(tr[len(tr)-1]); got == mockapi.DefaultText("[[lateend 200]] late") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lateend: the reply never reached the transcript: %v", tr[len(tr)-1])
		}
		time.Sleep(20 * time.Millisecond)
	}

	evs = turn("[[fail]] boom", "StopFailure")
	expectNames(t, evs, "UserPromptSubmit", "StopFailure")
	if e := evs[1].payload["error"].(map[string]any); e["type"] != "server_error" || e["message"] == "" {
		t.Errorf("StopFailure: %s", evs[1].raw)
	}

	turn("[[flood 250]] lots", "Stop")
	p.waitOutput("FLOOD 000250 ....")

	// Every payload is one the adapter understands.
	all := w.events()
	for _, e := range all {
		ev, err := harness.Claude{}.ParseHook(e.name, e.raw)
		if err != nil || ev.ProviderID != sessionID || ev.Kind == harness.KindIgnored {
			t.Errorf("ParseHook(%s) = %+v, %v", e.name, ev, err)
		}
	}

	// Ctrl-C twice exits. The Stop hook fires before the turn is over, so
	// wait for the idle prompt first: a Ctrl-C during the turn interrupts it.
	p.waitIdlePrompt()
	p.write("\x03")
	p.waitOutput("Press Ctrl-C again")
	p.write("\x03")
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d after Ctrl-C twice", code)
	}
	all = w.events()
	if count(all, "Stop") != stops {
		t.Errorf("%d Stop, want %d", count(all, "Stop"), stops)
	}
	if end := last(all, "SessionEnd"); end.str("reason") != "prompt_input_exit" {
		t.Errorf("SessionEnd: %s", end.raw)
	}
	var shaped []event // all but the Stop that lacks last_assistant_message by design
	for _, e := range all {
		if e.name != "Stop" || e.str("prompt_id") != stop.str("prompt_id") {
			shaped = append(shaped, e)
		}
	}
	checkShapes(t, shaped)
}

func TestCrashAndHang(t *testing.T) {
	t.Parallel()
	t.Run("crash", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		p := w.start(w.baseEnv(), "--settings", w.settings())
		p.waitOutput(promptMark)
		p.submit("[[crash]]")
		if code := p.wait(); code != 1 {
			t.Errorf("exit code %d", code)
		}
		expectNames(t, w.events(), "SessionStart", "UserPromptSubmit")
	})
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		p := w.start(w.baseEnv(), "--settings", w.settings())
		p.waitOutput(promptMark)
		p.submit("[[hang]]")
		p.waitOutput("hung")
		p.signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			t.Fatal("a hung fake exited on SIGTERM")
		case <-time.After(300 * time.Millisecond):
		}
		p.signal(syscall.SIGKILL)
		p.wait()
		expectNames(t, w.events(), "SessionStart", "UserPromptSubmit")
	})
}

func TestSilentHooks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv("FAKECLAUDE_SILENT_HOOKS=1"), "--settings", w.settings())
	p.waitOutput(promptMark)
	p.submit("quiet please")
	p.waitOutput("● " + mockapi.DefaultText("quiet please"))
	p.submit("/exit")
	if code := p.wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if evs := w.events(); len(evs) != 0 {
		t.Errorf("hooks fired: %v", names(evs))
	}
}

// FAKECLAUDE_EXIT_SCREEN: the screen is printed, no hook fires, exit 1.
func TestExitScreen(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv("FAKECLAUDE_EXIT_SCREEN=Welcome\nUnable to connect"), "--settings", w.settings())
	p.waitOutput("Welcome\r\nUnable to connect") // read on its own goroutine
	if code := p.wait(); code != 1 {
		t.Errorf("exit code %d", code)
	}
	if evs := w.events(); len(evs) != 0 {
		t.Errorf("hooks fired: %v", names(evs))
	}
}

func TestStartupErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, args := range [][]string{
		{"--settings", "{not json"},
		{"--settings", filepath.Join(w.cwd, "missing.json")},
		{"--settings", `{"hooks":{"Stop":"nope"}}`},
		{"--session-id", "not-a-uuid"},
		{"--permission-mode", "yolo"},
	} {
		if code, out := w.runPlain(args...); code != 1 || out == "" {
			t.Errorf("%q: exit %d, output %q", args, code, out)
		}
	}
}

// TestAdapter launches the fake with the argv, environment and keystrokes
// of dlgt's own Claude adapter, and maps its hooks back with ParseHook.
func TestAdapter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	launch, err := harness.Claude{}.Prepare(harness.Spec{
		Cwd:         w.cwd,
		Model:       "sonnet",
		Effort:      "low",
		AutoApprove: true,
		Options:     []string{"verbose=true"},
		Env:         map[string]string{"DLGT_CLAUDE_BIN": os.Args[0], "HOME": w.home, "PATH": os.Getenv("PATH")},
		HookArgv:    w.hookArgv,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := w.start(append(launch.Env, execEnv+"=1", "FAKECLAUDE_STARTUP_MS=10"), launch.Argv[1:]...)
	p.waitOutput(promptMark)
	p.submit("via the adapter")
	evs := w.waitCount("Stop", 1)
	var kinds []harness.Kind
	for _, e := range evs {
		ev, err := harness.Claude{}.ParseHook(e.name, e.raw)
		if err != nil || ev.ProviderID != launch.ProviderID {
			t.Fatalf("ParseHook(%s) = %+v, %v", e.name, ev, err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == harness.KindStop && (ev.FinalText == nil || *ev.FinalText != mockapi.DefaultText("via the adapter")) {
			t.Errorf("final text %v", ev.FinalText)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]harness.Kind{harness.KindReady, harness.KindPromptSubmitted, harness.KindStop}) {
		t.Errorf("kinds %v", kinds)
	}
	if evs[0].str("model") != "sonnet" || fmt.Sprint(evs[2].payload["effort"]) != "map[level:low]" || evs[1].str("permission_mode") != "auto" {
		t.Errorf("model/effort/mode not applied: %s / %s", evs[0].raw, evs[2].raw)
	}
}

// TestQueuedPrompt submits while a turn runs: like the real CLI the prompt
// is queued and submitted when the turn ends (dlgt may submit as soon as it
// sees Stop, which fires before the turn is over).
func TestQueuedPrompt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.start(w.baseEnv(), "--settings", w.settings())
	p.waitOutput(promptMark)
	p.submit("[[slow 3000]] first")
	w.waitCount("UserPromptSubmit", 1)
	p.submit("second")
	p.waitOutput("> second (queued)")
	evs := w.waitCount("Stop", 2)
	expectNames(t, evs, "SessionStart", "UserPromptSubmit", "Stop", "UserPromptSubmit", "Stop")
	if evs[3].str("prompt") != "second" || evs[4].str("last_assistant_message") != mockapi.DefaultText("second") {
		t.Errorf("queued turn: %s / %s", evs[3].raw, evs[4].raw)
	}
}
