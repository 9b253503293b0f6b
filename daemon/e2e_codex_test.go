package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlgt/internal/harnesstest/mockapi"
	"dlgt/rpc"
)

// End-to-end tests: the real Codex CLI (pinned by .ci/install-harnesses)
// hosted by an in-process daemon, driven only through the public RPC,
// against the loopback mock Responses API. Skipped when the binary is
// absent.

// e2eCodexBin is DLGT_CODEX_BIN, else the binary .ci/install-harnesses
// puts under the module root.
func e2eCodexBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DLGT_CODEX_BIN")
	if p == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				t.Fatal("go.mod not found above the test directory")
			}
			dir = parent
		}
		p = filepath.Join(dir, ".cache", "harnesses", "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		t.Skipf("Codex not installed (%s): run .ci/install-harnesses or set DLGT_CODEX_BIN", p)
	}
	return p
}

// codexProcs lists the live processes whose environment carries mark
// (every Codex child of a test and their descendants inherit it), with
// their process groups.
func codexProcs(mark string) []string {
	var out []string
	for _, p := range markedProcs(mark) {
		out = append(out, fmt.Sprintf("pid %d pgrp %d: %.200s", p.pid, p.pgrp, strings.ReplaceAll(p.argv, "\x00", " ")))
	}
	return out
}

