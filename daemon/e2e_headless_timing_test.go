package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A delegation against what a user would run instead: the harness's own
// headless one-shot (`claude -p`, `codex exec`, `gemini -p`). Per harness
// and round, interleaved: the headless peer, a cold `dlgt session create
// --wait` (a client process against a real `dlgt daemon` process, both
// the built binaries) and the same create once `dlgt session warm` has a
// spare ready. Each is timed by the caller's clock, from starting the
// command to its stdout holding the answer, and to the counterpart's
// first model request (the mock's clock, in this process). The mocks
// answer at once. The table of medians and ratios is logged; the test
// asserts that every run got its answer and that the warm create took a
// spare, never a duration.
//
//	DLGT_HEADLESS_ROUNDS=5 DLGT_HEADLESS_HARNESSES=claude,codex,gemini \
//	    go test -count=1 -run TestHeadlessVsDelegation -v ./daemon/
//
// DLGT_HEADLESS_LOG=DIR keeps each daemon's debug log there.
// DLGT_HEADLESS_BASE=COMMIT adds dlgt built from COMMIT as two more
// contenders of every round (cold@base, warm@base), against a daemon of
// its own: a change's before and after in one interleaved run.

const (
	hlAnswer = "HEADLESS-ANSWER-5b2e"
	hlTag    = "HEADLESS-BENCH"
	// hlSpareRest is how long a warm round's spare rests once ready, as
	// a spare started well before a delegation would have.
	hlSpareRest = 2 * time.Second
)

// hlRun is one timed command: to the answer on its stdout and to the
// counterpart's first model request, and its steps (hlSteps).
type hlRun struct {
	answer, firstRequest time.Duration
	steps                []time.Duration
}

// hlSteps names where a run's time goes, by its clocks: the command's
// start and its stdout, the daemon's events as a subscriber sees them
// (session.ready: the counterpart's SessionStart, or a spare's claim;
// session.idle: its Stop hook) and the mock's. A peer has no events: its
// first step runs to the model request, its third from the model's
// answer.
var hlSteps = []string{
	"command start → session.ready (cold: to SessionStart; warm: the claim, Codex's SessionStart)",
	"session.ready → counterpart's model request",
	"model request → answered (mock)",
	"model answered → session.idle (Stop hook)",
	"session.idle → answer on the command's stdout",
}

// dlgtBinaryAt builds dlgt and dlgt-hook from commit (git archive; the
// working tree untouched) into a directory of their own.
func dlgtBinaryAt(t *testing.T, commit string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o700)
	cmd := exec.Command("sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive "$1" | tar -x -C "$2"`, "sh", commit, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	for _, pkg := range []string{"dlgt", "dlgt-hook"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, pkg), "./cmd/"+pkg)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s at %s: %v\n%s", pkg, commit, err, out)
		}
	}
	return filepath.Join(dir, "dlgt")
}

var hlSessionID = regexp.MustCompile(`"id":"((?:claude|codex|gemini):[0-9a-f-]+)"`)

// hlKinds are the contenders, in the order each round runs them.
var hlKinds = []string{"peer", "cold", "warm"}

