package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/internal/harnesstest/mockapi"
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
// DLGT_HEADLESS_LOG=DIR keeps each harness's daemon debug log there.

const (
	hlAnswer = "HEADLESS-ANSWER-5b2e"
	hlTag    = "HEADLESS-BENCH"
	// hlSpareRest is how long a warm round's spare rests once ready, as
	// a spare started well before a delegation would have.
	hlSpareRest = 2 * time.Second
)

// hlRun is one timed command: to the answer on its stdout and to the
// counterpart's first model request.
type hlRun struct {
	answer, firstRequest time.Duration
}

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
	for _, h := range harnesses {
		t.Run(h, func(t *testing.T) {
			b := newHeadlessBench(t, h)
			// One untimed peer run first: the CLI's files come into the
			// page cache before any contender is timed.
			b.run(t, "peer", -1)
			runs := map[string][]hlRun{}
			for i := 0; i < rounds; i++ {
				for _, kind := range hlKinds {
					r := b.run(t, kind, i)
					t.Logf("round %d %s: answer %v, first model request %v", i, kind, r.answer.Round(time.Millisecond), r.firstRequest.Round(time.Millisecond))
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
			peer, cold, warm := med("peer", ans), med("cold", ans), med("warm", ans)
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %.2f | %.2f |\n", b.version, ms(peer), ms(cold), ms(warm),
				float64(cold)/float64(peer), float64(warm)/float64(peer))
			fmt.Fprintf(&firsts, "to the first model request, %s: %s / %s / %s\n", b.version, ms(med("peer", first)), ms(med("cold", first)), ms(med("warm", first)))
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
}

func newHeadlessBench(t *testing.T, h string) *headlessBench {
	t.Helper()
	b := &headlessBench{harness: h, dlgt: dlgtBinary(t), cwd: gitRepo(t)}
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
		f, err := os.Create(filepath.Join(dir, h+"-daemon.log"))
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
	for _, req := range b.cp.Requests() {
		if strings.Contains(req.Prompt, prompt) && req.Kind == mockapi.KindPrompt {
			r.firstRequest = req.Received.Sub(start)
			break
		}
	}
	if r.firstRequest <= 0 {
		t.Fatalf("%s: the mock model never saw the prompt", kind)
	}
	if kind != "peer" {
		if kind == "warm" {
			if read := b.dlgtCmd(t, "session", "read", alias); !strings.Contains(read, `"warm":true`) {
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
