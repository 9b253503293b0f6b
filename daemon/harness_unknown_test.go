package daemon

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// A stored Session whose harness the daemon does not know is failed on
// load with an error naming that harness and the known ones, and a resume
// or restart of it is refused, changing nothing: it is never run as
// another harness (it used to be run as Claude).
func TestUnknownStoredHarnessFailsSession(t *testing.T) {
	td := newTestDaemon(t, fakeClaudeEnv(t))
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(td.paths.DB), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(td.paths.DB, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []sessionRecord{
		{UID: "uidstopped", ID: "nosuch:stopped", ProviderID: "stopped", Title: "was stopped", Harness: "nosuch",
			Cwd: cwd, State: rpc.StateStopped, CreatedAtMS: 1, UpdatedAtMS: 1, Epoch: 1, Rows: 24, Cols: 80},
		{UID: "uidbusy", ID: "nosuch:busy", ProviderID: "busy", Title: "was busy", Harness: "nosuch",
			Cwd: cwd, State: rpc.StateBusy, CreatedAtMS: 2, UpdatedAtMS: 2, Epoch: 1, Rows: 24, Cols: 80,
			LastExecSeq: 1, ActiveExec: &execRecord{Seq: 1, StartedAtMS: 2}},
	} {
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PutSession(rec.UID, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	td.start()
	t.Cleanup(td.stop)

	const want = `unknown harness "nosuch" (known: claude, codex, copilot, gemini)`
	for _, id := range []string{"nosuch:stopped", "nosuch:busy"} {
		r := td.read(t, id)
		if r.Session.State != rpc.StateFailed {
			t.Fatalf("%s is %s after load, want failed", id, r.Session.State)
		}
		var reasons []string
		for _, e := range td.events(t, id) {
			if e.Type == rpc.EventSessionFailed {
				reasons = append(reasons, e.Reason)
			}
		}
		if len(reasons) != 1 || reasons[0] != "unknown_harness" {
			t.Fatalf("%s: session.failed reasons %v, want [unknown_harness]", id, reasons)
		}
	}
	// The execution the busy one had gets a result saying why.
	checkInterrupted(t, td.read(t, "nosuch:busy"), 1, "unknown_harness")
	if msg := td.read(t, "nosuch:busy").Result.Error.Message; !strings.Contains(msg, want) {
		t.Fatalf("result error %q does not say %q", msg, want)
	}

	before := len(td.events(t, "nosuch:stopped"))
	for name, call := range map[string]func() error{
		"resume": func() error {
			return td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: "nosuch:stopped", Prompt: "hi",
				RequestID: "r1", Resume: true, Environment: td.env}, nil)
		},
		"restart": func() error {
			return td.call(rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: "nosuch:stopped", Environment: td.env}, nil)
		},
	} {
		err := call()
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeSessionUnavailable || !strings.Contains(re.Message, want) || re.SessionID != "nosuch:stopped" {
			t.Fatalf("%s of a Session with an unknown harness: %v, want SESSION_UNAVAILABLE saying %q", name, err, want)
		}
	}
	if r := td.read(t, "nosuch:stopped"); r.Session.State != rpc.StateFailed {
		t.Fatalf("after refused relaunches the Session is %s", r.Session.State)
	}
	if after := len(td.events(t, "nosuch:stopped")); after != before {
		t.Fatalf("refused relaunches added %d events", after-before)
	}

	// A second daemon on the same store leaves the failed Sessions alone.
	td.stop()
	td.start()
	for _, id := range []string{"nosuch:stopped", "nosuch:busy"} {
		n := 0
		for _, e := range td.events(t, id) {
			if e.Type == rpc.EventSessionFailed {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d session.failed events after a second load", id, n)
		}
	}
}

// The daemon's own binary variables (Options.BinEnv, from its environment
// through the registry) are the default for a client environment that
// names none, for launches and for harness.list.
func TestDaemonBinEnvDefault(t *testing.T) {
	env := fakeClaudeEnv(t)
	bin := env["DLGT_CLAUDE_BIN"]
	delete(env, "DLGT_CLAUDE_BIN")
	if p, err := (harness.Claude{}).Binary(env); err == nil {
		t.Skipf("claude is on PATH (%s): the default would not be needed", p)
	}
	td := newTestDaemon(t, env)
	td.opts.BinEnv = map[string]string{"DLGT_CLAUDE_BIN": bin}
	td.start()
	t.Cleanup(td.stop)
	r := td.create(t, "bin-1", "hello")
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusCompleted {
		t.Fatalf("launch with the daemon's DLGT_CLAUDE_BIN: %+v", res)
	}
	var list rpc.HarnessListResult
	td.mustCall(rpc.MethodHarnessList, rpc.HarnessListParams{Harness: "claude"}, &list)
	if len(list.Harnesses) != 1 || list.Harnesses[0].Binary != bin || !list.Harnesses[0].Available {
		t.Fatalf("harness.list: %+v", list)
	}
}
