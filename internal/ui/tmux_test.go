package ui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The test binary doubles as the fake Claude Code and the hook forwarder
// (testkit.Main); the dlgt binary built for the tests goes afterwards.
func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
	})
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// dlgtBinary builds ./cmd/dlgt once per test process (with -race when
// the test runs with it).
func dlgtBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "dlgt-ui-bin")
		if buildErr != nil {
			return
		}
		args := []string{"build", "-o", filepath.Join(buildDir, "dlgt")}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/dlgt-dev/dlgt/cmd/dlgt")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "dlgt")
}

// shortDir is a temporary directory with a short path (socket paths).
func shortDir(t *testing.T) string { return testkit.ShortDir(t) }

func startDaemon(t *testing.T, home string) *testkit.Daemon { return testkit.StartDaemon(t, home) }

// fakeClaudeEnv is a launch environment whose claude is this binary in
// its fake Claude Code role.
func fakeClaudeEnv(t *testing.T, dir string) map[string]string { return testkit.FakeClaudeEnv(dir) }

// waitBound bounds every wait for the UI or the daemon: generous, as the
// machine may be loaded; nothing is asserted about how fast it is.
const waitBound = 60 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(waitBound); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// term is a tmux server of its own running one command in a fixed-size
// window.
type term struct {
	t    *testing.T
	sock string
}

var termSeq atomic.Int64

func newTerm(t *testing.T, cols, rows int, command string) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	tm := &term{t: t, sock: fmt.Sprintf("dlgt-ui-test-%d-%d", os.Getpid(), termSeq.Add(1))}
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	tm.run("-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), command)
	return tm
}

func (tm *term) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what the window shows now.
func (tm *term) screen() string {
	return tm.run("capture-pane", "-p")
}

func (tm *term) keys(keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// press types a key that changes nothing in the daemon and waits for
// its effect, typing it again (up to 3 times, each logged) when none
// shows within 10 s: under -race on a loaded machine a keystroke
// typed soon after the UI took the terminal back from attach was once
// seen lost with Bubble Tea v1 (4 runs in 13), never reproduced since
// (docs/design.md, "Bubble Tea v2, not v1"). Keys that act on a Session
// are never typed twice.
func (tm *term) press(key, what string, cond func(string) bool) string {
	tm.t.Helper()
	tm.keys(key)
	for i := 0; i < 3; i++ {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if s := tm.screen(); cond(s) {
				return s
			}
			time.Sleep(50 * time.Millisecond)
		}
		tm.t.Logf("no effect of %q (%s) within 10 s: typing it again", key, what)
		tm.keys(key)
	}
	return tm.waitScreen(what, cond)
}

// waitScreen waits until cond holds for the screen and returns it; the
// last screen is printed when it never does.
func (tm *term) waitScreen(what string, cond func(string) bool) string {
	tm.t.Helper()
	var s string
	for deadline := time.Now().Add(waitBound); ; time.Sleep(50 * time.Millisecond) {
		s = tm.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		}
	}
}

func (tm *term) waitText(text string) string {
	tm.t.Helper()
	return tm.waitScreen(fmt.Sprintf("%q on the screen", text), func(s string) bool { return strings.Contains(s, text) })
}

// declined types key, sees question and declines it with no (a key);
// the status line then says "did not …".
func (tm *term) declined(key, question, no string) {
	tm.t.Helper()
	tm.keys(key)
	tm.waitText(question)
	tm.keys(no)
	tm.waitText("did not " + strings.TrimSuffix(question, "? y/N"))
}

// confirmed types key, sees question and answers y; the status line then
// says done.
func (tm *term) confirmed(key, question, done string) {
	tm.t.Helper()
	tm.keys(key)
	tm.waitText(question)
	tm.keys("y")
	tm.waitText(done)
}

// lineWith is the first screen line holding all of parts, or "".
func lineWith(screen string, parts ...string) string {
	for _, l := range strings.Split(screen, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return l
		}
	}
	return ""
}

// selectedLine is the list row marked as selected.
func selectedLine(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "> ") {
			return l
		}
	}
	return ""
}

