package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// session create names every missing required input in one usage error
// (INVALID_ARGUMENT, exit 1, the usage on stderr) and contacts nobody.
func TestCreateNamesEveryMissingInput(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"session", "create"},
			[]string{"--harness", "the prompt"}, []string{"--title", "--request-id"}},
		{[]string{"session", "create", "--title", "t", "--request-id", "r"},
			[]string{"--harness", "the prompt"}, []string{"--title", "--request-id"}},
		{[]string{"session", "create", "--harness", "claude", "--title", "t", "--wait", "1m", "--request-id", "r"},
			[]string{"the prompt"}, []string{"--harness", "--title", "--request-id"}},
	} {
		d := testkit.NewFakeDaemon(t)
		e, out, errb := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, c.args...)
		if code != cli.ExitError {
			t.Fatalf("%v: exit %d, stdout %q", c.args, code, stdout)
		}
		var doc struct {
			Error rpc.Error `json:"error"`
		}
		oneJSONLine(t, stdout)
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Error.Code != rpc.CodeInvalidArgument {
			t.Fatalf("%v: %q", c.args, stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(doc.Error.Message, w) {
				t.Fatalf("%v: the error does not name %s: %q", c.args, w, doc.Error.Message)
			}
		}
		for _, n := range c.not {
			if strings.Contains(doc.Error.Message, n) {
				t.Fatalf("%v: the error names %s, which was given: %q", c.args, n, doc.Error.Message)
			}
		}
		if !strings.Contains(errb.String(), "Usage:") {
			t.Fatalf("%v: no usage on stderr: %q", c.args, errb)
		}
		if d.Count() != 0 {
			t.Fatalf("%v: %d requests reached the daemon", c.args, d.Count())
		}
	}
}

// session create --wait creates, then waits for that execution's result
// from the receipt's cursor and prints what session fetch prints; a create
// that fails prints its own error (exit 1) and fetches nothing.
func TestCreateWait(t *testing.T) {
	receipt := rpc.Receipt{Session: rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateBusy},
		ExecutionSeq: 1, Cursor: "17", Submission: rpc.SubmissionConfirmed}
	final := "All good.\nNothing to fix."
	doc := rpc.FetchDocument{SchemaVersion: 1, Reason: "result", Cursor: "23", Gaps: []rpc.Gap{},
		Sessions: []rpc.FetchSession{{Session: rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateIdle, Title: "review"},
			Events: []rpc.Event{}, Gaps: []rpc.Gap{},
			Results: []rpc.Result{{ExecutionSeq: 1, Status: rpc.StatusCompleted, FinalText: &final}}}}}
	args := []string{"session", "create", "--harness", "claude", "--title", "review", "--alias", "review", "--request-id", "r1", "--wait", "10m", "--", "Review it"}

	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionCreate, receipt)
	d.Set(rpc.MethodSessionFetch, doc)
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, args...)
	m := oneJSONLine(t, stdout)
	if code != cli.ExitOK || m["ok"] != true || m["reason"] != "result" || m["cursor"] != "23" || m["session"] != nil {
		t.Fatalf("exit %d, stdout %q: want the fetch's document", code, stdout)
	}
	fetches := d.Params(rpc.MethodSessionFetch)
	if len(d.Params(rpc.MethodSessionCreate)) != 1 || len(fetches) != 1 {
		t.Fatalf("%d creates, %d fetches", len(d.Params(rpc.MethodSessionCreate)), len(fetches))
	}
	var p rpc.SessionFetchParams
	if err := json.Unmarshal(fetches[0], &p); err != nil {
		t.Fatal(err)
	}
	if p.Session != "claude:1111" || string(p.Cursor) != `"17"` || p.Until != "result" || p.WaitMS != 600000 || p.All {
		t.Fatalf("fetch params %s", fetches[0])
	}

	// -o text: the fetch's text form, with the result's final_text.
	e, out, _ = cliEnv(t, d, nil, nil, "")
	code, stdout = runCLI(t, e, out, append(args[:len(args)-2:len(args)-2], "-o", "text", "--", "Review it")...)
	if code != cli.ExitOK || !strings.Contains(stdout, final+"\n") || !strings.Contains(stdout, "reason result, cursor 23") || strings.Contains(stdout, `"ok"`) {
		t.Fatalf("-o text: exit %d:\n%s", code, stdout)
	}

	// The create fails: its own error, exit 1, no fetch.
	d = testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionCreate, rpc.Errorf(rpc.CodeLaunchFailed, "claude not found: set DLGT_CLAUDE_BIN or put claude on PATH"))
	d.Set(rpc.MethodSessionFetch, doc)
	e, out, _ = cliEnv(t, d, nil, nil, "")
	code, stdout = runCLI(t, e, out, args...)
	m = oneJSONLine(t, stdout)
	if code != cli.ExitError || m["ok"] != false || m["error"].(map[string]any)["code"] != string(rpc.CodeLaunchFailed) ||
		!strings.Contains(stdout, "claude not found") {
		t.Fatalf("failed create: exit %d, stdout %q", code, stdout)
	}
	if n := len(d.Params(rpc.MethodSessionFetch)); n != 0 {
		t.Fatalf("a failed create was followed by %d fetches", n)
	}

	// A negative --wait is a usage error before anything is sent.
	d = testkit.NewFakeDaemon(t)
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout = runCLI(t, e, out, append(args[:len(args)-4:len(args)-4], "--wait", "-1s", "--", "x")...); code != cli.ExitError || !strings.Contains(stdout, "INVALID_ARGUMENT") || d.Count() != 0 {
		t.Fatalf("--wait -1s: exit %d, %q, %d requests", code, stdout, d.Count())
	}
}