func TestHeadlessVsDelegation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real harness CLIs many times")
	}
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("DLGT_HEADLESS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	harnesses := []string{"claude", "codex", "gemini"}
	if v := os.Getenv("DLGT_HEADLESS_HARNESSES"); v != "" {
		harnesses = strings.Split(v, ",")
	}
	var table strings.Builder
	fmt.Fprintf(&table, "medians of %d rounds, the caller's clock from starting the command to holding the answer:\n", rounds)
	table.WriteString("| | headless peer | dlgt cold | dlgt warm | cold / peer | warm / peer |\n|---|---:|---:|---:|---:|---:|\n")
	var firsts strings.Builder
	base := os.Getenv("DLGT_HEADLESS_BASE")
	var baseBin string
	if base != "" {
		baseBin = dlgtBinaryAt(t, base)
	}
	for _, h := range harnesses {
		t.Run(h, func(t *testing.T) {
			benches := map[string]*headlessBench{"": newHeadlessBench(t, h, dlgtBinary(t))}
			kinds := append([]string(nil), hlKinds...)
			if base != "" {
				benches["base"] = newHeadlessBench(t, h, baseBin)
				kinds = append(kinds, "cold@base", "warm@base")
			}
			b := benches[""]
			// One untimed peer run first: the CLI's files come into the
			// page cache before any contender is timed.
			b.run(t, "peer", -1)
			runs := map[string][]hlRun{}
			for i := 0; i < rounds; i++ {
				for _, kind := range kinds {
					k, side, _ := strings.Cut(kind, "@")
					r := benches[side].run(t, k, i)
					t.Logf("round %d %s: answer %v, first model request %v, steps %v", i+1, kind, r.answer.Round(time.Millisecond), r.firstRequest.Round(time.Millisecond), r.steps)
					runs[kind] = append(runs[kind], r)
				}
			}
			med := func(kind string, f func(hlRun) time.Duration) time.Duration {
				ds := make([]time.Duration, 0, len(runs[kind]))
				for _, r := range runs[kind] {
					ds = append(ds, f(r))
				}
				sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
				return ds[len(ds)/2]
			}
			ans := func(r hlRun) time.Duration { return r.answer }
			first := func(r hlRun) time.Duration { return r.firstRequest }
			ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" }
			peer := med("peer", ans)
			for _, side := range []string{"", "@base"} {
				if _, ok := runs["cold"+side]; !ok {
					continue
				}
				cold, warm := med("cold"+side, ans), med("warm"+side, ans)
				label := b.version
				if side != "" {
					label += " (dlgt at " + base + ")"
				}
				fmt.Fprintf(&table, "| %s | %s | %s | %s | %.2f | %.2f |\n", label, ms(peer), ms(cold), ms(warm),
					float64(cold)/float64(peer), float64(warm)/float64(peer))
			}
			fmt.Fprintf(&firsts, "to the first model request, %s: %s / %s / %s\n", b.version, ms(med("peer", first)), ms(med("cold", first)), ms(med("warm", first)))
			fmt.Fprintf(&firsts, "  steps, medians (%s):\n", strings.Join(kinds, " / "))
			for j, name := range hlSteps {
				step := func(r hlRun) time.Duration { return r.steps[j] }
				var cols []string
				for _, kind := range kinds {
					cols = append(cols, fmt.Sprintf("%7s", ms(med(kind, step))))
				}
				fmt.Fprintf(&firsts, "    %s  %s\n", strings.Join(cols, " / "), name)
			}
		})
	}
	t.Logf("\n%s%s", table.String(), firsts.String())
}

// headlessBench is one harness's side: its mock, the client environment
// (the same for the peer and dlgt), a real daemon and a project.
type headlessBench struct {
	harness, version string
	dlgt             string
	cp               *mockapi.Server
	env              []string
	cwd              string
	clock            *eventClock // the daemon's events (follow)
}

// follow records the daemon's events until the test ends.
func (b *headlessBench) follow(t *testing.T) {
	t.Helper()
	b.clock = followEvents(t, b.envValue("DLGT_SOCKET"))
}

// eventAt is when session's first event typ arrived (zero: never).
func (b *headlessBench) eventAt(session, typ string) time.Time {
	return b.clock.getFor(session, typ)
}

