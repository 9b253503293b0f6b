package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	creackpty "github.com/creack/pty"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit/sshd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Remote Sessions over OpenSSH: a real sshd on 127.0.0.1 (a free port, a
// throwaway host key and user key, nothing of the system's ssh setup
// touched) runs the built dlgt as "the other machine", with a state
// directory and environment of its own. The client is the built dlgt with
// --host / DLGT_HOST, using the system ssh. Skipped only when sshd is not
// installed (.ci/run installs it).

type sshRig struct {
	*sshd.Server
	dir    string
	host   string // user@127.0.0.1:port
	sshCmd string // DLGT_SSH_COMMAND
	dlgt   string
	remote map[string]string // the remote side's environment (SetEnv)
	local  string            // the client's DLGT_HOME
}

// newSSHRig starts sshd; remoteEnv is the remote side's environment.
func newSSHRig(t testing.TB, remoteEnv map[string]string) *sshRig {
	t.Helper()
	dir, err := os.MkdirTemp("", "dlgt-ssh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &sshRig{dir: dir, local: filepath.Join(dir, "local")}
	// The remote side's dlgt lives in its own bin directory.
	bin := filepath.Join(dir, "bin")
	r.remote = map[string]string{
		"DLGT_HOME": filepath.Join(dir, "remote"),
		"PATH":      bin + ":/usr/local/bin:/usr/bin:/bin",
	}
	for k, v := range remoteEnv {
		if k != "PATH" {
			r.remote[k] = v
		}
	}
	r.Server = sshd.Start(t, dir, r.remote)
	r.dlgt = dlgtBinary(t)
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink(r.dlgt, filepath.Join(bin, "dlgt")); err != nil {
		t.Fatal(err)
	}
	r.host, r.sshCmd = r.Host, r.SSHCommand
	t.Cleanup(func() {
		// The remote daemon first (through ssh, as a user would), then sshd
		// (its own cleanup) and every connection it still serves.
		r.run(t, nil, "daemon", "stop")
		r.run(t, map[string]string{"DLGT_HOST": ""}, "daemon", "stop") // list --hosts local started one
	})
	return r
}

// run runs the local dlgt against the remote host; extra is added to the
// client's environment. It returns stdout and the exit status.
func (r *sshRig) run(t testing.TB, extra map[string]string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.dlgt, args...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, "DLGT_HOME=" + r.local,
		"DLGT_HOST=" + r.host, "DLGT_SSH_COMMAND=" + r.sshCmd,
	}
	for k, v := range extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if testing.Verbose() {
		t.Logf("dlgt %v: %v", args, time.Since(start).Round(time.Millisecond))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("dlgt %v: %v", args, err)
	}
	if testing.Verbose() && stderr.Len() > 0 {
		t.Logf("dlgt %v stderr: %s", args, stderr.String())
	}
	return stdout.String(), code
}

// must runs args, wants exit status 0 and decodes the JSON line into out.
func (r *sshRig) must(t testing.TB, out any, args ...string) string {
	t.Helper()
	stdout, code := r.run(t, nil, args...)
	if code != 0 {
		t.Fatalf("dlgt %v: exit %d\n%s", args, code, stdout)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("dlgt %v: %v\n%s", args, err, stdout)
		}
	}
	return stdout
}

type cliReceipt struct {
	OK      bool
	Session struct{ ID, State string }
	Cursor  string
}

type cliFetch struct {
	OK       bool
	Reason   string
	Cursor   string
	Runtime  struct{ Version string }
	Sessions []struct {
		Results []struct {
			ExecutionSeq int    `json:"execution_seq"`
			Status       string `json:"status"`
			FinalText    string `json:"final_text"`
		}
	}
}

func (f cliFetch) finalTexts() []string {
	var out []string
	for _, s := range f.Sessions {
		for _, r := range s.Results {
			out = append(out, r.FinalText)
		}
	}
	return out
}

