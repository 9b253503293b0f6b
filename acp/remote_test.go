package acp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit/sshd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// `dlgt acp --host` over a real sshd on 127.0.0.1: the built dlgt is "the
// other machine" (its own state directory and environment, the fake
// Claude Code), and the editor's Session is created, answered, listed and
// loaded there. Skipped only when sshd is not installed (.ci/run installs
// it).
func TestOverSSH(t *testing.T) {
	dir := testkit.ShortDir(t)
	bin := filepath.Join(dir, "bin")
	remote := testkit.FakeClaudeEnv(filepath.Join(dir, "fake"))
	remote["DLGT_HOME"] = filepath.Join(dir, "remote")
	remote["PATH"] = bin + ":/usr/local/bin:/usr/bin:/bin"
	srv := sshd.Start(t, dir, remote)
	for _, pkg := range []string{"dlgt", "dlgt-hook"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "github.com/dlgt-dev/dlgt/cmd/"+pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	host := srv.Host
	local := map[string]string{"DLGT_HOME": filepath.Join(dir, "local"), "DLGT_SSH_COMMAND": srv.SSHCommand}
	t.Cleanup(func() {
		// The remote daemon first, through ssh as a user would, then sshd
		// (its own cleanup).
		cmd := exec.Command(filepath.Join(bin, "dlgt"), "--host", host, "daemon", "stop")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DLGT_HOME=" + local["DLGT_HOME"], "DLGT_SSH_COMMAND=" + local["DLGT_SSH_COMMAND"]}
		cmd.Run()
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