func newHeadlessBench(t *testing.T, h, dlgt string) *headlessBench {
	t.Helper()
	b := &headlessBench{harness: h, dlgt: dlgt, cwd: gitRepo(t)}
	cp, env := counterpartEnv(t, h, mockapi.Script{mockapi.Contains(hlTag, mockapi.Reply{Text: hlAnswer})})
	if cp == nil {
		t.Fatalf("unknown harness %q", h)
	}
	b.cp = cp
	mark := newE2EMark(t)
	addMark(env, mark)
	sockDir, err := os.MkdirTemp("", "dlgt-h")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	env["DLGT_HOME"] = filepath.Join(t.TempDir(), "state")
	env["DLGT_SOCKET"] = filepath.Join(sockDir, "d.sock")
	env["PATH"] = filepath.Dir(b.dlgt) + ":" + env["PATH"]
	for k, v := range env {
		b.env = append(b.env, k+"="+v)
	}
	sort.Strings(b.env)
	bin := env["DLGT_"+strings.ToUpper(h)+"_BIN"]
	b.version = map[string]string{"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}[h]
	if out, err := exec.Command(bin, "--version").Output(); err == nil {
		// "2.1.332 (Claude Code)", "codex-cli 0.171.0", "0.61.0"
		for _, f := range strings.Fields(string(out)) {
			if f != "" && f[0] >= '0' && f[0] <= '9' {
				b.version += " " + f
				break
			}
		}
	}

	// The daemon: the built binary, in its own process, with its hooks
	// through dlgt-hook beside it.
	logOut := io.Discard
	if dir := os.Getenv("DLGT_HEADLESS_LOG"); dir != "" {
		f, err := os.Create(filepath.Join(dir, h+"-daemon-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		logOut = f
	}
	daemon := exec.Command(b.dlgt, "daemon", "--debug")
	daemon.Env, daemon.Stderr = b.env, logOut
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { daemon.Wait(); close(exited) }()
	t.Cleanup(func() {
		daemon.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			daemon.Process.Kill()
			t.Error("the daemon did not stop within 30 s")
		}
		noCodexLeft(t, mark, 10*time.Second)
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := b.status(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not answer within 20 s")
		}
	}
	b.follow(t)
	return b
}

// status is the daemon's internal status.
func (b *headlessBench) status() (rpc.DaemonStatus, error) {
	var st rpc.DaemonStatus
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, b.envValue("DLGT_SOCKET"))
	if err != nil {
		return st, err
	}
	defer c.Close()
	return st, c.Call(ctx, rpc.DaemonStatusMethod.Name, struct{}{}, &st)
}

func (b *headlessBench) envValue(k string) string {
	for _, kv := range b.env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

// dlgtCmd runs dlgt to completion with the bench's environment.
func (b *headlessBench) dlgtCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(b.dlgt, args...)
	cmd.Env, cmd.Dir = b.env, b.cwd
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dlgt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// run times one contender of round i.
func (b *headlessBench) run(t *testing.T, kind string, i int) hlRun {
	t.Helper()
	prompt := fmt.Sprintf("%s %s %d: answer at once", hlTag, kind, i+1)
	alias := fmt.Sprintf("bench-%s-%d", kind, i+1)
	create := []string{"session", "create", "--harness", b.harness, "--cwd", b.cwd, "--alias", alias, "--title", alias, "--wait", "2m", "-o", "text", "--", prompt}
	var argv []string
	switch kind {
	case "peer":
		bin := b.envValue("DLGT_" + strings.ToUpper(b.harness) + "_BIN")
		switch b.harness {
		case "claude":
			argv = []string{bin, "-p", prompt}
		case "codex":
			argv = []string{bin, "exec", prompt}
		case "gemini":
			// Headless Gemini refuses an untrusted folder; dlgt's
			// launch trusts it the same way.
			argv = []string{bin, "-p", prompt, "--skip-trust"}
		}
	case "cold":
		argv = append([]string{b.dlgt}, create...)
	case "warm":
		b.dlgtCmd(t, "session", "warm", "--harness", b.harness, "--cwd", b.cwd)
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if st, err := b.status(); err == nil && st.SparesReady > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no warm spare was ready within 2 minutes")
			}
		}
		time.Sleep(hlSpareRest)
		argv = append([]string{b.dlgt}, create...)
	}
	start, answered := b.timeToAnswer(t, argv)
	r := hlRun{answer: answered.Sub(start)}
	var req *mockapi.Request
	for _, q := range b.cp.Requests() {
		if strings.Contains(q.Prompt, prompt) && q.Kind == mockapi.KindPrompt {
			req = &q
			break
		}
	}
	if req == nil {
		t.Fatalf("%s: the mock model never saw the prompt", kind)
	}
	r.firstRequest = req.Received.Sub(start)
	if kind == "peer" {
		r.steps = []time.Duration{req.Received.Sub(start), 0, req.Answered.Sub(req.Received), answered.Sub(req.Answered), 0}
	} else {
		read := b.dlgtCmd(t, "session", "read", alias)
		id := hlSessionID.FindStringSubmatch(read)
		if id == nil {
			t.Fatalf("no Session id in %s", read)
		}
		ready, idle := b.eventAt(id[1], rpc.EventSessionReady), b.eventAt(id[1], rpc.EventSessionIdle)
		marks := []time.Time{start, ready, req.Received, req.Answered, idle, answered}
		for j := 1; j < len(marks); j++ {
			if marks[j].IsZero() {
				t.Fatalf("%s: no mark for step %q: %v", kind, hlSteps[j-1], marks)
			}
			// An event can reach this subscriber after the fetch it woke
			// answered the command (a loaded machine): that step counts
			// as none.
			if marks[j].Before(marks[j-1]) {
				marks[j] = marks[j-1]
			}
			r.steps = append(r.steps, marks[j].Sub(marks[j-1]))
		}
		if kind == "warm" {
			if !strings.Contains(read, `"warm":true`) {
				t.Fatalf("the warm create took no spare:\n%s", read)
			}
			// The spare's replacement would start beside the next
			// round's contenders.
			b.dlgtCmd(t, "session", "warm", "--harness", b.harness, "--cwd", b.cwd, "--spares", "0")
		}
		b.dlgtCmd(t, "session", "stop", alias)
	}
	return r
}

// timeToAnswer runs argv with the bench's environment and returns when it
// started and when its stdout first held the answer; it waits for the
// command's exit.
func (b *headlessBench) timeToAnswer(t *testing.T, argv []string) (start, answered time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = b.env, b.cwd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var mu sync.Mutex
	read := make(chan struct{})
	start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(read)
		buf := make([]byte, 64<<10)
		for {
			n, err := stdout.Read(buf)
			now := time.Now()
			mu.Lock()
			out.Write(buf[:n])
			if answered.IsZero() && bytes.Contains(out.Bytes(), []byte(hlAnswer)) {
				answered = now
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	<-read
	err = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	if err != nil || answered.IsZero() {
		t.Fatalf("%s: %v; no answer\nstdout:\n%s\nstderr:\n%s", filepath.Base(argv[0]), err, out.String(), stderr.String())
	}
	return start, answered
}
