package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramOutsideTheModule builds examples/delegate, a module of its
// own that requires this one (through a replace directive), and runs it
// as a user would: on PATH a dlgt built from this checkout, which the
// client autostarts, and the fake Claude Code as the harness. It prints
// the agent's final text and exits 0.
func TestProgramOutsideTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	dir := shortDir(t)
	bin := filepath.Join(dir, "bin")
	goBuild(t, "../cmd/dlgt", filepath.Join(bin, "dlgt"))
	goBuild(t, "../examples/delegate", filepath.Join(bin, "delegate"))

	environ := fakeClaudeEnviron(filepath.Join(dir, "fake"))
	for i, kv := range environ {
		if strings.HasPrefix(kv, "PATH=") {
			environ[i] = "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
		}
	}
	home := filepath.Join(dir, "state")
	cmd := exec.Command(filepath.Join(bin, "delegate"), "-wait", "1m",
		"[[reply The tests pass.]] Run the tests.")
	cmd.Dir = dir
	cmd.Env = append(environ, "DLGT_HOME="+home)
	out, err := cmd.Output()
	t.Cleanup(func() { // the daemon it started
		stop := exec.Command(filepath.Join(bin, "dlgt"), "daemon", "stop")
		stop.Env = cmd.Env
		stop.Run()
	})
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		logs, _ := filepath.Glob(filepath.Join(home, "run", "*", "daemon.log"))
		var log []byte
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			log = append(log, b...)
		}
		t.Fatalf("delegate: %v\nstdout: %s\nstderr: %s\ndaemon.log: %s", err, out, stderr, log)
	}
	if got := string(out); got != "The tests pass.\n" {
		t.Fatalf("delegate printed %q, want the agent's final text", got)
	}
}

// goBuild builds the main package in dir (relative to this package) to out.
func goBuild(t *testing.T, dir, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, b)
	}
}
