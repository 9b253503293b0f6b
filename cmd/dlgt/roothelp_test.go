package main

import (
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/internal/cli"
)

// dlgt --help describes the output as it is: the commands that do not
// print one JSON line are named, and no sentence claims that every command
// does.
func TestRootHelpNamesTheCommandsWithoutOneJSONLine(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	if code := run([]string{"--help"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	help := strings.Join(strings.Fields(out.String()), " ")
	if strings.Contains(help, "Every command prints one JSON line") {
		t.Fatalf("dlgt --help says every command prints one JSON line:\n%s", out)
	}
	for _, want := range []string{"Control commands print one JSON line", "events one JSON line per event",
		"transcript --raw", "skill the agent guide", "completion a shell script", "session list --watch", "rpc --stdio and mcp", "session attach"} {
		if !strings.Contains(help, want) {
			t.Errorf("dlgt --help lacks %q:\n%s", want, out)
		}
	}
}
