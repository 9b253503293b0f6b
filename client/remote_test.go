package client_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit/sshd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A real OpenSSH server on 127.0.0.1 (a free port, throwaway keys, nothing
// of the system's ssh setup touched) runs the built dlgt as "the other
// machine", whose claude is the fake. Skipped when sshd is not installed.

type sshRig struct {
	dir    string
	host   string // user@127.0.0.1:port
	sshCmd string // DLGT_SSH_COMMAND
	remote string // the remote side's DLGT_HOME
	dlgt   string
}

func newSSHRig(t *testing.T) *sshRig {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	dir := shortDir(t)
	r := &sshRig{dir: dir, remote: filepath.Join(dir, "remote"), dlgt: filepath.Join(dir, "bin", "dlgt")}
	remoteEnv := testkit.FakeClaudeEnv(filepath.Join(dir, "fake"))
	remoteEnv["DLGT_HOME"] = r.remote
	remoteEnv["PATH"] = filepath.Dir(r.dlgt) + ":/usr/local/bin:/usr/bin:/bin"
	srv := sshd.Start(t, dir, remoteEnv)
	if out, err := exec.Command("go", "build", "-o", r.dlgt, "github.com/dlgt-dev/dlgt/cmd/dlgt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r.host, r.sshCmd = srv.Host, srv.SSHCommand
	t.Cleanup(func() {
		// The remote daemon first (through ssh, as a user would), then
		// sshd (its own cleanup) and every connection it still serves.
		cmd := exec.Command(r.dlgt, "daemon", "stop")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DLGT_HOME=" + filepath.Join(dir, "local"), "DLGT_HOST=" + r.host, "DLGT_SSH_COMMAND=" + r.sshCmd}
		cmd.Run()
	})
	return r
}

// A profile with a host launches there: the Session is created by the
// remote daemon (in its state directory, in its working directory, with
// its environment), waited for through the same Client, and nothing runs
// here. Failures of the transport are RPC_UNAVAILABLE naming the host.
func TestRemoteLaunchOverSSH(t *testing.T) {
	r := newSSHRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	local := filepath.Join(r.dir, "local")
	writeProfiles(t, local, "[profiles.far]\nharness = \"claude\"\nhost = \""+r.host+"\"\n[profiles.far.environment]\nFAR = \"1\"\n")
	vars := map[string]string{"DLGT_SSH_COMMAND": r.sshCmd}
	c := newClient(t, client.Options{Home: local, NoAutostart: true, Getenv: env(vars), Environ: environ(map[string]string{"PATH": os.Getenv("PATH"), "HOME": r.dir})})
	l, err := c.ResolveLaunch(client.LaunchSpec{Profile: "far", Title: "far", RequestID: "far-1", Prompt: "[[reply hello from afar]] go"})
	if err != nil || l.Host != r.host {
		t.Fatalf("launch: %+v %v", l, err)
	}
	rc, err := c.Launch(ctx, l)
	if err != nil {
		t.Fatalf("remote create: %v", err)
	}
	far, err := c.WithHost(l.Host)
	if err != nil {
		t.Fatal(err)
	}
	w, err := far.WaitResult(ctx, rc.Session.ID, rc.Cursor, time.Minute)
	if err != nil || w.Status != rpc.StatusCompleted || len(w.Results) != 1 || *w.Results[0].FinalText != "hello from afar" {
		t.Fatalf("remote wait: %+v %v", w, err)
	}
	read, err := far.SessionRead(ctx, rpc.SessionReadParams{Session: rc.Session.ID})
	if err != nil || read.Session.Cwd == "" || strings.HasPrefix(read.Session.Cwd, local) {
		t.Fatalf("remote read: %+v %v", read, err)
	}
	if _, err := os.Stat(filepath.Join(r.remote, "run")); err != nil {
		t.Errorf("the remote state directory has no run directory: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(local, "run")); len(ents) != 0 {
		t.Errorf("a local daemon was started: %v", ents)
	}
	if _, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: rc.Session.ID}); !errors.Is(err, rpc.ErrRPCUnavailable) {
		t.Errorf("the Session is reachable here: %v", err)
	}

	for _, tc := range []struct {
		name  string
		host  string
		vars  map[string]string
		wants []string
	}{
		{"unreachable", "127.0.0.1:" + strconv.Itoa(sshd.FreePort(t)), vars, []string{"ssh failed", "onnection refused"}},
		{"no remote dlgt", r.host, map[string]string{"DLGT_SSH_COMMAND": r.sshCmd, "DLGT_REMOTE_BIN": "/nonexistent/dlgt"}, []string{"not found"}},
		{"not dlgt", r.host, map[string]string{"DLGT_SSH_COMMAND": r.sshCmd, "DLGT_REMOTE_BIN": "/bin/echo"}, []string{"did not greet with a hello"}},
	} {
		bad := newClient(t, client.Options{Host: tc.host, Getenv: env(tc.vars), Environ: environ(map[string]string{"PATH": os.Getenv("PATH"), "HOME": r.dir})})
		_, err := bad.SessionList(ctx, rpc.SessionListParams{})
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeRPCUnavailable || !strings.Contains(re.Message, "127.0.0.1") {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(re.Message, w) {
				t.Errorf("%s: message lacks %q: %s", tc.name, w, re.Message)
			}
		}
	}
}
