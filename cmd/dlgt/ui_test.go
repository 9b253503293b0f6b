package main

import (
	"testing"

	"github.com/dlgt-dev/dlgt/internal/cli"
)

// dlgt ui without a terminal is a JSON failure that dials nothing (the
// UI itself is tested through tmux in internal/ui).
func TestUINeedsTerminal(t *testing.T) {
	e, out, _ := testEnv(t, map[string]string{"DLGT_SOCKET": "/nonexistent/s"}, "")
	code := run([]string{"ui"}, e)
	want := `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"dlgt ui needs a terminal on stdin and stdout"}}` + "\n"
	if code != cli.ExitError || out.String() != want {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}