func TestRemoteFakeHarnessOverSSH(t *testing.T) {
	r := newSSHRig(t, fakeClaudeEnv(t))
	var rc cliReceipt
	r.must(t, &rc, "session", "create", "--harness", "claude", "--title", "remote", "--request-id", "rr1", "--", "hello from afar")
	if !rc.OK || rc.Session.ID == "" || rc.Cursor == "" {
		t.Fatalf("receipt %+v", rc)
	}
	var f cliFetch
	r.must(t, &f, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s")
	if f.Reason != "result" || len(f.finalTexts()) != 1 || !strings.Contains(f.finalTexts()[0], "hello from afar") {
		t.Fatalf("fetch over ssh: %+v", f)
	}
	// The Session lives on the remote side: its state directory, not the
	// client's, holds the daemon; the client started no daemon.
	if _, err := os.Stat(filepath.Join(r.remote["DLGT_HOME"], "run")); err != nil {
		t.Errorf("the remote state directory has no run directory: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(r.local, "run")); len(ents) != 0 {
		t.Errorf("a local daemon was started: %v", ents)
	}
	// The remote side's working directory (its HOME) is the Session's cwd.
	var read struct {
		Session struct{ Cwd string }
	}
	r.must(t, &read, "session", "read", rc.Session.ID)
	if read.Session.Cwd == "" || read.Session.Cwd == r.local {
		t.Errorf("remote Session cwd %q", read.Session.Cwd)
	}
	// Follow-up in the same Session, and the retried create is replayed.
	var rc2 cliReceipt
	r.must(t, &rc2, "session", "send", rc.Session.ID, "--request-id", "rr2", "--", "and again")
	r.must(t, &f, "session", "fetch", rc.Session.ID, "--cursor", rc2.Cursor, "--until", "result", "--wait", "60s")
	if len(f.finalTexts()) != 1 || !strings.Contains(f.finalTexts()[0], "and again") {
		t.Fatalf("follow-up over ssh: %+v", f)
	}
	var again struct {
		Replayed bool
		Session  struct{ ID string }
	}
	r.must(t, &again, "session", "create", "--harness", "claude", "--title", "remote", "--request-id", "rr1", "--", "hello from afar")
	if !again.Replayed || again.Session.ID != rc.Session.ID {
		t.Errorf("retried create: %+v", again)
	}
	// Lists, events and harnesses answer through the same path.
	out := r.must(t, nil, "session", "list")
	if !strings.Contains(out, rc.Session.ID) {
		t.Errorf("list over ssh lacks the Session:\n%s", out)
	}
	out = r.must(t, nil, "events", "--session", rc.Session.ID)
	if !strings.Contains(out, "session.idle") {
		t.Errorf("events over ssh:\n%s", out)
	}
	// Several hosts in one list, each Session naming its host; this
	// machine ("local") has none.
	var multi struct {
		OK       bool
		Sessions []struct{ ID, Host string }
	}
	r.must(t, &multi, "session", "list", "--hosts", "local,"+r.host)
	if !multi.OK || len(multi.Sessions) != 1 || multi.Sessions[0].Host != r.host || multi.Sessions[0].ID != rc.Session.ID {
		t.Errorf("list --hosts: %+v", multi)
	}
	// doctor reports both ends; daemon status runs on the host.
	var doc struct {
		Checks []struct {
			Name, Host string
			OK         bool
		}
	}
	out, _ = r.run(t, nil, "doctor")
	json.Unmarshal([]byte(out), &doc)
	remoteChecks := map[string]bool{}
	for _, c := range doc.Checks {
		if c.Host == r.host {
			remoteChecks[c.Name] = c.OK
		}
	}
	if !remoteChecks["remote"] || !remoteChecks["daemon"] {
		t.Errorf("doctor over ssh does not report the remote end: %s", out)
	}
	out = r.must(t, nil, "daemon", "status")
	if !strings.Contains(out, filepath.Join(r.remote["DLGT_HOME"], "run")) {
		t.Errorf("daemon status did not run on the host: %s", out)
	}
	// The other read paths, and the MCP server pointed at the host.
	if out := r.must(t, nil, "harnesses"); !strings.Contains(out, `"claude"`) {
		t.Errorf("harnesses over ssh:\n%s", out)
	}
	if out := r.must(t, nil, "scrollback", rc.Session.ID); !strings.Contains(out, "and again") {
		t.Errorf("scrollback over ssh:\n%s", out)
	}
	mcpOverSSH(t, r)
	r.must(t, nil, "session", "stop", rc.Session.ID)
	var read2 struct {
		Session struct{ State string }
	}
	r.must(t, &read2, "session", "read", rc.Session.ID)
	if read2.Session.State != "stopped" {
		t.Errorf("after stop over ssh: %q", read2.Session.State)
	}
}

// Failures are RPC_UNAVAILABLE naming the host, with the local exit
// status (1), never a hang or a bare pipe error.
func TestRemoteFailuresAreTyped(t *testing.T) {
	r := newSSHRig(t, fakeClaudeEnv(t))
	type failure struct {
		OK    bool
		Error struct{ Code, Message string }
	}
	check := func(name string, extra map[string]string, wants ...string) {
		t.Helper()
		out, code := r.run(t, extra, "session", "list")
		var f failure
		json.Unmarshal([]byte(out), &f)
		if code != 1 || f.OK || f.Error.Code != "RPC_UNAVAILABLE" {
			t.Errorf("%s: exit %d, %s", name, code, out)
			return
		}
		for _, w := range append(wants, "127.0.0.1") {
			if !strings.Contains(f.Error.Message, w) {
				t.Errorf("%s: message lacks %q: %s", name, w, f.Error.Message)
			}
		}
	}
	check("unreachable", map[string]string{"DLGT_HOST": "127.0.0.1:" + strconv.Itoa(sshd.FreePort(t))}, "ssh failed", "onnection refused")
	check("authentication", map[string]string{"DLGT_SSH_COMMAND": "ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -i /dev/null"}, "ssh failed", "ermission denied")
	check("no remote dlgt", map[string]string{"DLGT_REMOTE_BIN": "/nonexistent/dlgt"}, "not found")

	// An older remote: the hello announces another schema.
	old := filepath.Join(r.dir, "dlgt-old")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.helloSchemaOverride=0", "-o", old, "github.com/dlgt-dev/dlgt/cmd/dlgt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	check("older schema", map[string]string{"DLGT_REMOTE_BIN": old}, "schema 0", "schema 1")

	// A bad --host is a usage error that reaches no ssh.
	out, code := r.run(t, nil, "--host", "-oProxyCommand=x", "session", "list")
	if code != 1 || !strings.Contains(out, "INVALID_ARGUMENT") {
		t.Errorf("bad --host: exit %d %s", code, out)
	}
}

// A long poll cut mid-wait (the remote daemon killed, then sshd gone)
// fails typed; the same fetch retried with the same cursor once the
// remote is back returns the result.
func TestRemoteDroppedMidWait(t *testing.T) {
	r := newSSHRig(t, fakeClaudeEnv(t))
	var rc cliReceipt
	r.must(t, &rc, "session", "create", "--harness", "claude", "--title", "slow", "--request-id", "d1", "--", "[[slow 15000]] slow one")
	type result struct {
		out  string
		code int
	}
	fetch := func() chan result {
		ch := make(chan result, 1)
		go func() {
			out, code := r.run(t, nil, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s")
			ch <- result{out, code}
		}()
		return ch
	}
	// sshd and its connections go away while the fetch waits. The turn
	// lasts 15 s so that on a loaded machine the fetch is still waiting
	// when sshd ends (with a 4 s turn the result sometimes came first).
	ch := fetch()
	time.Sleep(3 * time.Second)
	r.Stop()
	res := <-ch
	if res.code != 1 || !strings.Contains(res.out, "RPC_UNAVAILABLE") || !strings.Contains(res.out, "127.0.0.1") {
		t.Fatalf("fetch cut by sshd's end: exit %d %s", res.code, res.out)
	}
	// Back again: the retry with the same cursor gets the result, once.
	r.Restart(t)
	res = <-fetch()
	var f cliFetch
	if res.code != 0 || json.Unmarshal([]byte(res.out), &f) != nil || f.Reason != "result" || len(f.finalTexts()) != 1 || !strings.Contains(f.finalTexts()[0], "slow one") {
		t.Fatalf("retried fetch: exit %d %s", res.code, res.out)
	}

	// The remote daemon killed (-9) while a fetch waits on it: typed, and
	// the retry reaches a new daemon (started by the remote proxy) that
	// still knows the Session and answers with a document.
	var rc2 cliReceipt
	r.must(t, &rc2, "session", "send", rc.Session.ID, "--request-id", "d2", "--", "[[slow 30000]] slower")
	var st struct{ PID int }
	r.must(t, &st, "daemon", "status")
	ch = make(chan result, 1)
	go func() {
		out, code := r.run(t, nil, "session", "fetch", rc.Session.ID, "--cursor", rc2.Cursor, "--until", "result", "--wait", "60s")
		ch <- result{out, code}
	}()
	time.Sleep(3 * time.Second)
	if st.PID <= 0 || syscall.Kill(st.PID, syscall.SIGKILL) != nil {
		t.Fatalf("cannot kill the remote daemon (pid %d)", st.PID)
	}
	res = <-ch
	if res.code != 1 || !strings.Contains(res.out, "RPC_UNAVAILABLE") || !strings.Contains(res.out, "127.0.0.1") {
		t.Fatalf("fetch cut by the remote daemon's death: exit %d %s", res.code, res.out)
	}
	out, code := r.run(t, nil, "session", "read", rc.Session.ID)
	if code != 0 || !strings.Contains(out, rc.Session.ID) {
		t.Fatalf("after the remote daemon's restart the Session is unknown: exit %d %s", code, out)
	}
}

// BenchmarkRemoteOverhead measures, as a client process sees it, what ssh
// adds: one create → confirmed receipt, and one fetch of a result that is
// already there (the response path a Stop wakes), each as a whole dlgt
// command, locally and through ssh to the loopback sshd, interleaved.
//
//	go test -run '^$' -bench RemoteOverhead -benchtime 10x ./daemon/
func BenchmarkRemoteOverhead(b *testing.B) {
	r := newSSHRig(b, fakeClaudeEnv(b))
	// The local side: the same fake harness, its own daemon.
	local := map[string]string{"DLGT_HOST": ""}
	for k, v := range fakeClaudeEnv(b) {
		if k != "PATH" && k != "HOME" {
			local[k] = v
		}
	}
	b.Cleanup(func() { r.run(b, local, "daemon", "stop") })
	var times [2][3][]time.Duration // [local|ssh][create|fetch|stop]
	var bare []time.Duration        // `ssh host true`: the peer
	user, hostport, _ := strings.Cut(r.host, "@")
	host, port, _ := strings.Cut(hostport, ":")
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if out, err := exec.Command("/bin/sh", "-c", r.sshCmd+` -T -o BatchMode=yes -p "$1" "$2" true`, "ssh", port, user+"@"+host).CombinedOutput(); err != nil {
			b.Fatalf("ssh true: %v %s", err, out)
		}
		bare = append(bare, time.Since(start))
		for side, extra := range []map[string]string{local, nil} {
			start := time.Now()
			out, code := r.run(b, extra, "session", "create", "--harness", "claude", "--title", "bench", "--request-id", fmt.Sprintf("b%d-%d", i, side), "--", "bench")
			times[side][0] = append(times[side][0], time.Since(start))
			var rc cliReceipt
			if code != 0 || json.Unmarshal([]byte(out), &rc) != nil {
				b.Fatalf("create: %d %s", code, out)
			}
			if out, code := r.run(b, extra, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s"); code != 0 {
				b.Fatalf("fetch: %d %s", code, out)
			}
			start = time.Now()
			if out, code := r.run(b, extra, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s"); code != 0 {
				b.Fatalf("fetch: %d %s", code, out)
			}
			times[side][1] = append(times[side][1], time.Since(start))
			times[side][2] = append(times[side][2], stopToFetch(b, r, extra, rc.Session.ID, fmt.Sprintf("b%d-%d-slow", i, side)))
			r.run(b, extra, "session", "stop", rc.Session.ID)
		}
	}
	med := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	b.Logf("ssh host true: %v, median of %d", med(bare).Round(time.Millisecond), len(bare))
	b.ReportMetric(float64(med(bare).Microseconds())/1000, "ssh_true_ms")
	for j, name := range []string{"create_confirmed", "fetch_result", "stop_to_fetch"} {
		l, s := med(times[0][j]), med(times[1][j])
		b.ReportMetric(float64(l.Microseconds())/1000, name+"_local_ms")
		b.ReportMetric(float64(s.Microseconds())/1000, name+"_ssh_ms")
		b.Logf("%s: local %v, ssh %v (+%v over local; %v over ssh host true), median of %d", name, l.Round(time.Millisecond), s.Round(time.Millisecond),
			(s - l).Round(time.Millisecond), (s - med(bare)).Round(time.Millisecond), len(times[0][j]))
	}
}

// stopToFetch sends a 3 s turn, parks `session fetch --until result` on it
// at once (an ssh connection is set up well within the 3 s), and returns
// how long after the daemon recorded the result (completed_at_ms, when the
// Stop hook was handled) the fetch process exited holding it.
func stopToFetch(b *testing.B, r *sshRig, extra map[string]string, id, reqID string) time.Duration {
	b.Helper()
	out, code := r.run(b, extra, "session", "send", id, "--request-id", reqID, "--", "[[slow 3000]] bench")
	var rc cliReceipt
	if code != 0 || json.Unmarshal([]byte(out), &rc) != nil {
		b.Fatalf("send: %d %s", code, out)
	}
	start := time.Now()
	out, code = r.run(b, extra, "session", "fetch", id, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s")
	end := time.Now()
	var doc struct {
		Sessions []struct {
			Results []rpc.Result `json:"results"`
		} `json:"sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Sessions) != 1 || len(doc.Sessions[0].Results) == 0 {
		b.Fatalf("fetch: %d %s", code, out)
	}
	done := time.UnixMilli(doc.Sessions[0].Results[0].CompletedAtMS)
	if done.Before(start.Add(time.Second)) {
		b.Fatalf("the 3 s turn ended %v after the fetch started: the poll was not parked first", done.Sub(start))
	}
	return end.Sub(done)
}

// attach over ssh: `dlgt --host h session attach` runs `ssh -t h dlgt
// session attach`, so the remote TUI reaches this terminal and Ctrl-]
// detaches as it does locally.
func TestRemoteAttachOverSSH(t *testing.T) {
	r := newSSHRig(t, fakeClaudeEnv(t))
	var rc cliReceipt
	r.must(t, &rc, "session", "create", "--harness", "claude", "--title", "attach", "--request-id", "a1", "--", "ATTACH-MARK-42")
	r.must(t, nil, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s")
	cmd := exec.Command(r.dlgt, "--host", r.host, "session", "attach", rc.Session.ID)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, "DLGT_HOME=" + r.local, "DLGT_SSH_COMMAND=" + r.sshCmd, "TERM=xterm-256color"}
	f, err := creackpty.StartWithSize(cmd, &creackpty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	var seen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	has := func(s string) bool { mu.Lock(); defer mu.Unlock(); return strings.Contains(seen.String(), s) }
	deadline := time.Now().Add(60 * time.Second)
	for !has("ATTACH-MARK-42") {
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("the remote screen never reached the terminal:\n%q", seen.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.Write([]byte{0x1d}) // Ctrl-]
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("attach over ssh ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("Ctrl-] did not end the remote attach")
	}
	time.Sleep(100 * time.Millisecond)
	if !has(`"end":"detached"`) {
		mu.Lock()
		t.Errorf("no detached line:\n%q", seen.String())
		mu.Unlock()
	}
}

// A real harness Session over --host, for each harness: the remote side's
// environment (its HOME with the harness's seeded state, the mock's URL
// and key) is what the remote proxy fills the launch with; the Session
// runs in a git repository the harness trusts there. The client creates
// it, fetches its result and stops it through ssh.
func TestRemoteRealOverSSH(t *testing.T) {
	for _, h := range []string{"claude", "codex", "gemini", "copilot"} {
		t.Run(h, func(t *testing.T) {
			mock, env := counterpartEnv(t, h, mockapi.Script{mockapi.Contains("REMOTE-REAL", mockapi.Reply{Text: "REMOTE-REAL-ANSWER-9c1"})})
			r := newSSHRig(t, env)
			var rc cliReceipt
			r.must(t, &rc, "session", "create", "--harness", h, "--cwd", gitRepo(t), "--title", "real", "--request-id", "real1", "--", "REMOTE-REAL: answer")
			var f cliFetch
			r.must(t, &f, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "100s")
			if f.Reason != "result" || len(f.finalTexts()) != 1 || f.finalTexts()[0] != "REMOTE-REAL-ANSWER-9c1" {
				t.Fatalf("real %s over ssh: %+v", h, f)
			}
			n := 0
			for _, p := range mock.Prompts() {
				if strings.Contains(p, "REMOTE-REAL") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the mock saw the prompt %d times, want 1", n)
			}
			r.must(t, nil, "session", "stop", rc.Session.ID)
		})
	}
}

// mcpOverSSH runs `dlgt --host H mcp` as an MCP client would and delegates
// a task through it: the Session is created on the host.
func mcpOverSSH(t *testing.T, r *sshRig) {
	t.Helper()
	cmd := exec.Command(r.dlgt, "--host", r.host, "mcp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, "DLGT_HOME=" + r.local, "DLGT_SSH_COMMAND=" + r.sshCmd}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "remote-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("mcp over ssh: %v", err)
	}
	defer cs.Close()
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"harness": "claude", "prompt": "MCP-REMOTE task", "request_id": "mcp-r1"}})
	if err != nil || res.IsError {
		t.Fatalf("delegate over ssh: %v %s", err, text(res))
	}
	session, cursor := lastMatch(agentSessionRe, text(res)), lastMatch(agentCursorRe, text(res))
	for i := 0; i < 10; i++ {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"session": session, "cursor": cursor}})
		if err != nil || res.IsError {
			t.Fatalf("wait over ssh: %v %s", err, text(res))
		}
		if strings.Contains(text(res), "Execution 1 completed") {
			break
		}
		cursor = lastMatch(agentCursorRe, text(res))
	}
	if !strings.Contains(text(res), "MCP-REMOTE task") {
		t.Errorf("wait over ssh did not bring the result:\n%s", text(res))
	}
	// The Session is the host's: the host's daemon reads it.
	if out := r.must(t, nil, "session", "read", session); session == "" || !strings.Contains(out, session) {
		t.Errorf("read of %q over ssh: %s", session, out)
	}
	r.must(t, nil, "session", "stop", session)
}

// events --follow over ssh: live events arrive through the channel, and
// when sshd and its connections go away the follower reconnects once the
// host is back and carries on after the last event it printed.
func TestRemoteEventsFollowReconnects(t *testing.T) {
	r := newSSHRig(t, fakeClaudeEnv(t))
	var rc cliReceipt
	r.must(t, &rc, "session", "create", "--harness", "claude", "--title", "follow", "--request-id", "f1", "--", "first")
	r.must(t, nil, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, r.dlgt, "events", "--follow", "--after", "0", "--session", rc.Session.ID)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, "DLGT_HOME=" + r.local, "DLGT_HOST=" + r.host, "DLGT_SSH_COMMAND=" + r.sshCmd}
	var mu sync.Mutex
	var out bytes.Buffer
	pr, pw, _ := os.Pipe()
	cmd.Stdout = pw
	var stderr tailWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	defer func() { cancel(); cmd.Wait() }()
	// seqs returns the seq of every event line printed so far.
	seqs := func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		var s []uint64
		for _, line := range strings.Split(out.String(), "\n") {
			var ev struct{ Seq uint64 }
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Seq > 0 {
				s = append(s, ev.Seq)
			}
		}
		return s
	}
	waitIdle := func(exec int) {
		t.Helper()
		want := fmt.Sprintf(`"execution_seq":%d,"result_status":"completed"`, exec)
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			ok := strings.Contains(out.String(), want)
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("the follower never printed %s:\n%s\nstderr: %s", want, out.String(), stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitIdle(1) // the history so far
	var rc2 cliReceipt
	r.must(t, &rc2, "session", "send", rc.Session.ID, "--request-id", "f2", "--", "second")
	waitIdle(2) // live, through the channel

	r.Stop()
	time.Sleep(500 * time.Millisecond)
	r.Restart(t)
	var rc3 cliReceipt
	r.must(t, &rc3, "session", "send", rc.Session.ID, "--request-id", "f3", "--", "third")
	waitIdle(3) // after the reconnect
	s := seqs()
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			t.Fatalf("event seqs not strictly increasing across the reconnect (a repeat or a step back): %v", s)
		}
	}
}

