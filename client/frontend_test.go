package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Call passes the daemon's answer through byte for byte (members this
// client does not know included) and routes by the Session it names, as
// the typed methods do.
func TestCallKeepsTheAnswerAsIs(t *testing.T) {
	home := shortDir(t)
	serveAt(t, filepath.Join(home, "run", statedir.Version, "dlgt.sock"), func(_ context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		if req.Method != "x.future" {
			return nil, rpc.Errorf(rpc.CodeNotFound, "no %s", req.Method)
		}
		return json.RawMessage(`{"b":1,"a":{"new_member":[true]}}`), nil
	})
	c := newClient(t, client.Options{Home: home, NoAutostart: true})
	var raw json.RawMessage
	if err := c.Call(context.Background(), "x.future", "", struct{}{}, &raw); err != nil || string(raw) != `{"b":1,"a":{"new_member":[true]}}` {
		t.Fatalf("Call = %s, %v", raw, err)
	}
	err := c.Call(context.Background(), "x.other", "", struct{}{}, nil)
	wantCode(t, err, rpc.CodeNotFound, "no x.other")
}

// ProbeDaemon tells the three answers of a socket apart without ever
// starting a daemon: nothing there (ENOENT), something that is not a dlgt
// daemon (its error), and a daemon (its status).
func TestProbeDaemon(t *testing.T) {
	ctx := context.Background()
	home := shortDir(t)
	c := newClient(t, client.Options{Home: home, DaemonExe: "/nonexistent/dlgt"})
	pr, err := c.ProbeDaemon(ctx)
	sock := filepath.Join(home, "run", statedir.Version, "dlgt.sock")
	if err != nil || pr.Socket != sock || !errors.Is(pr.DialErr, syscall.ENOENT) || pr.Status != nil {
		t.Fatalf("no daemon: %+v %v", pr, err)
	}
	wantCode(t, pr.DialErr, rpc.CodeRPCUnavailable, "daemon socket "+sock)

	serveAt(t, sock, func(context.Context, rpc.Peer, *rpc.Request) (any, error) {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "not a dlgt daemon")
	})
	pr, err = c.ProbeDaemon(ctx)
	if err != nil || pr.DialErr != nil || pr.Status != nil || pr.StatusErr == nil || !strings.Contains(pr.StatusErr.Error(), "not a dlgt daemon") {
		t.Fatalf("a stranger: %+v %v", pr, err)
	}

	home2 := shortDir(t)
	startDaemon(t, home2)
	c2 := newClient(t, client.Options{Home: home2})
	pr, err = c2.ProbeDaemon(ctx)
	if err != nil || pr.DialErr != nil || pr.StatusErr != nil || pr.Status == nil || pr.Status.Version != statedir.Version {
		t.Fatalf("a daemon: %+v %v", pr, err)
	}
}

// The profiles file and launches know the harnesses of Options.Harnesses
// (the registry by default); HarnessOptional leaves a missing harness to
// the caller.
func TestHarnessesOfTheClient(t *testing.T) {
	home := t.TempDir()
	writeProfiles(t, home, "[profiles.f]\nharness = \"fake\"\n")
	c := newClient(t, client.Options{Home: home})
	_, err := c.LoadProfiles()
	wantCode(t, err, rpc.CodeInvalidArgument, `profile "f": harness must be claude, codex, gemini or copilot`)
	_, err = c.ResolveLaunch(client.LaunchSpec{Cwd: "/w"})
	wantCode(t, err, rpc.CodeInvalidArgument, "harness: is required (claude, codex, gemini or copilot) unless the profile sets it")

	fake := harness.All()[0]
	fake.Name = "fake"
	reg := append(harness.All(), fake)
	c = newClient(t, client.Options{Home: home, Harnesses: reg})
	ps, err := c.LoadProfiles()
	if err != nil || ps["f"].Harness != "fake" {
		t.Fatalf("with fake registered: %v %v", ps, err)
	}
	_, err = c.ResolveLaunch(client.LaunchSpec{Cwd: "/w"})
	wantCode(t, err, rpc.CodeInvalidArgument, "(claude, codex, gemini, copilot or fake)")
	l, err := c.ResolveLaunch(client.LaunchSpec{Cwd: "/w", HarnessOptional: true})
	if err != nil || l.Params.Harness != "" || l.Params.Cwd != "/w" {
		t.Fatalf("HarnessOptional: %+v %v", l, err)
	}
	if l, err := c.ResolveLaunch(client.LaunchSpec{Profile: "f", Cwd: "/w"}); err != nil || l.Params.Harness != "fake" {
		t.Fatalf("profile harness: %+v %v", l, err)
	}
}

// SessionLists asks every host, keeps each answer as sent, and reports an
// unreachable host beside the others; a malformed host asks none.
func TestSessionLists(t *testing.T) {
	home := shortDir(t)
	serveAt(t, filepath.Join(home, "run", statedir.Version, "dlgt.sock"), func(_ context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		return json.RawMessage(`{"sessions":[{"id":"claude:1","future":1}]}`), nil
	})
	vars := map[string]string{"DLGT_HOME": home, "DLGT_SSH_COMMAND": "exit 255;", "DLGT_HOST": "elsewhere"}
	c := newClient(t, client.Options{Getenv: env(vars), NoAutostart: true, Host: "local"})
	got, err := c.SessionLists(context.Background(), []string{"devbox", "local"}, rpc.SessionListParams{All: true})
	if err != nil || len(got) != 2 {
		t.Fatalf("SessionLists = %v, %v", got, err)
	}
	if got[0].Host != "devbox" || got[0].Err == nil || got[0].Err.Code != rpc.CodeRPCUnavailable || !strings.Contains(got[0].Err.Message, "host devbox") {
		t.Errorf("unreachable host: %+v", got[0])
	}
	if got[1].Host != "local" || got[1].Err != nil || len(got[1].Sessions) != 1 || string(got[1].Sessions[0]) != `{"id":"claude:1","future":1}` {
		t.Errorf("local: %+v", got[1])
	}
	_, err = c.SessionLists(context.Background(), []string{"local", ""}, rpc.SessionListParams{})
	wantCode(t, err, rpc.CodeInvalidArgument, "host")
}