// The launch fields the client resolves (client.ResolveLaunch) are
// reported as the flags the command line gave, byte for byte as before
// the resolution moved to the client, with the usage on stderr; nothing
// is dialed.
func TestLaunchFlagErrorsNameTheFlag(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "profiles.toml"), []byte("[profiles.far]\nharness = \"codex\"\nhost = \"dev@build-box:2222\"\n[profiles.badopt]\nharness = \"claude\"\nharness_options = [\"novalue\"]\n"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--harness", "claude", "--harness-option", "novalue"}, `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"--harness-option \"novalue\" is not KEY=VALUE"}}`},
		{[]string{"--profile", "badopt"}, `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"--harness-option \"novalue\" is not KEY=VALUE"}}`},
		{[]string{"--harness", "claude", "--startup-timeout", "-1s"}, `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"--startup-timeout must not be negative"}}`},
		{[]string{"--profile", "far", "--cwd", "rel"}, `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"--cwd \"rel\" must be an absolute path on the remote host"}}`},
		{[]string{"--profile", "nope"}, `{"ok":false,"error":{"code":"NOT_FOUND","message":"profile \"nope\" is not defined in ` + filepath.Join(home, "profiles.toml") + `"}}`},
	} {
		e, out, errb := testEnv(t, map[string]string{"DLGT_HOME": home}, "")
		args := append(append([]string{"session", "create"}, tt.args...), "--title", "t", "--request-id", "r", "--", "hi")
		if code := run(args, e); code != cli.ExitError {
			t.Errorf("%v: exit %d", tt.args, code)
		}
		if got := strings.TrimSpace(out.String()); got != tt.want {
			t.Errorf("%v:\n got %s\nwant %s", tt.args, got, tt.want)
		}
		if usage := strings.Contains(errb.String(), "Usage:"); usage != strings.Contains(tt.want, "INVALID_ARGUMENT") {
			t.Errorf("%v: usage on stderr %v: %q", tt.args, usage, errb.String())
		}
	}
}

// A launch flag given empty is an explicit choice the profile does not
// fill: --model "" sends no model although the profile names one, and
// --harness "" is the missing harness.
func TestEmptyLaunchFlagIsNotFilledByTheProfile(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionCreate, rpc.Receipt{Session: rpc.Session{ID: "codex:1"}, ExecutionSeq: 1, Cursor: "1"})
	profiles := filepath.Join(t.TempDir(), "p.toml")
	os.WriteFile(profiles, []byte("[profiles.p]\nharness = \"codex\"\nmodel = \"m1\"\neffort = \"high\"\n"), 0o600)
	vars := map[string]string{"DLGT_PROFILES": profiles}
	e, out, _ := cliEnv(t, d, vars, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "create", "--profile", "p", "--model=", "--title", "t", "--request-id", "r", "--", "hi"); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	ps := d.Params(rpc.MethodSessionCreate)
	var p rpc.SessionCreateParams
	if len(ps) != 1 || json.Unmarshal(ps[0], &p) != nil || p.Model != "" || p.Harness != "codex" || p.Effort != "high" {
		t.Fatalf("create params %s", ps)
	}
	e, out, _ = cliEnv(t, d, vars, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "create", "--profile", "p", "--harness=", "--title", "t", "--request-id", "r", "--", "hi"); code != cli.ExitError || !strings.Contains(stdout, "missing required --harness") {
		t.Fatalf("--harness= exit %d: %s", code, stdout)
	}
}

// Without --title the title is the prompt's first line; without
// --request-id one is made, sent, and shown (the receipt carries it as
// request_id); a create given both sends and prints what it sends and
// prints today.
func TestCreateMakesTitleAndRequestID(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionCreate, rpc.Receipt{Session: rpc.Session{ID: "claude:1", Alias: "fix-it", Harness: "claude", State: "busy"},
		ExecutionSeq: 1, Cursor: "2", Submission: rpc.SubmissionConfirmed})
	sent := func(i int) rpc.SessionCreateParams {
		var p rpc.SessionCreateParams
		if err := json.Unmarshal(d.Params(rpc.MethodSessionCreate)[i], &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "create", "--harness", "claude", "--", "Fix it\nthen test")
	m := oneJSONLine(t, stdout)
	p := sent(0)
	if code != cli.ExitOK || p.Title != "Fix it" || !strings.HasPrefix(p.RequestID, "cli-") || m["request_id"] != p.RequestID || m["cursor"] != "2" {
		t.Fatalf("exit %d, sent %+v, printed %s", code, p, stdout)
	}

	e, out, _ = cliEnv(t, d, nil, nil, "")
	code, stdout = runCLI(t, e, out, "session", "create", "--harness", "claude", "-o", "text", "--", "Fix it")
	if p2 := sent(1); code != cli.ExitOK || p2.RequestID == p.RequestID || !strings.Contains(stdout, "request "+p2.RequestID+" (") {
		t.Fatalf("exit %d, sent %+v, printed %q", code, p2, stdout)
	}

	e, out, _ = cliEnv(t, d, nil, nil, "")
	code, stdout = runCLI(t, e, out, "session", "create", "--harness", "claude", "--title", "mine", "--request-id", "r-7", "--", "Fix it")
	if p3 := sent(2); code != cli.ExitOK || p3.Title != "mine" || p3.RequestID != "r-7" || strings.Contains(stdout, "request_id") {
		t.Fatalf("exit %d, sent %+v, printed %q", code, p3, stdout)
	}
}
