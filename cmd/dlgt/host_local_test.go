package main

import (
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// "local" names this machine wherever a host is given (--host, DLGT_HOST,
// as in --hosts): the command reaches this machine's daemon and runs no
// ssh (here a DLGT_SSH_COMMAND that would fail loudly).
func TestHostLocalIsThisMachine(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{}})
	for _, args := range [][]string{{"--host", "local", "session", "list"}, {"session", "list"}} {
		e, out, _ := cliEnv(t, d, map[string]string{"DLGT_HOST": "local", "DLGT_SSH_COMMAND": "echo ssh was run >&2; exit 255;"}, nil, "")
		if code, stdout := runCLI(t, e, out, args...); code != cli.ExitOK || !strings.HasPrefix(stdout, `{"ok":true,"sessions":[]`) {
			t.Fatalf("%v: exit %d: %s", args, code, stdout)
		}
	}
}