// selectedName is the SESSION cell of the selected row.
func selectedName(screen string) string {
	f := strings.Fields(selectedLine(screen))
	if len(f) < 5 {
		return ""
	}
	return f[4] // ">", the state's mark, the state, the harness, the name
}

// choose moves the selection to the Session named name: to the top
// first, then down one row at a time, each move waited for.
func (tm *term) choose(name string) string {
	tm.t.Helper()
	s := tm.press("g", "the selection at the top", func(s string) bool {
		lines := strings.Split(s, "\n")
		return len(lines) > 2 && strings.HasPrefix(lines[2], "> ")
	})
	for i := 0; i < 20; i++ {
		if selectedName(s) == name {
			return s
		}
		prev := selectedName(s)
		s = tm.press("j", "the selection to move", func(s string) bool { return selectedName(s) != prev })
	}
	tm.t.Fatalf("could not select %s; the screen:\n%s", name, s)
	return s
}

// previewPart is the screen from the preview's title rule of name on.
func previewPart(screen, name string) string {
	i := strings.Index(screen, "── "+name+" · ")
	if i < 0 {
		return ""
	}
	return screen[i:]
}

var sgrRE = regexp.MustCompile(`\x1b\[([0-9;]*)m`)

// hasColor reports an SGR color other than the defaults (39, 49) in s.
func hasColor(s string) bool {
	for _, m := range sgrRE.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.Split(m[1], ";") {
			n, _ := strconv.Atoi(p)
			if (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || (n >= 90 && n <= 107) {
				return true
			}
		}
	}
	return false
}

func sessionState(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: id})
	if err != nil {
		t.Fatalf("session.read %s: %v", id, err)
	}
	return r.Session.State
}

func waitState(t *testing.T, c *client.Client, id string, states ...string) {
	t.Helper()
	waitFor(t, id+" to be "+strings.Join(states, " or "), func() bool {
		st := sessionState(t, c, id)
		for _, s := range states {
			if st == s {
				return true
			}
		}
		return false
	})
}

