package fakeclaude_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/fakeclaude"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
)

// execEnv makes the test binary run as the fake instead of the tests.
const execEnv = "FAKECLAUDE_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(fakeclaude.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// waitFor bounds every blocking wait in these tests.
const waitFor = 20 * time.Second

const promptMark = "❯\u00a0"

// hookEvents are the events dlgt's Claude adapter subscribes to.
var hookEvents = []string{
	"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
	"PostToolUseFailure", "PermissionRequest", "Notification", "Stop",
	"StopFailure", "SessionEnd",
}

// world is one test's private HOME, working directory and hook log.
type world struct {
	t        *testing.T
	home     string
	cwd      string
	log      string // every hook appends "<Event>\t<payload>\n"
	hookArgv []string
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	w := &world{t: t, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "work"), log: filepath.Join(dir, "hooks.log")}
	for _, d := range []string{w.home, w.cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "hook.sh")
	// The line is made in a file of its own and appended with one
	// write under an exclusive lock of the log: hooks that run at once
	// (PermissionRequest and the Notification of its dialog) never cut
	// into each other's lines, which events() would skip.
	body := "#!/bin/sh\n# $1: log file, $2: event name; the payload is on stdin.\n" +
		"t=$(mktemp) || exit 1\n{ printf '%s\\t' \"$2\"; cat; printf '\\n'; } > \"$t\"\n" +
		"flock \"$1.lock\" cat \"$t\" >> \"$1\"\nrm -f \"$t\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	// Like harness.HookArgv: the harness appends the event name.
	w.hookArgv = []string{"/bin/sh", script, w.log}
	return w
}

// settings is the --settings JSON dlgt's adapter would inject.
func (w *world) settings() string {
	hooks := map[string]any{}
	for _, ev := range hookEvents {
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{
			"type": "command", "command": shellQuote(append(append([]string{}, w.hookArgv...), ev)), "timeout": 30,
		}}}}
	}
	b, err := json.Marshal(map[string]any{"hooks": hooks})
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func shellQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// baseEnv is the fake's environment: quick startup, the private HOME.
func (w *world) baseEnv(extra ...string) []string {
	env := []string{execEnv + "=1", "HOME=" + w.home, "PATH=" + os.Getenv("PATH"), "FAKECLAUDE_STARTUP_MS=10", "GORACE=halt_on_error=1"}
	return append(env, extra...)
}

// event is one hook call from the log.
type event struct {
	name    string
	raw     []byte
	payload map[string]any
}

func (e event) str(k string) string { s, _ := e.payload[k].(string); return s }

// events reads the hook log.
func (w *world) events() []event {
	data, err := os.ReadFile(w.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	var out []event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		name, raw, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue // a line still being written
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			continue // a line still being written
		}
		out = append(out, event{name: name, raw: []byte(raw), payload: p})
	}
	return out
}

func names(evs []event) []string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return n
}

func count(evs []event, name string) int {
	n := 0
	for _, e := range evs {
		if e.name == name {
			n++
		}
	}
	return n
}

func last(evs []event, name string) event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].name == name {
			return evs[i]
		}
	}
	return event{}
}

// waitEvents polls the hook log until cond holds.
func (w *world) waitEvents(what string, cond func([]event) bool) []event {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		evs := w.events()
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s; hooks so far: %v", what, names(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCount waits until event name has fired n times.
func (w *world) waitCount(name string, n int) []event {
	w.t.Helper()
	return w.waitEvents(fmt.Sprintf("%d× %s", n, name), func(evs []event) bool { return count(evs, name) >= n })
}

// proc is the fake running under a PTY.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	tty    *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
	state  *os.ProcessState
}

