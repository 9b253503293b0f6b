package main

import (
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// session send --steer reads the running execution_seq and names it in
// the steer; with none running it names the last one, so the daemon
// answers (a replay, or its typed refusal).
func TestSessionSendSteerFillsTheRunningExecution(t *testing.T) {
	for _, c := range []struct {
		name string
		read rpc.SessionReadResult
		want string
	}{
		{"running", rpc.SessionReadResult{Session: rpc.Session{ID: "claude:s1", State: rpc.StateBusy, ActiveExecution: 7}}, `"steer":{"execution_seq":7}`},
		{"ended", rpc.SessionReadResult{Session: rpc.Session{ID: "claude:s1", State: rpc.StateIdle}, Result: &rpc.Result{ExecutionSeq: 6}}, `"steer":{"execution_seq":6}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := testkit.NewFakeDaemon(t)
			d.Set(rpc.MethodSessionRead, c.read)
			d.Set(rpc.MethodSessionSend, rpc.Receipt{Session: c.read.Session, ExecutionSeq: 7, Cursor: "1", Submission: rpc.SubmissionConfirmed, Steered: true})
			e, out, _ := cliEnv(t, d, nil, nil, "")
			if code, _ := runCLI(t, e, out, "session", "send", "rev", "--steer", "--request-id", "r1", "--", "use", "v2"); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, out)
			}
			sent := d.Params(rpc.MethodSessionSend)
			if len(sent) != 1 || !strings.Contains(string(sent[0]), c.want) || !strings.Contains(string(sent[0]), `"session":"rev"`) || !strings.Contains(string(sent[0]), `"prompt":"use v2"`) {
				t.Fatalf("session.send params = %s, want %s", sent, c.want)
			}
		})
	}
}

func TestSessionSendSteerQueueUsage(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	for _, args := range [][]string{
		{"session", "send", "rev", "--steer", "--queue", "--request-id", "r1", "--", "x"},
		{"session", "send", "rev", "--queue", "--resume", "--request-id", "r1", "--", "x"},
	} {
		e, out, _ := cliEnv(t, d, nil, nil, "")
		if code, _ := runCLI(t, e, out, args...); code == cli.ExitOK {
			t.Fatalf("%v: exit 0", args)
		}
	}
	if d.Count() != 0 {
		t.Fatalf("a usage error reached the daemon (%d calls)", d.Count())
	}
}
