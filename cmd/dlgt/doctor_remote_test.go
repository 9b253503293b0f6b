package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/internal/cli"
)

// fakeSSH is a DLGT_SSH_COMMAND: run as ssh would be (options, the
// destination, the remote command), it records its arguments and runs
// script.
func fakeSSH(t *testing.T, script string) (cmd, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	return fakeBinary(t, dir, "ssh", `for a in "$@"; do printf '%s\n' "$a"; done >`+argsFile+"\n"+script), argsFile
}

func remoteDoctorEnv(t *testing.T, host, script string) (*env, *strings.Builder, string) {
	t.Helper()
	ssh, args := fakeSSH(t, script)
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	e, _, _ := testEnv(t, map[string]string{"DLGT_HOME": home, "DLGT_HOST": host, "DLGT_SSH_COMMAND": ssh, "PATH": filepath.Join(t.TempDir(), "empty")}, "")
	var out strings.Builder
	e.Stdout = &out
	return e, &out, args
}

// The fix hint of a remote that ssh cannot reach is a command ssh parses:
// with --host user@host:port, `ssh -p PORT user@host`, which is also how
// dlgt ran ssh; a --host that does not parse says how to write one.
func TestRemoteDoctorFixHintSSHLine(t *testing.T) {
	e, out, argsFile := remoteDoctorEnv(t, "me@devbox.invalid:2222", "echo 'ssh: connect to host devbox.invalid port 2222: Connection refused' >&2; exit 255")
	if code := run([]string{"doctor"}, e); code != cli.ExitError {
		t.Fatalf("exit %d: %s", code, out)
	}
	var doc doctorDoc
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	var remote *doctorCheck
	for i, c := range doc.Checks {
		if c.Name == "remote" {
			remote = &doc.Checks[i]
		}
	}
	if remote == nil || remote.OK || remote.Host != "me@devbox.invalid:2222" || !strings.Contains(remote.Detail, "Connection refused") {
		t.Fatalf("remote check %+v in %s", remote, out)
	}
	if !strings.Contains(remote.Fix, "`ssh -p 2222 me@devbox.invalid true`") || strings.Contains(remote.Fix, "devbox.invalid:2222") {
		t.Errorf("fix %q: want `ssh -p 2222 me@devbox.invalid true`", remote.Fix)
	}
	// The hint is the invocation dlgt made: -p 2222, then the destination.
	b, _ := os.ReadFile(argsFile)
	if args := "\n" + string(b); !strings.Contains(args, "\n-p\n2222\nme@devbox.invalid\n") {
		t.Errorf("ssh was run with:%s", args)
	}

	e, out, _ = remoteDoctorEnv(t, "devbox:99999", "exit 255")
	if code := run([]string{"doctor"}, e); code != cli.ExitError {
		t.Fatalf("exit %d: %s", code, out)
	}
	doc = doctorDoc{}
	json.Unmarshal([]byte(out.String()), &doc)
	for _, c := range doc.Checks {
		if c.Name == "remote" && (c.OK || !strings.Contains(c.Detail, "port") || !strings.Contains(c.Fix, "[user@]host[:port]") || strings.Contains(c.Fix, "ssh devbox")) {
			t.Errorf("a --host that does not parse: %+v", c)
		}
	}
}

// With --host, doctor -o text says which machine each check is about:
// both ends have checks named state_dir (and harness.*, daemon...).
func TestRemoteDoctorTextNamesTheMachine(t *testing.T) {
	hello := string(helloLine())
	report, _ := json.Marshal(doctorDoc{OK: false, Checks: []doctorCheck{
		{Name: "harness.claude", OK: true, Detail: "claude 1.0 at /remote/bin/claude"},
		{Name: "daemon", OK: true, Detail: "dlgt daemon answers"},
		{Name: "state_dir", OK: false, Detail: "/remote/home has mode 0755", Fix: "chmod 700 /remote/home"},
	}})
	script := `case "$*" in
*"'doctor'"*) printf '%s\n' '` + string(report) + `'; exit 1;;
*) printf '%s' '` + hello + `'; while read -r line; do :; done;;
esac`
	e, out, _ := remoteDoctorEnv(t, "me@devbox.invalid:2222", script)
	if code := run([]string{"doctor", "-o", "text"}, e); code != cli.ExitError {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	text := out.String()
	for _, want := range []string{
		"[ok]   harness.claude (this machine): ",
		"[ok]   state_dir (this machine): ",
		"[ok]   remote (on me@devbox.invalid:2222): ssh reaches a dlgt",
		"[ok]   harness.claude (on me@devbox.invalid:2222): claude 1.0 at /remote/bin/claude\n",
		"[ok]   daemon (on me@devbox.invalid:2222): dlgt daemon answers\n",
		"[FAIL] state_dir (on me@devbox.invalid:2222): /remote/home has mode 0755\n       fix: chmod 700 /remote/home\n",
		"1 of ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	// Every check line names its machine.
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, "[") && !strings.Contains(l, " (this machine): ") && !strings.Contains(l, " (on me@devbox.invalid:2222): ") {
			t.Errorf("line without its machine: %q", l)
		}
	}
	// The JSON report is unchanged: a check of the other end names its
	// host in "host".
	e, out, _ = remoteDoctorEnv(t, "me@devbox.invalid:2222", script)
	run([]string{"doctor"}, e)
	var doc doctorDoc
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	hosts := map[string]int{}
	for _, c := range doc.Checks {
		hosts[c.Host]++
		if strings.Contains(c.Name, "(") {
			t.Errorf("JSON name %q", c.Name)
		}
	}
	if hosts["me@devbox.invalid:2222"] != 4 || hosts[""] == 0 {
		t.Errorf("hosts %v in %s", hosts, out)
	}
}