// start runs the fake (args without argv[0]) in w.cwd under a PTY.
func (w *world) start(env []string, args ...string) *proc {
	w.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = w.cwd
	cmd.Env = env
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		w.t.Fatal(err)
	}
	p := &proc{t: w.t, cmd: cmd, tty: tty, exited: make(chan struct{})}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	w.t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		tty.Close()
		if strings.Contains(p.output(), "DATA RACE") {
			w.t.Errorf("the fake reported a data race:\n%s", p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitOutput waits until the screen output contains s.
func (p *proc) waitOutput(s string) {
	p.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %q on screen; output tail:\n%q", s, tail(p.output(), 2000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitIdlePrompt waits until the screen ends at the idle prompt line.
func (p *proc) waitIdlePrompt() {
	p.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !strings.HasSuffix(p.output(), "\x1b[2K❯\u00a0") {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for the idle prompt; output tail:\n%q", tail(p.output(), 2000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (p *proc) write(s string) {
	p.t.Helper()
	if _, err := p.tty.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// keys plays an adapter's keystrokes back to back: the fake takes them
// in one read as well as in several, so it needs none of the evidence a
// keystroke may await (the daemon waits for it, see daemon/deliver.go).
func (p *proc) keys(ks []harness.Keystroke) {
	p.t.Helper()
	for _, k := range ks {
		p.write(string(k.Data))
	}
}

// submit types prompt the way dlgt does: Ctrl-U, one bracketed paste,
// then Enter.
func (p *proc) submit(prompt string) { p.keys(harness.Claude{}.Submit(prompt)) }

// wait waits for the fake to exit and returns its exit code (-1 when
// killed by a signal).
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.state.ExitCode()
	case <-time.After(waitFor):
		p.t.Fatalf("the fake did not exit; output tail:\n%q", tail(p.output(), 2000))
		return 0
	}
}

func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// runPlain runs the fake without a terminal, for startup failures.
func (w *world) runPlain(args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = w.cwd
	cmd.Env = w.baseEnv()
	done := make(chan struct{})
	var out []byte
	go func() { out, _ = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		cmd.Process.Kill()
		<-done
		w.t.Fatalf("%q did not exit", args)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// transcriptLines reads a transcript file's entries.
func transcriptLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("transcript line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// assistantText is the text of a transcript assistant entry.
func assistantText(e map[string]any) string {
	msg, _ := e["message"].(map[string]any)
	blocks, _ := msg["content"].([]any)
	var s string
	for _, b := range blocks {
		if m, ok := b.(map[string]any); ok && m["type"] == "text" {
			s += m["text"].(string)
		}
	}
	return s
}

// shape renders the key structure of a JSON value: object keys sorted,
// nested objects recursively; arrays and scalars are leaves.
func shape(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k+shape(m[k]))
	}
	sort.Strings(keys)
	return "{" + strings.Join(keys, ",") + "}"
}

// sampleKey distinguishes samples of one event whose shapes differ by
// design (SessionStart startup/resume, Notification types).
func sampleKey(name string, p map[string]any) string {
	switch name {
	case "SessionStart":
		return name + "/" + fmt.Sprint(p["source"])
	case "Notification":
		return name + "/" + fmt.Sprint(p["notification_type"])
	}
	return name
}

// checkShapes compares the fake's payloads with the real CLI's captured
// in ../shared/harness-samples: each event's key structure must equal one
// of the real samples of that event. Events without a sample are skipped,
// and so is the whole check when the samples are not there.
func checkShapes(t *testing.T, evs []event) {
	t.Helper()
	root, err := pinned.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "..", "shared", "harness-samples")
	samples := map[string][]string{}
	for _, file := range []string{"claude-hooks-tui-observed.jsonl", "claude-hooks-headless.jsonl"} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Logf("skipping the payload shape comparison: %v", err)
			return
		}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var s struct {
				Tag   string         `json:"tag"`
				Stdin map[string]any `json:"stdin"`
			}
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			k := sampleKey(s.Tag, s.Stdin)
			samples[k] = append(samples[k], shape(s.Stdin))
		}
	}
	for _, e := range evs {
		k := sampleKey(e.name, e.payload)
		want, ok := samples[k]
		if !ok {
			continue
		}
		got := shape(e.payload)
		found := false
		for _, w := range want {
			found = found || w == got
		}
		if !found {
			t.Errorf("%s payload keys\n  %s\ndiffer from the real CLI's\n  %s", k, got, strings.Join(want, "\n  "))
		}
	}
}
