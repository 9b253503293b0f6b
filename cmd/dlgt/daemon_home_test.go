package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// A second `dlgt daemon` on a home whose daemon runs is refused with one
// INVALID_ARGUMENT line naming the running daemon's pid and the commands
// to see or stop it, the message said once.
func TestSecondDaemonRefused(t *testing.T) {
	vars := map[string]string{"DLGT_HOME": filepath.Join(shortDir(t), "state")}
	p, err := statedir.ResolvePaths(func(k string) string { return vars[k] }, statedir.Version)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{Paths: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func() { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon never became ready")
	}
	e, out, _ := testEnv(t, vars, "")
	if code := run([]string{"daemon"}, e); code != cli.ExitError {
		t.Fatalf("second daemon: exit %d, stdout %q", code, out)
	}
	var got struct {
		OK    bool       `json:"ok"`
		Error *rpc.Error `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("stdout %q is not one failure line: %v", out, err)
	}
	if got.OK || got.Error == nil || got.Error.Code != rpc.CodeInvalidArgument {
		t.Fatalf("stdout %q, want INVALID_ARGUMENT", out)
	}
	for _, want := range []string{fmt.Sprintf("(pid %d, socket %s) is already running", os.Getpid(), p.Socket), "`dlgt daemon status`", "`dlgt daemon stop`", p.DataDir} {
		if n := strings.Count(got.Error.Message, want); n != 1 {
			t.Errorf("message %q has %q %d times, want once", got.Error.Message, want, n)
		}
	}
}

// A relative DLGT_HOME would be a different state directory (and daemon)
// in every working directory: from two directories, the client, the
// daemon and a command that would start a daemon all refuse it with the
// same INVALID_ARGUMENT, and nothing is created.
func TestRelativeHomeRefused(t *testing.T) {
	for _, dir := range []string{t.TempDir(), t.TempDir()} {
		t.Chdir(dir)
		for _, args := range [][]string{{"daemon", "status"}, {"daemon"}, {"session", "list"}} {
			vars := map[string]string{"DLGT_HOME": "state"}
			e, out, _ := testEnv(t, vars, "")
			delete(vars, "DLGT_NO_AUTOSTART") // session list would start one
			if code := run(args, e); code != cli.ExitError {
				t.Fatalf("%s in %s: exit %d, stdout %q", args, dir, code, out)
			}
			var got struct {
				Error *rpc.Error `json:"error"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Error == nil {
				t.Fatalf("%s: stdout %q: %v", args, out, err)
			}
			if got.Error.Code != rpc.CodeInvalidArgument || got.Error.Field != "DLGT_HOME" ||
				!strings.Contains(got.Error.Message, `DLGT_HOME="state" is a relative path`) {
				t.Fatalf("%s: error %+v", args, got.Error)
			}
			if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
				t.Fatalf("%s created %s/state: %v", args, dir, err)
			}
		}
	}
}
