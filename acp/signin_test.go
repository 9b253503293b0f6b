package acp_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A harness that is not signed in fails session/new, not the first
// prompt, with the hint the CLI gives: Gemini CLI on a fresh HOME (the
// daemon tells it from Gemini's settings before anything starts).
func TestNewSessionNotSignedIn(t *testing.T) {
	bin := pinned(t, "DLGT_GEMINI_BIN", "gemini", "node_modules", ".bin", "gemini")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH (Gemini CLI is a Node script)")
	}
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "DLGT_GEMINI_BIN": bin, "TERM": "xterm-256color"}
	w := newWorldEnv(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 60e9)
	defer cancel()
	// The CLI's answer to the same launch.
	_, cliErr := w.c.SessionCreate(ctx, rpc.SessionCreateParams{Title: "t", Harness: "gemini", Cwd: w.cwd, Prompt: "hello", RequestID: "cli-signin", Environment: env})
	if !strings.Contains(errText(cliErr), "Gemini CLI is not signed in") {
		t.Fatalf("the CLI's create: %v", cliErr)
	}
	e := w.connect(client.LaunchSpec{Harness: "gemini"})
	e.initialize(ctx)
	_, err := e.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: w.cwd, McpServers: []sdk.McpServer{}})
	if err == nil {
		t.Fatal("session/new succeeded for a Gemini CLI that is not signed in")
	}
	var re *sdk.RequestError
	hint := rpc.AsError(cliErr).Message
	if !errors.As(err, &re) || re.Message != hint {
		t.Errorf("session/new: %v, want the CLI's hint %q", err, hint)
	}
	list, _ := w.c.SessionList(ctx, rpc.SessionListParams{All: true})
	if len(list.Sessions) != 0 {
		t.Errorf("sessions after the failed session/new: %+v", list.Sessions)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
