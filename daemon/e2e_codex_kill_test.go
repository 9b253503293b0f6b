package daemon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlgt/internal/harnesstest/mockapi"
	"dlgt/rpc"
)

// markedProc is a live process whose environment carries a test's mark.
type markedProc struct {
	pid, pgrp int
	argv      string // NUL-separated, as in /proc/PID/cmdline
}

// markedProcs lists the live processes whose environment carries mark
// (see codexProcs), with their groups and full command lines.
func markedProcs(mark string) []markedProc {
	var out []markedProc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		// pid (comm) state ppid pgrp ...
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		g, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, markedProc{pid: pid, pgrp: g, argv: string(cmd)})
	}
	return out
}

// codexGroups lists the process groups of the processes carrying mark,
// never the test's own group.
func codexGroups(mark string) []int {
	own := syscall.Getpgrp()
	seen := map[int]bool{}
	var out []int
	for _, p := range markedProcs(mark) {
		if p.pgrp <= 1 || p.pgrp == own || seen[p.pgrp] {
			continue
		}
		seen[p.pgrp] = true
		out = append(out, p.pgrp)
	}
	return out
}

// A daemon SIGKILLed in the middle of a real Codex turn: the next daemon
// on the same home reports the Session failed with an interrupted
// result, keeps its history, and a resume continues the same Codex
// thread under the same Session id.
func TestCodexE2EDaemonKill9(t *testing.T) {
	bin := e2eCodexBin(t)
	mark := "DLGT_E2E_CODEX_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// Registered first, so it runs last: whatever happened, no Codex
	// process of this test may remain.
	t.Cleanup(func() { noCodexLeft(t, mark, 5*time.Second) })
	mock := mockapi.NewResponses(t, mockapi.Script{
		mockapi.Prefix("E2E-SLOW", mockapi.Reply{Text: mockapi.Lines("slow line", 1200), Chunk: 4, Delay: 50 * time.Millisecond}),
	})
	codexHome := t.TempDir()
	config := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, mock.URL())
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	markName, markVal, _ := strings.Cut(mark, "=")
	env := map[string]string{
		"PATH":           os.Getenv("PATH"),
		"HOME":           t.TempDir(),
		"CODEX_HOME":     codexHome,
		"MOCK_API_KEY":   "mock-key",
		"DLGT_CODEX_BIN": bin,
		"GORACE":         "atexit_sleep_ms=0",
		"TERM":           "xterm-256color",
		markName:         markVal,
	}

	td, cd := newChildDaemon(t, env)
	t.Cleanup(func() {
		if cd.cmd != nil && cd.exited != nil {
			select {
			case <-cd.exited:
			default:
				cd.cmd.Process.Kill()
				<-cd.exited
			}
		}
		for _, g := range codexGroups(mark) {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	})
	cd.start()
	firstPID := cd.cmd.Process.Pid

	cwd := t.TempDir()
	create := rpc.SessionCreateParams{Title: "e2e codex kill -9", Harness: "codex", Cwd: cwd,
		Prompt: "E2E-SLOW a turn the daemon will not see end", RequestID: "cx-k9-1", Environment: env}
	var r rpc.Receipt
	start := time.Now()
	td.accept(t, rpc.MethodSessionCreate, create, &r)
	t.Logf("latency: create -> confirmed receipt %v (child daemon)", time.Since(start).Round(time.Millisecond))
	if r.Submission != rpc.SubmissionConfirmed || r.ExecutionSeq != 1 || !strings.HasPrefix(r.Session.ID, "codex:") {
		t.Fatalf("receipt = %+v", r)
	}
	id := r.Session.ID
	e := &e2eClaude{td: td, mock: mock, env: env}
	// Mid-turn: the slow reply is streaming onto the screen.
	e.waitLive(t, id, "slow line")
	if rd := td.read(t, id); rd.Session.State != rpc.StateBusy {
		t.Fatalf("state while streaming = %s", rd.Session.State)
	}
	before := td.events(t, id)
	if len(before) == 0 {
		t.Fatal("no events before the kill")
	}
	groups := codexGroups(mark)
	if len(groups) == 0 {
		t.Fatalf("no Codex process found while streaming")
	}

	cd.kill9()
	// The orphaned Codex keeps its own process group (the daemon made it
	// a session leader): kill every group carrying the mark, as an
	// operator would, until none is left.
	deadline := time.Now().Add(30 * time.Second)
	for {
		gs := codexGroups(mark)
		if len(gs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Codex survived SIGKILL: %v", codexProcs(mark))
		}
		for _, g := range gs {
			syscall.Kill(-g, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := codexProcs(mark); len(left) != 0 {
		t.Fatalf("Codex processes survived: %v", left)
	}

	cd.start()
	if cd.cmd.Process.Pid == firstPID {
		t.Fatal("daemon not restarted")
	}
	rd := td.read(t, id)
	if rd.Session.State != rpc.StateFailed {
		t.Fatalf("state after kill -9 = %s", rd.Session.State)
	}
	checkInterrupted(t, rd, 1, "daemon_restarted")
	// History: the events seen before the kill are kept as they were
	// (any recorded between that read and the kill follow them), then
	// one session.failed for execution 1 with a later seq.
	after := td.events(t, id)
	if len(after) < len(before)+1 {
		t.Fatalf("events %v -> %v", eventTypes(before), eventTypes(after))
	}
	for i := range before {
		if after[i] != before[i] {
			t.Fatalf("history changed at %d: %+v -> %+v", i, before[i], after[i])
		}
	}
	for i := 1; i < len(after); i++ {
		if after[i].Seq <= after[i-1].Seq {
			t.Fatalf("event seq not increasing: %v", after)
		}
	}
	failed := after[len(after)-1]
	if failed.Type != rpc.EventSessionFailed || failed.ExecutionSeq != 1 || failed.SessionID != id {
		t.Fatalf("last event after restart = %+v (events %v)", failed, eventTypes(after))
	}
	if extra := after[len(before) : len(after)-1]; len(extra) > 0 {
		t.Logf("events recorded between the read and the kill: %v", eventTypes(extra))
	}

	const prompt = "back after the daemon was killed"
	var r2 rpc.Receipt
	td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: "cx-k9-2", Resume: true, Environment: env}, &r2)
	if r2.Session.ID != id || r2.ExecutionSeq != 2 || r2.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("resume receipt = %+v", r2)
	}
	doc, res := e.waitResult(t, id, r2.Cursor)
	if want := mockapi.DefaultText(prompt); res.Status != rpc.StatusCompleted || res.FinalTextSource != rpc.TextSourceHook || res.FinalText == nil || *res.FinalText != want || res.ExecutionSeq != 2 {
		t.Fatalf("resumed result = %+v text=%q, want %q from the hook for execution 2", res, derefText(&res), want)
	}
	if got := doc.Sessions[0].Session.ID; got != id {
		t.Fatalf("resumed result came back on session %q, want %q", got, id)
	}
	if n := e.waitPrompt(t, prompt); n != 1 {
		t.Fatalf("mock saw the resumed prompt %d times", n)
	}
	if rd := td.read(t, id); rd.Session.ID != id || rd.Result == nil || rd.Result.ExecutionSeq != 2 || rd.Result.Status != rpc.StatusCompleted {
		t.Fatalf("read after resume = %+v result %+v", rd.Session, rd.Result)
	}
	for _, req := range mock.Requests() {
		if req.Kind == mockapi.KindPrompt && req.Prompt == prompt {
			t.Logf("the resumed request carries the interrupted prompt: %v", strings.Contains(string(req.Body), create.Prompt))
		}
	}
	// The resumed Codex runs `codex resume ... -- <thread-id>`.
	thread := strings.TrimPrefix(id, "codex:")
	var resumed []int
	for _, p := range markedProcs(mark) {
		if strings.HasPrefix(p.argv, bin+"\x00resume\x00") && strings.Contains(p.argv, "\x00--\x00"+thread+"\x00") {
			resumed = append(resumed, p.pid)
		}
	}
	if len(resumed) != 1 {
		t.Fatalf("no Codex process runs resume %s: %v", thread, codexProcs(mark))
	}

	cd.stop()
	noCodexLeft(t, mark, 30*time.Second)
}
