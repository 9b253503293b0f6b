package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
)

// build builds dlgt and dlgtc as README.md does, into one directory
// (dlgtc then finds dlgt beside it), and dlgtc alone into another (it
// then has no dlgt to hand anything to).
func build(t *testing.T) (both, alone string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	both, alone = t.TempDir(), t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(both, "dlgt"), "../dlgt"},
		{filepath.Join(both, "dlgtc"), "."},
		{filepath.Join(alone, "dlgtc"), "."},
	} {
		cmd := exec.Command("go", "build", "-tags", "netgo,osusergo", "-o", b.out, b.pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return both, alone
}

type result struct {
	stdout, stderr []byte
	code           int
}

func runBin(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return result{out.Bytes(), errb.Bytes(), code}
}

func same(t *testing.T, what string, a, b result) {
	t.Helper()
	if a.code != b.code || !bytes.Equal(a.stdout, b.stdout) || !bytes.Equal(a.stderr, b.stderr) {
		t.Errorf("%s differs:\ndlgt  exit %d stdout %q stderr %q\ndlgtc exit %d stdout %q stderr %q",
			what, a.code, a.stdout, a.stderr, b.code, b.stdout, b.stderr)
	}
}

// TestSameBytesAsDlgt: against one daemon, dlgtc prints what dlgt prints,
// byte for byte on stdout and stderr, with the same exit status, for the
// socket-only commands (run by dlgtc itself: the copy with no dlgt to
// hand them to gives the same bytes), and for every other command line
// (handed to the dlgt beside it).
func TestSameBytesAsDlgt(t *testing.T) {
	both, alone := build(t)
	home := testkit.ShortDir(t)
	testkit.StartDaemon(t, home)
	env := []string{"DLGT_HOME=" + home, "DLGT_NO_AUTOSTART=1", "HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "COLUMNS=100"}
	dlgt, dlgtc, lone := filepath.Join(both, "dlgt"), filepath.Join(both, "dlgtc"), filepath.Join(alone, "dlgtc")

	own := [][]string{
		{"--version"},
		{"version"},
		{"version", "-o", "text"},
		{"version", "--pretty"},
		{"session", "list"},
		{"session", "list", "--all", "-o", "text"},
		{"session", "list", "extra"},
		{"session", "list", "--bogus"},
		{"session", "list", "-o", "yaml"},
		{"session", "read", "nosuch"},
		{"session", "read", "nosuch", "-o", "text"},
		{"session", "fetch", "nosuch"},
		{"session", "fetch", "nosuch", "--wait", "-1s"},
		{"session", "send", "nosuch", "--request-id", "r1", "--", "hello"},
		{"session", "send", "nosuch", "--", "hello"},
		{"session", "cancel", "nosuch"},
		{"session", "stop", "nosuch"},
		{"session", "respond", "nosuch"},
		{"session", "results", "nosuch"},
		{"session", "create", "--request-id", "r2"},
		{"session", "create", "--help"},
		{"session", "fetch", "--help"},
		{"harnesses"},
		{"profiles"},
		{"events", "--help"},
		{"--host", "bad host!", "session", "list"},
	}
	for _, args := range own {
		want := runBin(t, dlgt, env, args...)
		same(t, "beside dlgt: "+quoteArgs(args), want, runBin(t, dlgtc, env, args...))
		same(t, "alone: "+quoteArgs(args), want, runBin(t, lone, env, args...))
	}

	handed := [][]string{
		{},
		{"--help"},
		{"session", "--help"},
		{"help", "session", "list"},
		{"daemon", "status", "--help"},
		{"skill"},
		{"nosuch"},
	}
	for _, args := range handed {
		same(t, "handed to dlgt: "+quoteArgs(args), runBin(t, dlgt, env, args...), runBin(t, dlgtc, env, args...))
		// Alone, dlgtc says it needs the full dlgt.
		if r := runBin(t, lone, env, args...); r.code != 1 || !bytes.Contains(r.stdout, []byte(`needs the full dlgt`)) {
			t.Errorf("alone %q: exit %d stdout %q", args, r.code, r.stdout)
		}
	}
}

func quoteArgs(args []string) string {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
