package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// fakeBinary writes a script standing in for a harness binary.
func fakeBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho '9.9.9 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func invalidField(t *testing.T, err error, field string) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || re.Field != field {
		t.Fatalf("err = %v, want INVALID_ARGUMENT on %s", err, field)
	}
}

// An unknown name is refused with the names there are, by Get, model.list
// and harness.list alike.
func TestUnknownHarness(t *testing.T) {
	c := New(map[string]harness.Harness{"codex": harness.Codex{}, "claude": harness.Claude{}}, nil)
	if got := strings.Join(c.Names(), ","); got != "claude,codex" {
		t.Fatalf("names %q, want sorted", got)
	}
	_, err := c.Get("nope")
	invalidField(t, err, "harness")
	if !strings.Contains(err.Error(), "have claude, codex") {
		t.Fatalf("the refusal does not list the harnesses: %v", err)
	}
	_, err = c.Models(context.Background(), rpc.Peer{}, rpc.ModelListParams{Harness: strings.Repeat("x", 500)})
	invalidField(t, err, "harness")
	if len(err.Error()) > 300 {
		t.Fatalf("a long name is quoted back whole: %d bytes", len(err.Error()))
	}
	_, err = c.List(context.Background(), rpc.Peer{}, rpc.HarnessListParams{Harness: "nope"})
	invalidField(t, err, "harness")
	if h, ok := c.Lookup("claude"); !ok || h.Info().Name != "claude" {
		t.Fatalf("lookup claude: %v %v", h, ok)
	}
}

// harness.list locates a binary in the caller's environment when it sent
// one, else with the daemon's defaults, and reports its version.
func TestList(t *testing.T) {
	bin := fakeBinary(t)
	c := New(map[string]harness.Harness{"claude": harness.Claude{}}, map[string]string{"DLGT_CLAUDE_BIN": bin})
	res, err := c.List(context.Background(), rpc.Peer{}, rpc.HarnessListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Environment != rpc.HarnessEnvDaemon || len(res.Harnesses) != 1 || !res.Harnesses[0].Available || res.Harnesses[0].Binary != bin || res.Harnesses[0].Version != "9.9.9" {
		t.Fatalf("daemon defaults: %+v", res)
	}
	other := fakeBinary(t)
	res, err = c.List(context.Background(), rpc.Peer{}, rpc.HarnessListParams{Environment: map[string]string{"DLGT_CLAUDE_BIN": other, "PATH": "/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Environment != rpc.HarnessEnvCaller || res.Harnesses[0].Binary != other {
		t.Fatalf("caller environment: %+v", res)
	}
	if env := c.DefaultEnv(); env["DLGT_CLAUDE_BIN"] != bin || env["PATH"] != os.Getenv("PATH") {
		t.Fatalf("default env %v", env)
	}
	if ms, err := c.Models(context.Background(), rpc.Peer{}, rpc.ModelListParams{Harness: "claude"}); err != nil || len(ms.Models) == 0 {
		t.Fatalf("model.list claude: %+v %v", ms, err)
	}
}