// tailWriter is a goroutine-safe buffer for a child's stderr.
type tailWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A --host Session's worktree is made by the remote daemon, under its
// state directory: the tool's file lands there, and session diff over ssh
// shows it.
func TestRemoteWorktreeOverSSH(t *testing.T) {
	r := newSSHRig(t, fakeClaudeEnv(t))
	repo := newGitRepo(t)
	var rc struct {
		OK      bool
		Session rpc.Session
		Cursor  string
	}
	r.must(t, &rc, "session", "create", "--harness", "claude", "--cwd", repo, "--worktree", "--title", "remote wt", "--request-id", "rw1", "--", "[[tool echo remote > r.txt]] write it")
	wt := rc.Session.Worktree
	if !rc.OK || wt == nil || !strings.HasPrefix(wt.Path, filepath.Join(r.remote["DLGT_HOME"], "worktrees")+"/") {
		t.Fatalf("receipt %+v", rc)
	}
	var f cliFetch
	r.must(t, &f, "session", "fetch", rc.Session.ID, "--cursor", rc.Cursor, "--until", "result", "--wait", "60s")
	if f.Reason != "result" {
		t.Fatalf("fetch over ssh: %+v", f)
	}
	if b, err := os.ReadFile(filepath.Join(wt.Path, "r.txt")); err != nil || string(b) != "remote\n" {
		t.Fatalf("the file in the remote worktree: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "r.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file is in the checkout: %v", err)
	}
	if out := r.must(t, nil, "session", "diff", rc.Session.ID); !strings.Contains(out, "+++ b/r.txt") || !strings.Contains(out, "+remote") {
		t.Fatalf("session diff over ssh: %q", out)
	}
	r.must(t, nil, "session", "stop", rc.Session.ID, "--remove-worktree", "--force")
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Fatalf("the remote worktree is still there: %v", err)
	}
}
