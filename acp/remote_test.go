package acp_test

import (
	"context"
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

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// `dlgt acp --host` over a real sshd on 127.0.0.1: the built dlgt is "the
// other machine" (its own state directory and environment, the fake
// Claude Code), and the editor's Session is created, answered, listed and
// loaded there. Skipped only when sshd is not installed (.ci/run installs
// it).
func TestOverSSH(t *testing.T) {
	const sshd = "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Skip("sshd is not installed (Debian openssh-server)")
	}
	for _, tool := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dla-ssh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "bin")
	for _, pkg := range []string{"dlgt", "dlgt-hook"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "github.com/dlgt-dev/dlgt/cmd/"+pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	for _, key := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "user.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	exe, _ := os.Executable()
	fake := filepath.Join(dir, "claude")
	os.WriteFile(fake, []byte(fmt.Sprintf("#!/bin/sh\nDLGT_TEST_ROLE=claude exec %q \"$@\"\n", exe)), 0o755)
	remoteHome := filepath.Join(dir, "ruser")
	os.MkdirAll(remoteHome, 0o700)
	remote := map[string]string{
		"DLGT_HOME": filepath.Join(dir, "remote"), "PATH": bin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME": remoteHome, "DLGT_CLAUDE_BIN": fake,
		"FAKECLAUDE_STARTUP_MS": "20", "FAKECLAUDE_IDLE_MS": "300", "GORACE": "atexit_sleep_ms=0",
	}
	keys := make([]string, 0, len(remote))
	for k := range remote {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var setenv []string
	for _, k := range keys {
		setenv = append(setenv, strconv.Quote(k+"="+remote[k]))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pidFile := filepath.Join(dir, "sshd.pid")
	config := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile %s\nSetEnv %s\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), pidFile, strings.Join(setenv, " "))
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600)
	os.MkdirAll("/run/sshd", 0o755)
	if out, err := exec.Command(sshd, "-f", filepath.Join(dir, "sshd_config"), "-E", filepath.Join(dir, "sshd.log")).CombinedOutput(); err != nil {
		t.Fatalf("sshd: %v\n%s", err, out)
	}
	pid := 0
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
		}
	}
	if pid == 0 {
		log, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
		t.Fatalf("sshd did not come up:\n%s", log)
	}
	host := fmt.Sprintf("%s@127.0.0.1:%d", u.Username, port)
	local := map[string]string{
		"DLGT_HOME":        filepath.Join(dir, "local"),
		"DLGT_SSH_COMMAND": "ssh -i " + filepath.Join(dir, "user") + " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
	}
	t.Cleanup(func() {
		// The remote daemon first, through ssh as a user would, then sshd
		// (its group: the connections it still serves).
		cmd := exec.Command(filepath.Join(bin, "dlgt"), "--host", host, "daemon", "stop")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DLGT_HOME=" + local["DLGT_HOME"], "DLGT_SSH_COMMAND=" + local["DLGT_SSH_COMMAND"]}
		cmd.Run()
		syscall.Kill(pid, syscall.SIGTERM)
	})
	c, err := client.New(client.Options{Getenv: func(k string) string { return local[k] }, Environ: func() []string { return []string{"HOME=" + dir} }, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := &world{t: t, c: c, cwd: filepath.Join(dir, "work")}
	os.MkdirAll(w.cwd, 0o700)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	e := w.connectWith(acp.Options{Launch: client.LaunchSpec{Harness: "claude"}, Version: "test"})
	e.initialize(ctx)
	id := e.newSession(ctx, w.cwd)
	r, err := e.prompt(ctx, id, "[[reply over ssh]]")
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt over ssh: %+v, %v", r, err)
	}
	if got := e.agentText(id); got != "over ssh" {
		t.Errorf("answer %q", got)
	}
	// The Session is the host's.
	rd, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil || rd.Session.Alias != string(id) {
		t.Fatalf("session.read on the host: %+v, %v", rd.Session, err)
	}
	lst, err := e.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cwd: &w.cwd})
	if err != nil || len(lst.Sessions) != 1 || lst.Sessions[0].SessionId != id {
		t.Errorf("session/list over ssh: %+v, %v", lst, err)
	}
	e.quit()
	e2 := w.connectWith(acp.Options{Launch: client.LaunchSpec{Harness: "claude"}, Version: "test"})
	e2.initialize(ctx)
	if _, err := e2.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: w.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load over ssh: %v", err)
	}
	if got := e2.agentText(id); got != "over ssh" {
		t.Errorf("replayed %q", got)
	}
	if _, err := e2.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Errorf("session/close over ssh: %v", err)
	}
}