// TestUIThroughTmux drives `dlgt ui` in a real terminal (tmux, 120x40)
// against a daemon whose Sessions run the fake Claude Code.
func TestUIThroughTmux(t *testing.T) {
	bin := dlgtBinary(t)
	dir := shortDir(t)
	home := filepath.Join(dir, "h")
	d := startDaemon(t, home)
	launchEnv := fakeClaudeEnv(t, dir)
	c, err := client.New(client.Options{Home: home, NoAutostart: true, Getenv: func(string) string { return "" },
		Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	no := false
	create := func(alias, prompt string, autoApprove bool) string {
		t.Helper()
		p := rpc.SessionCreateParams{Title: "the " + alias + " task", Alias: alias, Harness: "claude", Cwd: dir,
			Prompt: prompt, RequestID: "req-" + alias, Environment: launchEnv}
		if !autoApprove {
			p.AutoApprove, p.HarnessOptions = &no, []string{"permission-mode=default"}
		}
		rc, err := c.SessionCreate(ctx, p)
		if err != nil {
			t.Fatalf("create %s: %v", alias, err)
		}
		return rc.Session.ID
	}
	alpha := create("alpha", "[[reply alpha-first-reply]]", true)
	beta := create("beta", "[[reply beta-first-reply]]", true)
	gamma := create("gamma", "[[reply gamma-first-reply]]", true)
	for _, id := range []string{alpha, beta, gamma} {
		waitState(t, c, id, rpc.StateIdle)
	}

	var envs []string
	for k, v := range launchEnv {
		envs = append(envs, k+"="+v)
	}
	paged := filepath.Join(dir, "paged.txt")
	command := fmt.Sprintf("env %s DLGT_HOME=%s DLGT_NO_AUTOSTART=1 NO_COLOR=1 PAGER='cat >%s' %s ui; echo UI-EXITED $?; sleep 600",
		strings.Join(envs, " "), home, paged, bin)
	tm := newTerm(t, 120, 40, command)

	// The list shows every Session with its state and last result.
	s := tm.waitScreen("the three Sessions", func(s string) bool {
		return lineWith(s, "alpha", "idle", "alpha-first-reply") != "" && lineWith(s, "beta", "idle", "beta-first-reply") != "" &&
			lineWith(s, "gamma", "idle", "gamma-first-reply") != ""
	})
	if !strings.Contains(s, "connected") || !strings.Contains(s, "3 Sessions") {
		t.Fatalf("header: %s", s)
	}
	// NO_COLOR: no color in what is drawn.
	if e := tm.run("capture-pane", "-p", "-e"); hasColor(e) {
		t.Fatalf("colors drawn under NO_COLOR:\n%q", e)
	}

	// Every key counts however it arrives: two keys of one send-keys,
	// two in one write, a paste (bracketed: the UI asks for it).
	// Newest first: gamma, beta, alpha.
	top := func() {
		t.Helper()
		tm.press("g", "the selection at the top", func(s string) bool { return selectedName(s) == "gamma" })
	}
	top()
	tm.keys("j", "j")
	tm.waitScreen("send-keys j j to select the third row", func(s string) bool { return selectedName(s) == "alpha" })
	tm.keys("k", "k")
	tm.waitScreen("send-keys k k to select the first row", func(s string) bool { return selectedName(s) == "gamma" })
	tm.run("send-keys", "-t", "0", "-l", "jj")
	tm.waitScreen("one write of jj to select the third row", func(s string) bool { return selectedName(s) == "alpha" })
	top()
	tm.run("set-buffer", "jj")
	tm.run("paste-buffer", "-p", "-t", "0")
	tm.waitScreen("a pasted jj to select the third row", func(s string) bool { return selectedName(s) == "alpha" })

	// A Session changing state shows its new state, sorted first.
	if _, err := c.SessionSend(ctx, rpc.SessionSendParams{Session: alpha, Prompt: "[[slow 120000]] working on it", RequestID: "alpha-2"}); err != nil {
		t.Fatal(err)
	}
	s = tm.waitScreen("alpha busy", func(s string) bool { return lineWith(s, "● busy", "alpha") != "" })
	if first := lineWith(s, "claude"); !strings.Contains(first, "alpha") {
		t.Fatalf("busy alpha is not listed first:\n%s", s)
	}

	// The preview shows the selected Session's screen.
	tm.choose("alpha")
	tm.waitScreen("alpha's screen in the preview", func(s string) bool {
		return strings.Contains(previewPart(s, "alpha"), "alpha-first-reply")
	})

	// Cancel asks first; n leaves it running, y cancels.
	tm.declined("c", "cancel alpha? y/N", "n")
	if st := sessionState(t, c, alpha); st != rpc.StateBusy {
		t.Fatalf("alpha is %s after declining the cancel", st)
	}
	tm.confirmed("c", "cancel alpha? y/N", "✓ canceled alpha")
	waitState(t, c, alpha, rpc.StateIdle)
	tm.waitScreen("alpha idle", func(s string) bool { return lineWith(s, "○ idle", "alpha") != "" })

	// Stop asks first too.
	tm.choose("beta")
	tm.declined("x", "stop beta? y/N", "Escape")
	if st := sessionState(t, c, beta); st != rpc.StateIdle {
		t.Fatalf("beta is %s after declining the stop", st)
	}
	tm.choose("beta")
	tm.confirmed("x", "stop beta? y/N", "✓ stopped beta")
	waitState(t, c, beta, rpc.StateStopped)
	tm.waitScreen("beta stopped", func(s string) bool { return lineWith(s, "· stopped", "beta") != "" })

	// Attach takes the terminal; Ctrl-] comes back to the UI.
	tm.choose("gamma")
	tm.keys("a")
	tm.waitScreen("the attached harness", func(s string) bool { return !strings.Contains(s, "dlgt ui ·") })
	tm.keys("C-]")
	tm.waitText("✓ detached from gamma")
	tm.waitText("dlgt ui ·")

	// A follow-up from the one-line input.
	tm.choose("gamma")
	tm.press("s", "the input line", func(s string) bool { return strings.Contains(s, "send to gamma>") })
	tm.run("send-keys", "-t", "0", "-l", "[[reply follow-up-done]] please")
	tm.keys("Enter")
	tm.waitText("✓ sent to gamma")
	tm.waitScreen("gamma's new result", func(s string) bool { return lineWith(s, "gamma", "#2 completed: follow-up-done") != "" })

	// A blocked Session: first in the list, its request in full in the
	// preview, y allows it.
	delta := create("delta", "[[tool echo hi-from-delta]] [[reply delta-done]]", false)
	waitState(t, c, delta, rpc.StateBlocked)
	s = tm.waitScreen("delta blocked", func(s string) bool { return lineWith(s, "! blocked", "delta") != "" })
	if first := lineWith(s, "claude"); !strings.Contains(first, "delta") {
		t.Fatalf("blocked delta is not listed first:\n%s", s)
	}
	tm.choose("delta")
	s = tm.waitScreen("delta's request in the preview", func(s string) bool {
		p := previewPart(s, "delta")
		return strings.Contains(p, "wants to use Bash") && strings.Contains(p, "hi-from-delta") && strings.Contains(p, "y allow · n deny")
	})
	if f := os.Getenv("DLGT_UI_CAPTURE"); f != "" {
		os.WriteFile(f, []byte(s), 0o644) // the capture in docs/cli.md
	}
	tm.keys("y")
	tm.waitText("✓ allowed Bash for delta")
	waitState(t, c, delta, rpc.StateIdle)
	tm.waitScreen("delta's result", func(s string) bool { return lineWith(s, "delta", "completed: delta-done") != "" })

	// o shows the last result in $PAGER (here a cat into a file).
	tm.choose("gamma")
	tm.keys("o")
	tm.waitText("✓ closed the result of gamma")
	if b, err := os.ReadFile(paged); err != nil || !strings.Contains(string(b), "follow-up-done") {
		t.Fatalf("the pager got %q (%v)", b, err)
	}

	// r relaunches the stopped beta, once asked.
	tm.choose("beta")
	tm.declined("r", "restart beta? y/N", "n")
	if st := sessionState(t, c, beta); st != rpc.StateStopped {
		t.Fatalf("beta is %s after declining the restart", st)
	}
	tm.choose("beta")
	tm.confirmed("r", "restart beta? y/N", "✓ restarted beta")
	waitState(t, c, beta, rpc.StateIdle)

	// n denies with a reason the model receives.
	zeta := create("zeta", "[[tool echo hi-from-zeta]] then say what happened", false)
	waitState(t, c, zeta, rpc.StateBlocked)
	tm.choose("zeta")
	tm.waitScreen("zeta's request in the preview", func(s string) bool { return strings.Contains(previewPart(s, "zeta"), "y allow · n deny") })
	tm.keys("n")
	tm.waitText("denied Bash for zeta, a reason for the model")
	tm.run("send-keys", "-t", "0", "-l", "not on main")
	tm.keys("Enter")
	tm.waitText("✓ denied Bash for zeta")
	waitState(t, c, zeta, rpc.StateIdle)
	tm.waitScreen("zeta's result", func(s string) bool { return lineWith(s, "zeta", "MOCK-DENIED") != "" })
	if r, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: zeta}); err != nil || r.Result == nil || r.Result.FinalText == nil ||
		!strings.Contains(*r.Result.FinalText, "not on main") {
		t.Fatalf("zeta's result after the deny: %+v (%v)", r.Result, err)
	}

	// N starts a new delegation from the form.
	tm.keys("N")
	tm.waitText("new delegation")
	tm.keys("Up", "C-u")
	tm.run("send-keys", "-t", "0", "-l", dir)
	tm.keys("Down")
	tm.run("send-keys", "-t", "0", "-l", "[[reply epsilon-done]] the epsilon task")
	tm.keys("Enter")
	tm.waitText("✓ started ")
	tm.waitScreen("the new Session's result", func(s string) bool { return lineWith(s, "completed: epsilon-done") != "" })

	// A resize lays the screen out again.
	if !strings.Contains(tm.screen(), "TOKENS") {
		t.Fatal("no TOKENS column at 120 columns")
	}
	tm.run("resize-window", "-t", "0", "-x", "60", "-y", "30")
	s = tm.waitScreen("the layout for 60 columns", func(s string) bool {
		return !strings.Contains(s, "TOKENS") && strings.Contains(s, "STATE")
	})
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if n := len([]rune(l)); n > 60 {
			t.Fatalf("a line of %d columns after the resize: %q", n, l)
		}
	}

	// The daemon going away and coming back: the UI says so and goes on.
	d.Stop()
	tm.waitText("reconnecting…")
	startDaemon(t, home)
	tm.waitScreen("connected again", func(s string) bool {
		return strings.Contains(s, "connected") && !strings.Contains(s, "reconnecting") && strings.Contains(s, "gamma")
	})

	// q quits and restores the terminal: the main screen again, the
	// cursor visible, and no line of the attach above.
	tm.keys("q")
	s = tm.waitText("UI-EXITED 0")
	tm.restored()
	if strings.Contains(s, `"ok"`) || strings.Contains(s, `"end":"`) {
		t.Fatalf("a JSON line left on the shell after quitting:\n%s", s)
	}

	// So does Ctrl-C.
	tm = newTerm(t, 100, 30, command)
	tm.waitText("6 Sessions")
	tm.keys("C-c")
	tm.waitText("UI-EXITED 0")
	tm.restored()

	// And SIGTERM from outside.
	tm = newTerm(t, 100, 30, command)
	tm.waitText("6 Sessions")
	panePID := strings.TrimSpace(tm.run("list-panes", "-t", "0", "-F", "#{pane_pid}"))
	out, err := exec.Command("pgrep", "-P", panePID, "-x", "dlgt").Output()
	if err != nil {
		t.Fatalf("pgrep: %v", err)
	}
	if err := exec.Command("kill", "-TERM", strings.TrimSpace(string(out))).Run(); err != nil {
		t.Fatal(err)
	}
	tm.waitText("UI-EXITED")
	tm.restored()
}

