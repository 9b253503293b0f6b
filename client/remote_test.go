package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A real OpenSSH server on 127.0.0.1 (a free port, throwaway keys, nothing
// of the system's ssh setup touched) runs the built dlgt as "the other
// machine", whose claude is the fake. Skipped when sshd is not installed.

const sshdPath = "/usr/sbin/sshd"

type sshRig struct {
	dir    string
	host   string // user@127.0.0.1:port
	sshCmd string // DLGT_SSH_COMMAND
	remote string // the remote side's DLGT_HOME
	dlgt   string
	pid    int
}

func newSSHRig(t *testing.T) *sshRig {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		t.Skip("sshd is not installed (Debian openssh-server)")
	}
	for _, tool := range []string{"ssh", "ssh-keygen", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := shortDir(t)
	r := &sshRig{dir: dir, remote: filepath.Join(dir, "remote"), dlgt: filepath.Join(dir, "bin", "dlgt")}
	if out, err := exec.Command("go", "build", "-o", r.dlgt, "github.com/dlgt-dev/dlgt/cmd/dlgt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, key := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "user.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	remoteEnv := environMapOf(fakeClaudeEnviron(filepath.Join(dir, "fake")))
	remoteEnv["DLGT_HOME"] = r.remote
	remoteEnv["PATH"] = filepath.Dir(r.dlgt) + ":/usr/local/bin:/usr/bin:/bin"
	var setenv []string
	for k, v := range remoteEnv {
		setenv = append(setenv, strconv.Quote(k+"="+v))
	}
	sort.Strings(setenv)
	port := freePort(t)
	config := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile %s\nSetEnv %s\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"), strings.Join(setenv, " "))
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600)
	os.MkdirAll("/run/sshd", 0o755)
	if out, err := exec.Command(sshdPath, "-f", filepath.Join(dir, "sshd_config"), "-E", filepath.Join(dir, "sshd.log")).CombinedOutput(); err != nil {
		t.Fatalf("sshd: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(10 * time.Second); r.pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			t.Fatalf("sshd did not come up:\n%s", log)
		}
		b, err := os.ReadFile(filepath.Join(dir, "sshd.pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				r.pid = pid
			}
		}
	}
	r.host = fmt.Sprintf("%s@127.0.0.1:%d", u.Username, port)
	r.sshCmd = fmt.Sprintf("ssh -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR", filepath.Join(dir, "user"))
	t.Cleanup(func() {
		// The remote daemon first (through ssh, as a user would), then
		// sshd and every connection it still serves.
		cmd := exec.Command(r.dlgt, "daemon", "stop")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DLGT_HOME=" + filepath.Join(dir, "local"), "DLGT_HOST=" + r.host, "DLGT_SSH_COMMAND=" + r.sshCmd}
		cmd.Run()
		for _, pid := range descendants(r.pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(r.pid, syscall.SIGKILL)
	})
	return r
}

func environMapOf(entries []string) map[string]string {
	m := map[string]string{}
	for _, kv := range entries {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// descendants lists the processes below pid (from /proc).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 {
				parent[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
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
		{"unreachable", "127.0.0.1:" + strconv.Itoa(freePort(t)), vars, []string{"ssh failed", "onnection refused"}},
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
