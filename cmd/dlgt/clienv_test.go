package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
)

// cliEnv builds an env pointed at the fake daemon with a fixed client
// environment.
func cliEnv(t *testing.T, d *testkit.FakeDaemon, vars map[string]string, environ []string, stdin string) (*env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	if vars == nil {
		vars = map[string]string{}
	}
	vars["DLGT_SOCKET"] = d.Socket
	if _, ok := vars["DLGT_PROFILES"]; !ok {
		vars["DLGT_PROFILES"] = filepath.Join(t.TempDir(), "none.toml")
	}
	e, out, errb := testEnv(t, vars, stdin)
	e.Environ = func() []string { return environ }
	return e, out, errb
}

// runCLI runs args and returns the exit status and stdout.
func runCLI(t *testing.T, e *env, out *bytes.Buffer, args ...string) (int, string) {
	t.Helper()
	code := run(args, e)
	return code, out.String()
}

// oneJSONLine checks that s is exactly one compact JSON object line and
// returns it decoded.
func oneJSONLine(t *testing.T, s string) map[string]any {
	t.Helper()
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Fatalf("stdout %q is not exactly one line", s)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("stdout %q: %v", s, err)
	}
	return m
}

// lineWriter is a goroutine-safe buffer that signals when n lines arrived.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	n    int
	done chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.done != nil && bytes.Count(w.buf.Bytes(), []byte("\n")) >= w.n {
		close(w.done)
		w.done = nil
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