// restored checks the terminal after the UI ended: the main screen, the
// cursor visible.
func (tm *term) restored() {
	tm.t.Helper()
	if got := strings.TrimSpace(tm.run("display-message", "-p", "-t", "0", "#{alternate_on} #{cursor_flag}")); got != "0 1" {
		tm.t.Fatalf("after quitting: alternate_on cursor_flag = %q, want 0 1", got)
	}
}

// cpuTicks is a process's user+system CPU time in clock ticks
// (/proc/PID/stat fields 14 and 15).
func cpuTicks(t *testing.T, pid string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// TestUIMeasure100 measures `dlgt ui` with 100 Sessions: the time from
// starting it to the first screen with every Session and the first
// rows' results, and the CPU the UI and the daemon (this process) spend
// over 30 s while nothing happens. It asserts nothing about the
// figures; set DLGT_UI_MEASURE=1 to run it (docs/design.md quotes it).
func TestUIMeasure100(t *testing.T) {
	if os.Getenv("DLGT_UI_MEASURE") == "" {
		t.Skip("set DLGT_UI_MEASURE=1 to measure")
	}
	bin := dlgtBinary(t)
	dir := shortDir(t)
	home := filepath.Join(dir, "h")
	startDaemon(t, home)
	launchEnv := fakeClaudeEnv(t, dir)
	c, err := client.New(client.Options{Home: home, NoAutostart: true, Getenv: func(string) string { return "" },
		Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var ids []string
	for batch := 0; batch < 10; batch++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := 0; i < 10; i++ {
			n := batch*10 + i
			wg.Add(1)
			go func() {
				defer wg.Done()
				rc, err := c.SessionCreate(ctx, rpc.SessionCreateParams{Title: fmt.Sprintf("task %d", n), Alias: fmt.Sprintf("s%03d", n),
					Harness: "claude", Cwd: dir, Prompt: fmt.Sprintf("[[reply result-%03d]]", n), RequestID: fmt.Sprintf("m%d", n), Environment: launchEnv})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, rc.Session.ID)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	for _, id := range ids {
		waitState(t, c, id, rpc.StateIdle)
	}
	command := fmt.Sprintf("env DLGT_HOME=%s DLGT_NO_AUTOSTART=1 %s ui; sleep 600", home, bin)
	var starts []time.Duration
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		tm := newTerm(t, 120, 40, command)
		for {
			s := tm.screen()
			lines := strings.Split(s, "\n")
			if strings.Contains(s, "100 Sessions") && len(lines) > 3 && strings.Contains(lines[2], "#1 completed: result-") &&
				strings.Contains(lines[15], "#1 completed: result-") {
				break
			}
			if time.Since(t0) > waitBound {
				t.Fatalf("no full first screen:\n%s", s)
			}
			time.Sleep(5 * time.Millisecond)
		}
		starts = append(starts, time.Since(t0))
		if i < 4 {
			tm.run("kill-server")
			continue
		}
		// Idle: the UI open, nothing happening, for 30 s.
		panePID := strings.TrimSpace(tm.run("list-panes", "-t", "0", "-F", "#{pane_pid}"))
		out, err := exec.Command("pgrep", "-P", panePID, "-x", "dlgt").Output()
		if err != nil {
			t.Fatalf("pgrep: %v", err)
		}
		uiPID := strings.TrimSpace(string(out))
		self := fmt.Sprint(os.Getpid())
		ui0, d0 := cpuTicks(t, uiPID), cpuTicks(t, self)
		time.Sleep(30 * time.Second)
		ui1, d1 := cpuTicks(t, uiPID), cpuTicks(t, self)
		tm.run("kill-server")
		time.Sleep(30 * time.Second)
		d2 := cpuTicks(t, self)
		t.Logf("idle 30 s with the UI open: UI %d ticks, daemon process %d ticks; 30 s without the UI: daemon process %d ticks (100 ticks = 1 s)",
			ui1-ui0, d1-d0, d2-d1)
	}
	t.Logf("start to a full first screen with 100 Sessions: %v", starts)
}

// TestUIKeyAfterDetach counts the keys lost right after coming back from
// attach: DLGT_UI_DETACH_ROUNDS rounds of a, Ctrl-], then ? typed as soon
// as the UI says it is back, each given 5 s to show the help. It logs
// the count; set the variable to run it (docs/design.md quotes it).
func TestUIKeyAfterDetach(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("DLGT_UI_DETACH_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set DLGT_UI_DETACH_ROUNDS to measure")
	}
	bin := dlgtBinary(t)
	dir := shortDir(t)
	home := filepath.Join(dir, "h")
	startDaemon(t, home)
	launchEnv := fakeClaudeEnv(t, dir)
	c, err := client.New(client.Options{Home: home, NoAutostart: true, Getenv: func(string) string { return "" },
		Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.SessionCreate(context.Background(), rpc.SessionCreateParams{Title: "t", Alias: "one", Harness: "claude", Cwd: dir,
		Prompt: "[[reply one-done]]", RequestID: "r1", Environment: launchEnv})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, c, rc.Session.ID, rpc.StateIdle)
	tm := newTerm(t, 120, 40, fmt.Sprintf("env DLGT_HOME=%s DLGT_NO_AUTOSTART=1 NO_COLOR=1 %s ui; sleep 600", home, bin))
	tm.waitScreen("the Session", func(s string) bool { return lineWith(s, "one", "idle") != "" })
	lost := 0
	for i := 0; i < rounds; i++ {
		tm.keys("a")
		tm.waitScreen("the attached harness", func(s string) bool { return !strings.Contains(s, "dlgt ui ·") })
		tm.keys("C-]")
		tm.waitText("✓ detached from one")
		tm.keys("?")
		shown := false
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(tm.screen(), "any key returns to the list") {
				shown = true
				break
			}
		}
		if !shown {
			lost++
			tm.keys("?")
			tm.waitText("any key returns to the list")
		}
		tm.keys("Escape")
		tm.waitScreen("the list again", func(s string) bool { return !strings.Contains(s, "any key returns to the list") })
	}
	t.Logf("keys lost right after detaching: %d of %d", lost, rounds)
}
