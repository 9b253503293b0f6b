package main

import (
	"bytes"
	"context"
	"encoding/json"
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

// testEnv is an env with a fixed environment and captured output. exe is
// empty and autostart disabled, so no command can start a daemon.
func testEnv(t testing.TB, vars map[string]string, stdin string) (*env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	if vars == nil {
		vars = map[string]string{}
	}
	if _, ok := vars["DLGT_HOME"]; !ok {
		vars["DLGT_HOME"] = t.TempDir()
	}
	vars["DLGT_NO_AUTOSTART"] = "1"
	var out, errb bytes.Buffer
	e := &env{
		Getenv:  func(k string) string { return vars[k] },
		Environ: func() []string { return nil },
		Stdin:   strings.NewReader(stdin),
		Stdout:  &out,
		Stderr:  &errb,
	}
	return e, &out, &errb
}

func TestVersion(t *testing.T) {
	e, out, errb := testEnv(t, nil, "")
	if code := run([]string{"version"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	want := `{"ok":true,"version":` + quote(statedir.Version) + `,"commit":` + quote(statedir.CommitID()) + "}\n"
	if out.String() != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	if errb.Len() != 0 {
		t.Fatalf("stderr %q", errb)
	}
}

func TestVersionText(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	if code := run([]string{"version", "-o", "text"}, e); code != cli.ExitOK || out.String() != "dlgt "+statedir.Version+" (commit "+statedir.CommitID()+")\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

func TestVersionPretty(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	if code := run([]string{"version", "--pretty"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		OK      bool   `json:"ok"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || !v.OK || v.Version != statedir.Version || !strings.Contains(out.String(), "\n  ") {
		t.Fatalf("pretty output %q (%v)", out, err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestProfilesCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.toml")
	data := "[profiles.review]\nharness = \"claude\"\n[profiles.review.environment]\nSECRET_TOKEN = \"hunter2\"\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	e, out, _ := testEnv(t, map[string]string{"DLGT_PROFILES": path}, "")
	if code := run([]string{"profiles"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	want := `{"ok":true,"profiles":[{"name":"review","harness":"claude","environment_keys":["SECRET_TOKEN"]}]}` + "\n"
	if out.String() != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}

	// A missing file is no profiles; a broken one is an ok:false failure.
	e, out, _ = testEnv(t, map[string]string{"DLGT_PROFILES": filepath.Join(t.TempDir(), "none.toml")}, "")
	if code := run([]string{"profiles"}, e); code != cli.ExitOK || out.String() != `{"ok":true,"profiles":[]}`+"\n" {
		t.Fatalf("missing file: exit %d %q", code, out)
	}
	os.WriteFile(path, []byte("[profiles.x]\nbogus = 1\n"), 0o600)
	e, out, _ = testEnv(t, map[string]string{"DLGT_PROFILES": path}, "")
	if code := run([]string{"profiles"}, e); code != cli.ExitError || !strings.HasPrefix(out.String(), `{"ok":false,"error":{"code":"INVALID_ARGUMENT"`) {
		t.Fatalf("broken file: exit %d %q", code, out)
	}
}

func TestRPCRequiresStdio(t *testing.T) {
	e, out, errb := testEnv(t, nil, `{"id":1,"method":"session.list"}`+"\n")
	if code := run([]string{"rpc"}, e); code != cli.ExitError {
		t.Fatalf("exit %d, want %d", code, cli.ExitError)
	}
	if !strings.Contains(errb.String(), "--stdio") {
		t.Fatalf("stderr %q does not mention --stdio", errb)
	}
	if out.Len() != 0 {
		t.Fatalf("stdout %q, want nothing (stdout carries protocol only)", out)
	}
}

func TestRPCStdioAgainstDaemon(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	vars := map[string]string{"DLGT_HOME": home, "DLGT_PROFILES": filepath.Join(t.TempDir(), "none.toml")}
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

	in := strings.Join([]string{
		`{"id":"a","method":"internal.daemon.status"}`,
		``,
		`{"id":"b","method":"profile.list"}`,
		`{"id":"c","method":"session.list","params":{"all":true}}`,
	}, "\n") + "\n"
	e, out, errb := testEnv(t, vars, in)
	if code := run([]string{"rpc", "--stdio"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	got := map[string]rpc.Response{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var r rpc.Response
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if strings.Contains(line, `"ok"`) {
			t.Fatalf("raw RPC output wraps in ok: %s", line)
		}
		got[string(r.ID)] = r
	}
	if len(got) != 3 {
		t.Fatalf("output %q, want three responses", out)
	}
	if r := got[`"a"`]; r.Error == nil || r.Error.Code != rpc.CodeInvalidArgument {
		t.Fatalf("internal method through the proxy: %+v", r)
	}
	if r := got[`"b"`]; r.Error != nil || string(r.Result) != `{"profiles":[]}` {
		t.Fatalf("profile.list: %s %+v", r.Result, r.Error)
	}
	if r := got[`"c"`]; r.Error != nil || string(r.Result) != `{"sessions":[]}` {
		t.Fatalf("session.list: %s %+v", r.Result, r.Error)
	}

	// Invalid JSON ends the proxy with exit status 1 after an error line.
	e, out, _ = testEnv(t, vars, `{"id":"x",`+"\n"+`{"id":"y","method":"session.list"}`+"\n")
	if code := run([]string{"rpc", "--stdio"}, e); code != cli.ExitError {
		t.Fatalf("invalid JSON: exit %d, want %d", code, cli.ExitError)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1 || !strings.Contains(out.String(), `"INVALID_ARGUMENT"`) {
		t.Fatalf("invalid JSON output %q, want one error line", out)
	}
}
