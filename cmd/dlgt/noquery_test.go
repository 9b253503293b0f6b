package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/rpc"
)

// buildBinary builds the command in pkg (with -race when the test runs
// with it, so the build reuses the test's compiled packages), for a test
// that needs the program as a user runs it: its package initialisation
// and all, which an in-process run() skips.
func buildBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// terminalQueries are what a program writes to ask the terminal
// something and wait for the answer: the background color (OSC 11) and
// the cursor position (DSR 6).
var terminalQueries = []string{"\x1b]11;?", "\x1b[6n"}

// silentRun is what a command run on a silent terminal wrote, how long
// it ran (or took until ready), and how it exited.
type silentRun struct {
	out     string
	elapsed time.Duration
	err     error
}

// runOnSilentPTY runs the dlgt binary with stdin, stdout and stderr on a
// pseudo-terminal (its controlling terminal) that never answers: what a
// program driving dlgt through a PTY looks like. An interactive command
// is ended by end(master) once ready holds for its output; the elapsed
// time is then the time until ready.
func runOnSilentPTY(t *testing.T, bin string, env []string, args []string, bound time.Duration,
	ready func(string) bool, end func(master *os.File)) silentRun {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer master.Close()
	if err := pty.Setsize(master, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	term := readPTY(master)
	output := term.String
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(bound)
	ended := ready == nil
	var res silentRun
	for {
		select {
		case err := <-done:
			res.elapsed, res.err = time.Since(t0), err
			// The rest of the output: the reader ends at EIO once the
			// last holder of the slave side is gone.
			select {
			case <-term.done:
			case <-time.After(5 * time.Second):
			}
			res.out = output()
			return res
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("dlgt %s on a terminal that never answers: not done within %v (ready %v); it wrote %q",
				strings.Join(args, " "), bound, ended, output())
		case <-time.After(10 * time.Millisecond):
			if !ended && ready(output()) {
				ended = true
				res.elapsed = time.Since(t0)
				end(master)
			}
		}
	}
}

// No dlgt (or dlgtc) command but `dlgt ui` writes anything to the terminal it was
// not asked to, nor waits on the terminal's answers: run on a PTY that
// never answers (a program driving dlgt, `script`, an editor's shell),
// each returns well within the 5 s a terminal query waits, and writes no
// query. Before Bubble Tea v2, the UI library's package initialisation
// asked for the background color in every command and waited 5 s.
func TestCommandsDoNotQueryTheTerminal(t *testing.T) {
	bin := buildBinary(t, ".", "dlgt")
	// dlgtc alone (no dlgt beside it, none on PATH) runs the same
	// socket-only commands itself.
	dlgtc := buildBinary(t, "../dlgtc", "dlgtc")
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{}})
	d.Set(rpc.MethodHarnessList, rpc.HarnessListResult{Harnesses: []rpc.HarnessInfo{}})
	empty := t.TempDir()
	home := t.TempDir()
	env := []string{"PATH=" + empty, "HOME=" + home, "DLGT_HOME=" + filepath.Join(home, "dlgt"), "DLGT_NO_AUTOSTART=1",
		"DLGT_SOCKET=" + d.Socket, "TERM=xterm-256color", "GORACE=atexit_sleep_ms=0"}
	// 2 s: a query waited 5 s; the commands take tens of milliseconds.
	const bound = 2 * time.Second
	type run struct {
		bin  string
		args []string
	}
	var runs []run
	for _, args := range [][]string{
		{"--version"}, {"version"}, {"--help"}, {"help", "session"}, {"session", "list"}, {"session", "list", "-o", "text"},
		{"harnesses"}, {"doctor"}, {"doctor", "-o", "text"}, {"daemon", "status"},
	} {
		runs = append(runs, run{bin, args})
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"session", "list"}, {"session", "list", "-o", "text"}, {"harnesses"}} {
		runs = append(runs, run{dlgtc, args})
	}
	for _, rn := range runs {
		args := rn.args
		r := runOnSilentPTY(t, rn.bin, env, args, 3*bound, nil, nil)
		// dlgtc alone ran it itself (it has no dlgt to hand it to).
		if rn.bin == dlgtc && r.err != nil {
			t.Errorf("%s %s: %v; it wrote %q", filepath.Base(rn.bin), strings.Join(args, " "), r.err, r.out)
		}
		t.Logf("%s %s: %v", filepath.Base(rn.bin), strings.Join(args, " "), r.elapsed.Round(time.Millisecond))
		if r.elapsed > bound {
			t.Errorf("%s %s took %v on a terminal that never answers", filepath.Base(rn.bin), strings.Join(args, " "), r.elapsed)
		}
		for _, q := range terminalQueries {
			if strings.Contains(r.out, q) {
				t.Errorf("%s %s wrote the terminal query %q: %q", filepath.Base(rn.bin), strings.Join(args, " "), q, r.out)
			}
		}
	}

	// session attach repaints the Session at once, and Ctrl-] ends it.
	sock := filepath.Join(shortDir(t), "s")
	ad := &fakeAttachDaemon{detached: make(chan struct{})}
	serveAt(t, sock, ad.serve)
	attachEnv := append(env[:len(env):len(env)], "DLGT_SOCKET="+sock)
	r := runOnSilentPTY(t, bin, attachEnv, []string{"session", "attach", "claude:x"}, 3*bound,
		func(out string) bool { return strings.Contains(out, "PAINTED") }, func(m *os.File) { m.Write([]byte{0x1d}) })
	t.Logf("dlgt session attach: repainted after %v", r.elapsed.Round(time.Millisecond))
	if r.elapsed > bound {
		t.Errorf("dlgt session attach repainted the Session after %v on a terminal that never answers", r.elapsed)
	}
	if r.err != nil || !strings.Contains(r.out, `"end":"detached"`) {
		t.Errorf("dlgt session attach: %v; it wrote %q", r.err, r.out)
	}
	for _, q := range terminalQueries {
		if strings.Contains(r.out, q) {
			t.Errorf("dlgt session attach wrote the terminal query %q: %q", q, r.out)
		}
	}
	// dlgt ui may ask the terminal (the keyboard protocols it supports),
	// but waits on no answer either: its first screen comes at once, and
	// q quits.
	r = runOnSilentPTY(t, bin, env, []string{"ui"}, 3*bound,
		func(out string) bool { return strings.Contains(out, "dlgt ui ·") }, func(m *os.File) { m.Write([]byte("q")) })
	t.Logf("dlgt ui: first screen after %v", r.elapsed.Round(time.Millisecond))
	if r.elapsed > bound || r.err != nil {
		t.Errorf("dlgt ui drew its first screen after %v on a terminal that never answers (exit %v)", r.elapsed, r.err)
	}
}