// noCodexLeft fails t if any marked process is still alive after a grace
// period.
func noCodexLeft(t testing.TB, mark string, grace time.Duration) {
	t.Helper()
	deadline := time.Now().Add(grace)
	for {
		left := codexProcs(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("Codex processes survived: %v", left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeCodexConfig writes a config.toml in codexHome that runs Codex
// offline against the mock Responses API at url (key in MOCK_API_KEY), and
// returns its text and path.
func writeCodexConfig(t *testing.T, codexHome, url string) (string, string) {
	t.Helper()
	config := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, url)
	cfgPath := filepath.Join(codexHome, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, cfgPath
}

func startE2ECodex(t *testing.T, script mockapi.Script) (*e2eClaude, string) {
	t.Helper()
	bin := e2eCodexBin(t)
	mark := "DLGT_E2E_CODEX_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// Registered first, so it runs last: after the daemon stopped every
	// Session, no process of this test may remain in any group.
	t.Cleanup(func() { noCodexLeft(t, mark, 5*time.Second) })
	mock := mockapi.NewResponses(t, script)
	home := t.TempDir()
	// The "user's" CODEX_HOME: dlgt must leave config.toml as it is.
	codexHome := t.TempDir()
	config, cfgPath := writeCodexConfig(t, codexHome, mock.URL())
	t.Cleanup(func() {
		// Codex itself records its first TUI start (a screen-reader probe)
		// in config.toml, a -c override does not stop it, and it does the
		// same for a user's own first run; nothing else may change.
		got, err := os.ReadFile(cfgPath)
		own := strings.Replace(string(got), "\n[tui]\nscreen_reader_detection_done = true\n", "", 1)
		if err != nil || own != config {
			t.Errorf("the user's config.toml changed (err %v):\n%s", err, got)
		}
		if _, err := os.Stat(filepath.Join(codexHome, "hooks.json")); err == nil {
			t.Error("a hooks.json appeared in the user's CODEX_HOME")
		}
	})
	name, val, _ := strings.Cut(mark, "=")
	env := map[string]string{
		"PATH":           os.Getenv("PATH"),
		"HOME":           home,
		"CODEX_HOME":     codexHome,
		"MOCK_API_KEY":   "mock-key",
		"DLGT_CODEX_BIN": bin,
		"GORACE":         "atexit_sleep_ms=0",
		"TERM":           "xterm-256color",
		name:             val,
	}
	return &e2eClaude{td: startTestDaemonWith(t, env), mock: mock, env: env}, mark
}

func TestCodexE2E(t *testing.T) {
	e, mark := startE2ECodex(t, mockapi.Script{
		mockapi.Contains("BIG-PROMPT:", mockapi.Reply{Text: "BIG-REPLY"}),
		mockapi.Prefix("E2E-SLOW", mockapi.Reply{Text: mockapi.Lines("slow line", 400), Chunk: 4, Delay: 50 * time.Millisecond}),
		mockapi.Prefix("E2E-FAIL", mockapi.Reply{Status: 400, ErrorMessage: "mock bad request"}),
		mockapi.Prefix("E2E-TOOL", mockapi.Reply{Tool: "touch dlgt-e2e-marker", Text: "AFTER-TOOL", Escalated: true}),
	})
	cwd := t.TempDir()
	var id string

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"HarnessAndModels", func(t *testing.T) {
			var hl rpc.HarnessListResult
			e.call(t, rpc.MethodHarnessList, map[string]any{"harness": "codex"}, &hl)
			if len(hl.Harnesses) != 1 || hl.Harnesses[0].LifecycleSource != "hooks" || !hl.Harnesses[0].Capabilities.Resume || !hl.Harnesses[0].Capabilities.Cancel {
				t.Fatalf("harness.list = %+v", hl)
			}
			var ml rpc.ModelListResult
			e.call(t, rpc.MethodModelList, map[string]any{"harness": "codex"}, &ml)
			if ml.Harness != "codex" || len(ml.Models) == 0 || !ml.Models[0].Default {
				t.Fatalf("model.list = %+v", ml)
			}
		}},
		{"CreateFetch", func(t *testing.T) {
			const prompt = "hello from the dlgt codex e2e test"
			var r rpc.Receipt
			start := time.Now()
			e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: "e2e codex", Harness: "codex", Cwd: cwd, Prompt: prompt,
				RequestID: "cx-1", Environment: e.env,
			}, &r)
			created := time.Since(start)
			if !strings.HasPrefix(r.Session.ID, "codex:") || r.ExecutionSeq != 1 || r.Submission != rpc.SubmissionConfirmed {
				t.Fatalf("receipt = %+v", r)
			}
			id = r.Session.ID
			doc, res := e.waitResult(t, id, r.Cursor)
			fetched := time.Now()
			want := mockapi.DefaultText(prompt)
			if res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceHook || res.FinalText == nil || *res.FinalText != want {
				t.Fatalf("result = %+v text=%q, want %q", res, derefText(&res), want)
			}
			if doc.Reason != rpc.ReasonResult {
				t.Fatalf("reason = %q", doc.Reason)
			}
			wantUsage(t, "first result", &res, mockUsage(want))
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
			t.Logf("latency: create -> confirmed receipt %v; Stop hook -> fetch response %v",
				created.Round(time.Millisecond), fetched.Sub(time.UnixMilli(res.CompletedAtMS)).Round(time.Millisecond))
		}},
		{"FollowUp", func(t *testing.T) {
			const prompt = "a second question in the same thread"
			r := e.send(t, id, prompt, "cx-2")
			e.expectReply(t, id, r.Cursor, prompt, 2)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
		}},
		{"LargeMultiLinePrompt", func(t *testing.T) {
			prompt := bigPrompt(100 << 10)
			r := e.send(t, id, prompt, "cx-3")
			e.expectText(t, id, r.Cursor, "BIG-REPLY", 3)
			// Codex shows a large paste as a placeholder and submits the
			// text itself, unwrapped.
			got := e.waitPrompts(t, func(p string) bool { return strings.Contains(p, "BIG-PROMPT:") })
			if len(got) != 1 || got[0] != prompt {
				head := ""
				if len(got) > 0 {
					head = fmt.Sprintf("%d bytes, head %q tail %q", len(got[0]), got[0][:min(len(got[0]), 80)], got[0][max(0, len(got[0])-80):])
				}
				t.Fatalf("mock saw %d requests with the big prompt (%s), want 1 with the %d-byte prompt byte-exact", len(got), head, len(prompt))
			}
		}},
		{"FailedTurn", func(t *testing.T) {
			r := e.send(t, id, "E2E-FAIL please", "cx-4")
			_, res := e.waitResult(t, id, r.Cursor)
			if res.Status != rpc.StatusFailed || res.ExecutionSeq != 4 || res.Error == nil || !strings.Contains(res.Error.Message, "mock bad request") {
				t.Fatalf("result = %+v error %+v", res, res.Error)
			}
		}},
		{"Cancel", func(t *testing.T) {
			r := e.send(t, id, "E2E-SLOW stream a long reply", "cx-5")
			// Let the reply start streaming.
			time.Sleep(700 * time.Millisecond)
			var cr rpc.SessionResult
			start := time.Now()
			e.call(t, rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: id}, &cr)
			if cr.Result == nil || cr.Result.Status != rpc.StatusCanceled || cr.Result.ExecutionSeq != 5 || cr.Session.State != rpc.StateIdle {
				t.Fatalf("cancel = %+v result %+v", cr.Session, cr.Result)
			}
			t.Logf("latency: cancel -> Interrupt hook %v", time.Since(start).Round(time.Millisecond))
			_ = r
			// The thread takes new work after the interrupt.
			// The interrupted draft must not leak into the next prompt.
			const prompt = "after the cancel"
			r2 := e.send(t, id, prompt, "cx-6")
			e.expectReply(t, id, r2.Cursor, prompt, 6)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt exactly %d times", n)
			}
		}},
		{"StopResume", func(t *testing.T) {
			var stopped rpc.SessionResult
			e.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: id}, &stopped)
			if stopped.Session.State != rpc.StateStopped {
				t.Fatalf("state after stop = %s", stopped.Session.State)
			}
			noCodexLeft(t, mark, 3*time.Second)
			const prompt = "back after a resume"
			var r rpc.Receipt
			e.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: "cx-7", Resume: true, Environment: e.env}, &r)
			if r.Session.ID != id || r.ExecutionSeq != 7 || r.Submission != rpc.SubmissionConfirmed {
				t.Fatalf("resume receipt = %+v", r)
			}
			e.expectReply(t, id, r.Cursor, prompt, 7)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
		}},
		{"Restart", func(t *testing.T) {
			before := e.screenEpoch(t, id)
			var res rpc.SessionResult
			e.call(t, rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: id, Environment: e.env}, &res)
			if res.Session.ID != id {
				t.Fatalf("restart changed the id: %s", res.Session.ID)
			}
			if after := e.screenEpoch(t, id); after <= before {
				t.Fatalf("screen epoch %d -> %d after restart, want an increase", before, after)
			}
			// Codex reports nothing before a turn, so the restarted TUI's
			// readiness is unproven when this prompt is typed: the receipt
			// may be pending under load (never lost: the PTY buffers it),
			// and the result and the mock prove the delivery.
			const prompt = "hello again after a restart"
			var r rpc.Receipt
			e.call(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: "cx-8"}, &r)
			if r.Session.ID != id || r.ExecutionSeq != 8 {
				t.Fatalf("receipt = %+v", r)
			}
			if r.Submission != rpc.SubmissionConfirmed {
				t.Logf("receipt after restart was %s", r.Submission)
			}
			e.expectReply(t, id, r.Cursor, prompt, 8)
			if n := e.waitPrompt(t, prompt); n != 1 {
				t.Fatalf("mock saw the prompt %d times", n)
			}
		}},
		{"PermissionBlocks", func(t *testing.T) {
			no := false
			var r rpc.Receipt
			e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: "e2e codex permission", Harness: "codex", Cwd: t.TempDir(), Prompt: "E2E-TOOL please run it",
				RequestID: "cx-perm-1", Environment: e.env, AutoApprove: &no,
			}, &r)
			if r.Submission != rpc.SubmissionConfirmed {
				t.Fatalf("receipt = %+v", r)
			}
			doc := e.fetchUntilResult(t, r.Session.ID, r.Cursor, 30*time.Second)
			if doc.Reason != rpc.ReasonBlocked || doc.Sessions[0].Session.State != rpc.StateBlocked {
				t.Fatalf("reason=%s state=%s events=%+v", doc.Reason, doc.Sessions[0].Session.State, doc.Sessions[0].Events)
			}
			var blocked *rpc.Event
			for i := range doc.Sessions[0].Events {
				if ev := doc.Sessions[0].Events[i]; ev.Type == rpc.EventSessionBlocked {
					blocked = &ev
				}
			}
			if blocked == nil || blocked.Reason != "permission" || blocked.Command != "touch dlgt-e2e-marker" {
				t.Fatalf("blocked event = %+v", blocked)
			}
			if n := len(doc.Sessions[0].Results); n != 0 {
				t.Fatalf("blocked produced %d results", n)
			}
			// Cancel while blocked: Esc declines the dialog and interrupts.
			var cr rpc.SessionResult
			e.call(t, rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: r.Session.ID}, &cr)
			if cr.Result == nil || cr.Result.Status != rpc.StatusCanceled {
				t.Fatalf("cancel while blocked = %+v result %+v", cr.Session, cr.Result)
			}
			var stopped rpc.SessionResult
			e.call(t, rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, Force: true}, &stopped)
		}},
	}
	failed := ""
	for _, s := range steps {
		if failed != "" && s.name != "PermissionBlocks" {
			t.Logf("%s skipped: %s failed and it continues that conversation", s.name, failed)
			continue
		}
		if !t.Run(s.name, s.run) && failed == "" && s.name != "HarnessAndModels" {
			failed = s.name
		}
	}
}
