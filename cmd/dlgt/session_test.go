package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

var (
	testSession = rpc.Session{ID: "s1", Title: "t", Harness: "claude", Cwd: "/w", State: "busy", CreatedAtMS: 1, UpdatedAtMS: 2}
	testReceipt = rpc.Receipt{Session: testSession, ExecutionSeq: 1, Cursor: "7", Submission: rpc.SubmissionConfirmed}
)

const receiptFields = `"session":{"id":"s1","title":"t","harness":"claude","cwd":"/w","state":"busy","created_at_ms":1,"updated_at_ms":2},"execution_seq":1,"cursor":"7","submission":"confirmed"`

func mustWd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// sameJSON compares two JSON texts structurally.
func sameJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("params\n got %s\nwant %s", got, want)
	}
}

func TestControlCommands(t *testing.T) {
	wd := mustWd(t)
	environ := []string{"A=1", "B=x=y", "noequals"}
	envJSON := `{"A":"1","B":"x=y"}`
	fetchDoc := rpc.FetchDocument{SchemaVersion: 1, Reason: rpc.ReasonTimeout, Cursor: "9", Gaps: []rpc.Gap{}, Sessions: []rpc.FetchSession{}}
	fetchOut := `{"ok":true,"schema_version":1,"runtime":{"version":"","instance_id":""},"reason":"timeout","has_more":false,"gaps":[],"cursor":"9","sessions":[]}` + "\n"
	sessionResult := rpc.SessionResult{Session: testSession}
	sessionOut := `{"ok":true,"session":{"id":"s1","title":"t","harness":"claude","cwd":"/w","state":"busy","created_at_ms":1,"updated_at_ms":2}}` + "\n"
	tests := []struct {
		name       string
		args       []string
		stdin      string
		method     string
		result     any
		wantOut    string
		wantParams string
	}{
		{"create", []string{"session", "create", "--harness", "claude", "--cwd", "sub/dir", "--title", "t", "--alias", "rev", "--model", "opus", "--effort", "high",
			"--harness-option", "max-turns=3", "--harness-option", "verbose=true", "--no-auto-approve", "--startup-timeout", "90s", "--request-id", "r1", "--", "Review", "this"},
			"", rpc.MethodSessionCreate, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"title":"t","alias":"rev","harness":"claude","cwd":` + quote(filepath.Join(wd, "sub/dir")) + `,"model":"opus","effort":"high",
			"harness_options":["max-turns=3","verbose=true"],"auto_approve":false,"prompt":"Review this","request_id":"r1","startup_timeout_ms":90000,"environment":` + envJSON + `}`},
		{"create default cwd", []string{"session", "create", "--harness", "codex", "--title", "t", "--request-id", "r1", "--", "go"},
			"", rpc.MethodSessionCreate, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"title":"t","harness":"codex","cwd":` + quote(wd) + `,"prompt":"go","request_id":"r1","environment":` + envJSON + `}`},
		{"create stdin byte-exact", []string{"session", "create", "--harness", "claude", "--cwd", "/abs", "--title", "t", "--request-id", "r1", "--stdin"},
			"line one\n  line two\n", rpc.MethodSessionCreate, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"title":"t","harness":"claude","cwd":"/abs","prompt":"line one\n  line two\n","request_id":"r1","environment":` + envJSON + `}`},
		{"send", []string{"session", "send", "rev", "--request-id", "r2", "--", "next"},
			"", rpc.MethodSessionSend, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"session":"rev","prompt":"next","request_id":"r2"}`},
		{"send queue", []string{"session", "send", "rev", "--queue", "--request-id", "r2", "--", "next"},
			"", rpc.MethodSessionSend, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"session":"rev","prompt":"next","request_id":"r2","queue":true}`},
		{"send stdin", []string{"session", "send", "rev", "--request-id", "r2", "--stdin"},
			"exact\n\n", rpc.MethodSessionSend, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"session":"rev","prompt":"exact\n\n","request_id":"r2"}`},
		{"send resume", []string{"session", "send", "s1", "--resume", "--cwd", "rel", "--title", "t2", "--model", "m", "--harness-option", "k=v", "--request-id", "r3", "--", "go", "on"},
			"", rpc.MethodSessionSend, testReceipt, "{\"ok\":true," + receiptFields + "}\n",
			`{"session":"s1","prompt":"go on","request_id":"r3","resume":true,"title":"t2","cwd":` + quote(filepath.Join(wd, "rel")) + `,"model":"m","harness_options":["k=v"],"environment":` + envJSON + `}`},
		{"fetch", []string{"session", "fetch", "rev", "--cursor", "0042", "--wait", "15m", "--until", "result", "--screen", "20", "--max-bytes", "65536"},
			"", rpc.MethodSessionFetch, fetchDoc, fetchOut,
			`{"session":"rev","cursor":"0042","wait_ms":900000,"until":"result","screen":20,"max_bytes":65536}`},
		{"fetch all", []string{"session", "fetch", "--all", "--screen", "false"},
			"", rpc.MethodSessionFetch, fetchDoc, fetchOut, `{"all":true,"screen":false}`},
		{"read", []string{"session", "read", "rev"}, "", rpc.MethodSessionRead, rpc.SessionReadResult{Session: testSession},
			`{"ok":true,"session":{"id":"s1","title":"t","harness":"claude","cwd":"/w","state":"busy","created_at_ms":1,"updated_at_ms":2},"result":null}` + "\n",
			`{"session":"rev"}`},
		{"list", []string{"session", "list", "--all"}, "", rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{}},
			`{"ok":true,"sessions":[]}` + "\n", `{"all":true}`},
		{"list default", []string{"session", "list"}, "", rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{}},
			`{"ok":true,"sessions":[]}` + "\n", `{}`},
		{"cancel", []string{"session", "cancel", "rev", "--timeout", "30s"}, "", rpc.MethodSessionCancel, sessionResult, sessionOut,
			`{"session":"rev","timeout_ms":30000}`},
		{"cancel zero timeout", []string{"session", "cancel", "rev", "--timeout", "0s"}, "", rpc.MethodSessionCancel, sessionResult, sessionOut,
			`{"session":"rev","timeout_ms":0}`},
		{"cancel default", []string{"session", "cancel", "rev"}, "", rpc.MethodSessionCancel, sessionResult, sessionOut, `{"session":"rev"}`},
		{"respond deny", []string{"session", "respond", "rev", "--deny", "--message", "use a branch", "--pending", "prq_1"}, "", rpc.MethodSessionRespond,
			rpc.SessionRespondResult{Session: testSession, PendingID: "prq_1", Decision: "deny"},
			`{"ok":true,"session":{"id":"s1","title":"t","harness":"claude","cwd":"/w","state":"busy","created_at_ms":1,"updated_at_ms":2},"pending_id":"prq_1","decision":"deny"}` + "\n",
			`{"session":"rev","pending_id":"prq_1","decision":"deny","message":"use a branch","request_id":"cli-prq_1-deny"}`},
		{"respond allow request id", []string{"session", "respond", "rev", "--allow", "--pending", "prq_1", "--request-id", "r9"}, "", rpc.MethodSessionRespond,
			rpc.SessionRespondResult{Session: testSession, PendingID: "prq_1", Decision: "allow"},
			`{"ok":true,"session":{"id":"s1","title":"t","harness":"claude","cwd":"/w","state":"busy","created_at_ms":1,"updated_at_ms":2},"pending_id":"prq_1","decision":"allow"}` + "\n",
			`{"session":"rev","pending_id":"prq_1","decision":"allow","request_id":"r9"}`},
		{"stop", []string{"session", "stop", "rev", "--force"}, "", rpc.MethodSessionStop, sessionResult, sessionOut, `{"session":"rev","force":true}`},
		{"restart", []string{"session", "restart", "rev"}, "", rpc.MethodSessionRestart, sessionResult, sessionOut,
			`{"session":"rev","environment":` + envJSON + `}`},
		{"scrollback", []string{"scrollback", "rev", "--lines", "50", "--before", "120"}, "", rpc.MethodScrollbackRead,
			rpc.ScrollbackPage{SessionID: "s1", Screen: rpc.ScreenSize{Rows: 24, Cols: 80}, Lines: []string{"a", "<b>"}},
			`{"ok":true,"session_id":"s1","screen":{"rows":24,"cols":80},"lines":["a","<b>"],"truncated":false}` + "\n",
			`{"session":"rev","lines":50,"before":"120"}`},
		{"models", []string{"models", "--harness", "codex", "--include-hidden"}, "", rpc.MethodModelList,
			rpc.ModelListResult{Harness: "codex", Source: "static", Models: []rpc.Model{{ID: "gpt"}}},
			`{"ok":true,"harness":"codex","source":"static","models":[{"id":"gpt"}]}` + "\n",
			`{"harness":"codex","include_hidden":true}`},
		{"harnesses", []string{"harnesses"}, "", rpc.MethodHarnessList, rpc.HarnessListResult{Harnesses: []rpc.HarnessInfo{}},
			`{"ok":true,"harnesses":[]}` + "\n", `{"environment":` + envJSON + `}`},
		{"unknown result fields pass through", []string{"session", "read", "rev"}, "", rpc.MethodSessionRead,
			json.RawMessage(`{"session":{"id":"s1"},"result":null,"future_field":[1,2]}`),
			`{"ok":true,"session":{"id":"s1"},"result":null,"future_field":[1,2]}` + "\n", `{"session":"rev"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testkit.NewFakeDaemon(t)
			d.Set(tt.method, tt.result)
			e, out, errb := cliEnv(t, d, nil, environ, tt.stdin)
			code, stdout := runCLI(t, e, out, tt.args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errb)
			}
			if stdout != tt.wantOut {
				t.Fatalf("stdout\n got %q\nwant %q", stdout, tt.wantOut)
			}
			if errb.Len() != 0 {
				t.Fatalf("stderr %q", errb)
			}
			ps := d.Params(tt.method)
			if len(ps) != 1 || d.Count() != 1 {
				t.Fatalf("daemon got %d requests (%d of %s), want exactly one", d.Count(), len(ps), tt.method)
			}
			sameJSON(t, ps[0], tt.wantParams)
		})
	}
}

func TestPretty(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "list", "--pretty"); code != cli.ExitOK || stdout != "{\n  \"ok\": true,\n  \"sessions\": []\n}\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

func TestErrorExitStatus(t *testing.T) {
	tests := []struct {
		code rpc.Code
		exit int
	}{
		{rpc.CodeCancelTimeout, cli.ExitCancelTimeout},
		{rpc.CodeSessionBlocked, cli.ExitBlocked},
		{rpc.CodeSessionBusy, cli.ExitBusy},
		{rpc.CodeNotFound, cli.ExitError},
		{rpc.CodeCursorExpired, cli.ExitError},
		{rpc.CodeLaunchFailed, cli.ExitError},
		{rpc.CodeInternal, cli.ExitError},
	}
	commands := []struct {
		method string
		args   []string
	}{
		{rpc.MethodSessionCreate, []string{"session", "create", "--harness", "claude", "--cwd", "/w", "--title", "t", "--request-id", "r", "--", "p"}},
		{rpc.MethodSessionSend, []string{"session", "send", "rev", "--request-id", "r", "--", "p"}},
		{rpc.MethodSessionFetch, []string{"session", "fetch", "rev"}},
		{rpc.MethodSessionRead, []string{"session", "read", "rev"}},
		{rpc.MethodSessionList, []string{"session", "list"}},
		{rpc.MethodSessionCancel, []string{"session", "cancel", "rev"}},
		{rpc.MethodSessionStop, []string{"session", "stop", "rev"}},
		{rpc.MethodSessionRestart, []string{"session", "restart", "rev"}},
		{rpc.MethodScrollbackRead, []string{"scrollback", "rev"}},
		{rpc.MethodModelList, []string{"models", "--harness", "claude"}},
		{rpc.MethodHarnessList, []string{"harnesses"}},
		{rpc.MethodEventRead, []string{"events"}},
	}
	for _, c := range commands {
		for _, tt := range tests {
			t.Run(c.method+"/"+string(tt.code), func(t *testing.T) {
				d := testkit.NewFakeDaemon(t)
				d.Set(c.method, &rpc.Error{Code: tt.code, Message: "nope", SessionID: "s1"})
				e, out, _ := cliEnv(t, d, nil, nil, "")
				code, stdout := runCLI(t, e, out, c.args...)
				if code != tt.exit {
					t.Fatalf("exit %d, want %d (stdout %q)", code, tt.exit, stdout)
				}
				want := `{"ok":false,"error":{"code":"` + string(tt.code) + `","message":"nope","session_id":"s1"}}` + "\n"
				if stdout != want {
					t.Fatalf("stdout %q, want %q", stdout, want)
				}
			})
		}
	}
}

func TestDaemonUnavailable(t *testing.T) {
	dir, err := os.MkdirTemp("", "dlgt")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e, out, _ := testEnv(t, map[string]string{"DLGT_SOCKET": filepath.Join(dir, "none")}, "")
	code, stdout := runCLI(t, e, out, "session", "list")
	if code != cli.ExitError || !strings.HasPrefix(stdout, `{"ok":false,"error":{"code":"RPC_UNAVAILABLE"`) {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	oneJSONLine(t, stdout)
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		in   string
	}{
		{"create prompt both ways", []string{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r", "--stdin", "--", "p"}, "x"},
		{"create no prompt", []string{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r"}, ""},
		{"create no harness", []string{"session", "create", "--title", "t", "--request-id", "r", "--", "p"}, ""},
		{"create bad harness option", []string{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r", "--harness-option", "novalue", "--", "p"}, ""},
		{"create unknown profile", []string{"session", "create", "--profile", "nope", "--title", "t", "--request-id", "r", "--", "p"}, ""},
		{"create negative timeout", []string{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r", "--startup-timeout", "-1s", "--", "p"}, ""},
		{"unknown flag", []string{"session", "create", "--bogus"}, ""},
		{"bad duration", []string{"session", "fetch", "rev", "--wait", "soon"}, ""},
		{"send no prompt", []string{"session", "send", "rev", "--request-id", "r"}, ""},
		{"send no session", []string{"session", "send", "--request-id", "r", "--", "p"}, ""},
		{"send launch flag without resume", []string{"session", "send", "rev", "--request-id", "r", "--cwd", ".", "--", "p"}, ""},
		{"fetch neither", []string{"session", "fetch"}, ""},
		{"fetch both", []string{"session", "fetch", "rev", "--all"}, ""},
		{"fetch bad until", []string{"session", "fetch", "rev", "--until", "done"}, ""},
		{"fetch bad screen", []string{"session", "fetch", "rev", "--screen", "lots"}, ""},
		{"read no session", []string{"session", "read"}, ""},
		{"stop two sessions", []string{"session", "stop", "a", "b"}, ""},
		{"models no harness", []string{"models"}, ""},
		{"events extra arg", []string{"events", "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testkit.NewFakeDaemon(t)
			e, out, _ := cliEnv(t, d, nil, nil, tt.in)
			code, stdout := runCLI(t, e, out, tt.args...)
			if code != cli.ExitError {
				t.Fatalf("exit %d, want %d (stdout %q)", code, cli.ExitError, stdout)
			}
			m := oneJSONLine(t, stdout)
			if m["ok"] != false {
				t.Fatalf("stdout %q", stdout)
			}
			code2 := m["error"].(map[string]any)["code"]
			if tt.name == "create unknown profile" {
				if code2 != string(rpc.CodeNotFound) {
					t.Fatalf("code %v, want NOT_FOUND", code2)
				}
			} else if code2 != string(rpc.CodeInvalidArgument) {
				t.Fatalf("code %v, want INVALID_ARGUMENT (%q)", code2, stdout)
			}
			if d.Count() != 0 {
				t.Fatalf("a usage error reached the daemon (%d requests)", d.Count())
			}
		})
	}
}

func TestCreateProfilePrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.toml")
	data := `[profiles.review]
harness = "codex"
model = "opus"
effort = "high"
harness_options = ["max-turns=3"]
[profiles.review.environment]
A = "profile"
P = "p"
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"A=client", "C=c"}
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"profile applies", nil,
			`{"title":"t","harness":"codex","cwd":"/w","model":"opus","effort":"high","harness_options":["max-turns=3"],"prompt":"p","request_id":"r","environment":{"A":"profile","C":"c","P":"p"}}`},
		{"explicit flags win", []string{"--harness", "claude", "--model", "sonnet", "--effort", "low", "--harness-option", "x=y"},
			`{"title":"t","harness":"claude","cwd":"/w","model":"sonnet","effort":"low","harness_options":["x=y"],"prompt":"p","request_id":"r","environment":{"A":"profile","C":"c","P":"p"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testkit.NewFakeDaemon(t)
			d.Set(rpc.MethodSessionCreate, testReceipt)
			e, out, _ := cliEnv(t, d, map[string]string{"DLGT_PROFILES": path}, environ, "")
			args := append([]string{"session", "create", "--profile", "review", "--cwd", "/w", "--title", "t", "--request-id", "r"}, tt.flags...)
			args = append(args, "--", "p")
			if code, stdout := runCLI(t, e, out, args...); code != cli.ExitOK {
				t.Fatalf("exit %d: %q", code, stdout)
			}
			sameJSON(t, d.Params(rpc.MethodSessionCreate)[0], tt.want)
		})
	}

	// send --resume takes the profile too (its harness does not apply).
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionSend, testReceipt)
	e, out, _ := cliEnv(t, d, map[string]string{"DLGT_PROFILES": path}, environ, "")
	if code, stdout := runCLI(t, e, out, "session", "send", "s1", "--resume", "--profile", "review", "--effort", "low", "--request-id", "r", "--", "p"); code != cli.ExitOK {
		t.Fatalf("exit %d: %q", code, stdout)
	}
	sameJSON(t, d.Params(rpc.MethodSessionSend)[0],
		`{"session":"s1","prompt":"p","request_id":"r","resume":true,"model":"opus","effort":"low","harness_options":["max-turns=3"],"environment":{"A":"profile","C":"c","P":"p"}}`)
}

func TestEvents(t *testing.T) {
	events := []rpc.Event{
		{SchemaVersion: 1, Seq: 5, Type: rpc.EventSessionBusy, SessionID: "s1", ExecutionSeq: 1},
		{SchemaVersion: 1, Seq: 6, Type: rpc.EventSessionIdle, SessionID: "s1", ExecutionSeq: 1, ResultStatus: "completed"},
	}
	want := `{"schema_version":1,"seq":5,"type":"session.busy","session_id":"s1","execution_seq":1}` + "\n" +
		`{"schema_version":1,"seq":6,"type":"session.idle","session_id":"s1","execution_seq":1,"result_status":"completed"}` + "\n"

	t.Run("read", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodEventRead, events)
		e, out, _ := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, "events", "--session", "s1", "--after", "4")
		if code != cli.ExitOK || stdout != want {
			t.Fatalf("exit %d, stdout\n got %q\nwant %q", code, stdout, want)
		}
		sameJSON(t, d.Params(rpc.MethodEventRead)[0], `{"session":"s1","after":4}`)
	})
	t.Run("read after zero and empty", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodEventRead, []rpc.Event{})
		e, out, _ := cliEnv(t, d, nil, nil, "")
		if code, stdout := runCLI(t, e, out, "events", "--after", "0"); code != cli.ExitOK || stdout != "" {
			t.Fatalf("exit %d, stdout %q", code, stdout)
		}
		sameJSON(t, d.Params(rpc.MethodEventRead)[0], `{"after":0}`)
	})
	t.Run("follow", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		var lines []string
		for _, ev := range events {
			b, _ := rpc.Marshal(ev)
			lines = append(lines, string(b))
		}
		d.Set(rpc.MethodEventSubscribe, testkit.EventStream{Lines: lines})
		e, _, errb := cliEnv(t, d, nil, nil, "")
		w := &lineWriter{n: 2, done: make(chan struct{})}
		done := w.done
		e.Stdout = w
		root := newRootCommand(e)
		root.SetArgs([]string{"events", "--follow", "--session", "s1"})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		result := make(chan error, 1)
		go func() { result <- root.ExecuteContext(ctx) }()
		<-done
		cancel() // the interrupt
		if err := <-result; err != nil {
			t.Fatalf("follow ended with %v (stderr %q)", err, errb)
		}
		if got := w.String(); got != want {
			t.Fatalf("stdout\n got %q\nwant %q", got, want)
		}
		sameJSON(t, d.Params(rpc.MethodEventSubscribe)[0], `{"session":"s1"}`)
	})
	t.Run("follow error", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodEventSubscribe, &rpc.Error{Code: rpc.CodeNotFound, Message: "no such session"})
		e, out, _ := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, "events", "--follow", "--session", "zz")
		if code != cli.ExitError || stdout != `{"ok":false,"error":{"code":"NOT_FOUND","message":"no such session"}}`+"\n" {
			t.Fatalf("exit %d, stdout %q", code, stdout)
		}
	})
}

func TestTranscript(t *testing.T) {
	page := func(data string, start, next int64, more bool) rpc.RawPage {
		return rpc.RawPage{SessionID: "s1", DataBase64: base64.StdEncoding.EncodeToString([]byte(data)), ByteLen: len(data), Start: start, NextAfter: next, HasMore: more}
	}
	t.Run("follows pages", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.SetPages(rpc.MethodTranscriptReadRaw, []any{page("\x1b[2Jhello ", 0, 10, true), page("world\r\n\x00", 10, 18, false)}...)
		e, out, errb := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, "transcript", "s1", "--raw", "--after", "2")
		if code != cli.ExitOK || stdout != "\x1b[2Jhello world\r\n\x00" || errb.Len() != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errb)
		}
		ps := d.Params(rpc.MethodTranscriptReadRaw)
		if len(ps) != 2 {
			t.Fatalf("%d requests, want 2", len(ps))
		}
		sameJSON(t, ps[0], `{"session":"s1","after":2}`)
		sameJSON(t, ps[1], `{"session":"s1","after":10}`)
	})
	t.Run("limit fetches one page", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.SetPages(rpc.MethodTranscriptReadRaw, []any{page("abc", 0, 3, true), page("def", 3, 6, false)}...)
		e, out, _ := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, "transcript", "s1", "--raw", "--limit", "3")
		if code != cli.ExitOK || stdout != "abc" {
			t.Fatalf("exit %d, stdout %q", code, stdout)
		}
		ps := d.Params(rpc.MethodTranscriptReadRaw)
		if len(ps) != 1 {
			t.Fatalf("%d requests, want 1", len(ps))
		}
		sameJSON(t, ps[0], `{"session":"s1","limit_bytes":3}`)
	})
	t.Run("raw is the only form: --raw is optional", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.SetPages(rpc.MethodTranscriptReadRaw, []any{page("abc", 0, 3, false)}...)
		e, out, errb := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, "transcript", "s1")
		if code != cli.ExitOK || stdout != "abc" || errb.Len() != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errb)
		}
	})
	t.Run("error goes to stderr", func(t *testing.T) {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodTranscriptReadRaw, &rpc.Error{Code: rpc.CodeNotFound, Message: "gone"})
		e, out, errb := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, "transcript", "s1", "--raw")
		if code != cli.ExitError || stdout != "" || errb.String() != `{"ok":false,"error":{"code":"NOT_FOUND","message":"gone"}}`+"\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errb)
		}
	})
}

func TestCompletion(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	code, stdout := runCLI(t, e, out, "completion", "bash")
	if code != cli.ExitOK || !strings.Contains(stdout, "__start_dlgt") {
		t.Fatalf("exit %d, completion output %.200q", code, stdout)
	}
}

// Without --pending, respond reads the Session and answers the request
// pending now, by its id; -o text says what was answered.
func TestRespondPinsThePendingRequest(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	blocked := testSession
	blocked.State = rpc.StateBlocked
	blocked.Pending = &rpc.Pending{ID: "prq_7", Kind: rpc.PendingPermission, Tool: "Bash", Input: "touch x", AskedAtMS: 1}
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: blocked})
	d.Set(rpc.MethodSessionRespond, rpc.SessionRespondResult{Session: testSession, PendingID: "prq_7", Decision: "allow"})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "respond", "rev", "--allow", "-o", "text")
	if code != cli.ExitOK || !strings.HasPrefix(stdout, "allowed  prq_7\n") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	ps := d.Params(rpc.MethodSessionRespond)
	if len(ps) != 1 {
		t.Fatalf("%d respond requests", len(ps))
	}
	sameJSON(t, ps[0], `{"session":"rev","pending_id":"prq_7","decision":"allow","request_id":"cli-prq_7-allow"}`)
	// Nothing pending: SESSION_UNAVAILABLE, and no answer is sent.
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: testSession})
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "respond", "rev", "--deny"); code == cli.ExitOK || !strings.Contains(stdout, "SESSION_UNAVAILABLE") || len(d.Params(rpc.MethodSessionRespond)) != 1 {
		t.Fatalf("nothing pending: exit %d, stdout %q", code, stdout)
	}
	// Usage: exactly one answer; --message only with --deny.
	for _, args := range [][]string{{"--allow", "--deny"}, {}, {"--allow", "--message", "m"}} {
		e, out, _ = cliEnv(t, d, nil, nil, "")
		if code, _ := runCLI(t, e, out, append([]string{"session", "respond", "rev"}, args...)...); code == cli.ExitOK {
			t.Errorf("%v accepted", args)
		}
	}
}
