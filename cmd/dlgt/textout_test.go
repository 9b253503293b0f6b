package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func TestSessionListText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	now := time.Now().UnixMilli()
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{
		{ID: "claude:1111", Alias: "review", Title: "Review the diff", Harness: "claude", State: rpc.StateBusy, CreatedAtMS: now - 3*60_000, UpdatedAtMS: now - 1000},
		{ID: "codex:2222", Title: "a title\nwith a newline", Harness: "codex", State: rpc.StateIdle, CreatedAtMS: now - 2*3_600_000, UpdatedAtMS: now - 2*3_600_000},
	}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "list", "-o", "text")
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if code != cli.ExitOK || len(lines) != 3 || !strings.HasPrefix(lines[0], "SESSION") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	// Aligned: every column starts at the same offset on every line.
	col := strings.Index(lines[0], "STATE")
	for _, l := range lines[1:] {
		if len(l) < col || l[col-2:col] != "  " || l[col] == ' ' {
			t.Fatalf("column STATE not aligned:\n%s", stdout)
		}
	}
	for _, want := range []string{"review", "busy", "3m ago", "just now", "codex:2222", "idle", "2h ago", "a title with a newline"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("table lacks %q:\n%s", want, stdout)
		}
	}
	// JSON stays the default.
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "list"); code != cli.ExitOK || !strings.HasPrefix(stdout, `{"ok":true,"sessions":[`) {
		t.Fatalf("default output: %q", stdout)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "list", "-o", "yaml"); code != cli.ExitError || !strings.Contains(stdout, "INVALID_ARGUMENT") {
		t.Fatalf("-o yaml: exit %d %q", code, stdout)
	}
}

// The table: a 47-character alias derived from a long title, a
// long title and a long last result were ~150 columns wide.
func longSessions() []rpc.Session {
	now := time.Now().UnixMilli()
	return []rpc.Session{
		{ID: "claude:1111", Alias: "investigate-the-race-condition-in-the-ev-672cf0", Title: "Investigate the race condition in the event subscriber and fix it",
			Harness: "claude", State: rpc.StateRestarting, CreatedAtMS: now - 3*60_000, UpdatedAtMS: now - 2*3_600_000},
		{ID: "codex:2222", Alias: "cl", Title: "short", Harness: "codex", State: rpc.StateIdle, CreatedAtMS: now - 3*60_000, UpdatedAtMS: now - 2*3_600_000},
	}
}

// checkFits fails unless every line of table is at most width runes and
// the state, harness and time cells are whole.
func checkFits(t *testing.T, table string, width int) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > width {
			t.Fatalf("a line is %d columns, over %d:\n%s", n, width, table)
		}
	}
	for _, want := range []string{"  restarting  claude  ", "  idle        codex   ", "3m ago", "2h ago", "STATE", "HARNESS", "CREATED", "UPDATED"} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s", want, table)
		}
	}
	if !strings.Contains(table, "Investi") || !strings.Contains(table, "…") {
		t.Fatalf("the long title is not clipped with an ellipsis:\n%s", table)
	}
}

func TestSessionTableFitsWidth(t *testing.T) {
	sessions := longSessions()
	now := time.Now()
	last := func(rpc.Session) string {
		return "#12 completed: " + strings.Repeat("a long final text ", 5)
	}
	for _, width := range []int{120, 100, 80} {
		var b strings.Builder
		if err := render.SessionTable(&b, sessions, now, last, width); err != nil {
			t.Fatal(err)
		}
		checkFits(t, b.String(), width)
		if !strings.Contains(b.String(), "LAST RESULT") || !strings.Contains(b.String(), "#12 comp") {
			t.Fatalf("width %d: the last-result column is gone:\n%s", width, b.String())
		}
	}
	// Width 0 is no bound: the cells as they are (titles at most 40).
	var b strings.Builder
	render.SessionTable(&b, sessions, now, nil, 0)
	if !strings.Contains(b.String(), "investigate-the-race-condition-in-the-ev-672cf0") || !strings.Contains(b.String(), "Investigate the race condition in the e…") {
		t.Fatalf("unbounded table clipped:\n%s", b.String())
	}
}

// session list -o text and --watch fit $COLUMNS when stdout is no
// terminal, else 120 columns.
func TestSessionListFitsColumns(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: longSessions()})
	for _, c := range []struct {
		columns string
		width   int
	}{{"80", 80}, {"", 120}, {"wide", 120}} {
		e, out, _ := cliEnv(t, d, map[string]string{"COLUMNS": c.columns}, nil, "")
		code, stdout := runCLI(t, e, out, "session", "list", "-o", "text")
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, stdout)
		}
		checkFits(t, stdout, c.width)
	}
	got := watchFrames(t, false, map[string]string{"COLUMNS": "100"}, longSessions(), strings.Repeat("a long final text ", 5))
	checkFits(t, got, 100)
	if strings.Count(got, "LAST RESULT") < 2 {
		t.Fatalf("frames:\n%s", got)
	}
}

func TestSessionFetchText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	text := "All done.\nTwo findings:\n- one\n- two"
	off, complete := 0, true
	d.Set(rpc.MethodSessionFetch, rpc.FetchDocument{SchemaVersion: 1, Reason: rpc.ReasonResult, Cursor: "42", Gaps: []rpc.Gap{},
		Sessions: []rpc.FetchSession{{
			Session: rpc.Session{ID: "claude:1111", Alias: "review", Title: "Review", Harness: "claude", State: rpc.StateIdle},
			Events:  []rpc.Event{{Seq: 7, Type: "session.idle", ExecutionSeq: 2, ResultStatus: "completed"}},
			Results: []rpc.Result{{ExecutionSeq: 2, Status: "completed", FinalText: &text, FinalTextOffset: &off, FinalTextComplete: &complete, CompletedAtMS: time.Now().UnixMilli()}},
		}}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "fetch", "review", "-o", "text")
	for _, want := range []string{"review  idle  claude", "event 7 session.idle #2 completed", "result #2 completed", text + "\n", "reason result, cursor 42\n"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("exit %d, text lacks %q:\n%s", code, want, stdout)
		}
	}
	if code != cli.ExitOK || strings.Contains(stdout, `"ok"`) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

// --watch redraws the table on each event and ends on Ctrl-C with 130; on a
// terminal it draws on the alternate screen and restores the terminal.
func TestSessionListWatch(t *testing.T) {
	for _, tty := range []bool{false, true} {
		got := watchOnce(t, tty)
		if strings.Count(got, "LAST RESULT") < 2 || !strings.Contains(got, "#3 completed: LGTM") {
			t.Fatalf("tty=%v frames:\n%q", tty, got)
		}
		if !tty && strings.Contains(got, "\x1b[") {
			t.Fatalf("escape sequences without a terminal: %q", got)
		}
		if tty && (!strings.HasPrefix(got, "\x1b[?1049h\x1b[?25l") || !strings.HasSuffix(got, "\x1b[?25h\x1b[?1049l")) {
			t.Fatalf("terminal not entered and restored: %q", got)
		}
	}
}

func watchOnce(t *testing.T, tty bool) string {
	now := time.Now().UnixMilli()
	return watchFrames(t, tty, nil, []rpc.Session{
		{ID: "claude:1111", Alias: "review", Title: "Review", Harness: "claude", State: rpc.StateIdle, CreatedAtMS: now, UpdatedAtMS: now},
	}, "LGTM")
}

// watchFrames runs session list --watch over sessions (each with a last
// result whose final text is text) until its second frame, then Ctrl-C.
func watchFrames(t *testing.T, tty bool, vars map[string]string, sessions []rpc.Session, text string) string {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: sessions})
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: rpc.Session{ID: "claude:1111"}, Result: &rpc.Result{ExecutionSeq: 3, Status: "completed", FinalText: &text}})
	d.Set(rpc.MethodEventSubscribe, testkit.EventStream{Lines: []string{`{"schema_version":1,"seq":9,"type":"session.idle","session_id":"claude:1111"}`}})
	e, _, errb := cliEnv(t, d, vars, nil, "")
	frames := &lineWriter{n: 9, done: make(chan struct{})}
	if tty {
		frames.n = 8
		e.IsTerminal = func(any) bool { return true }
	}
	e.Stdout = frames
	e.Signals = make(chan os.Signal, 1)
	arrived := frames.done // Write clears the field once it fires
	done := make(chan int, 1)
	go func() { done <- run([]string{"session", "list", "--watch"}, e) }()
	select {
	case <-arrived:
	case code := <-done:
		t.Fatalf("watch ended with %d: %q %q", code, frames.String(), errb)
	case <-time.After(30 * time.Second):
		t.Fatalf("no second frame: %q", frames.String())
	}
	e.Signals <- os.Interrupt
	if code := <-done; code != 130 {
		t.Fatalf("exit %d after Ctrl-C", code)
	}
	return frames.String()
}

func TestDoctorText(t *testing.T) {
	dir := t.TempDir()
	home := dir + "/home"
	os.Mkdir(home, 0o700)
	os.Chmod(home, 0o755)
	e, out, _ := testEnv(t, map[string]string{"DLGT_HOME": home, "PATH": dir}, "")
	code, stdout := runCLI(t, e, out, "doctor", "-o", "text")
	if code != cli.ExitError || !strings.Contains(stdout, "[FAIL] state_dir: "+home+" has mode 0755") ||
		!strings.Contains(stdout, "       fix: chmod 700 "+home+"\n") || !strings.Contains(stdout, "[ok]   harness.claude: ") ||
		!strings.HasSuffix(stdout, " checks failed\n") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

func TestEventsText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodEventRead, []json.RawMessage{
		json.RawMessage(`{"schema_version":1,"seq":5,"type":"session.busy","session_id":"claude:1","execution_seq":2}`),
		json.RawMessage(`{"schema_version":1,"seq":6,"type":"session.blocked","session_id":"claude:1","execution_seq":2,"reason":"permission","tool":"Bash","command":"rm -rf build"}`),
	})
	d.Set(rpc.MethodSessionList, rpc.SessionListResult{Sessions: []rpc.Session{{ID: "claude:1", Alias: "fix", State: "idle"}}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "events", "-o", "text")
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if code != cli.ExitOK || len(lines) != 2 || !strings.HasPrefix(lines[0], "     5  session.busy ") || !strings.HasSuffix(lines[1], "fix (claude:1) #2 permission Bash rm -rf build") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	// The Sessions are listed once for all their events.
	if n := len(d.Params(rpc.MethodSessionList)); n != 1 {
		t.Fatalf("%d session.list calls for 2 events of one Session", n)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if _, stdout := runCLI(t, e, out, "events"); !strings.HasPrefix(stdout, `{"schema_version":1,"seq":5,`) {
		t.Fatalf("default output %q", stdout)
	}
	// A follower stamps each line with the local time it printed it.
	var buf strings.Builder
	if err := render.Event(&buf, []byte(`{"seq":7,"type":"session.idle","session_id":"claude:1"}`), time.Date(2026, 1, 2, 15, 4, 5, 0, time.Local), nil); err != nil || buf.String() != "15:04:05       7  session.idle           claude:1\n" {
		t.Fatalf("followed line %q %v", buf.String(), err)
	}
}

// -o text on the commands that change a Session: a receipt says what
// became of the prompt and prints the command that waits for its result;
// stop, cancel and restart say the state and the execution's end. A bad
// -o value is refused before anything is sent.
func TestControlCommandsText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	session := rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateBusy}
	for _, c := range []struct {
		receipt rpc.Receipt
		want    []string
	}{
		{rpc.Receipt{Session: session, ExecutionSeq: 3, Cursor: "17", Submission: rpc.SubmissionConfirmed},
			[]string{"review  busy  claude  execution #3\n", "prompt  confirmed", "next    dlgt session fetch review --cursor 17 --until result --wait 10m\n"}},
		{rpc.Receipt{Session: session, ExecutionSeq: 3, Cursor: "17", Submission: rpc.SubmissionPending, Replayed: true},
			[]string{"prompt  pending", "same --request-id", "(a replay"}},
		{rpc.Receipt{Session: rpc.Session{ID: "codex:2222", Harness: "codex", State: rpc.StateBusy}, ExecutionSeq: 1, Cursor: "4", Submission: rpc.SubmissionConfirmed},
			[]string{"codex:2222  busy  codex  execution #1\n", "dlgt session fetch codex:2222 --cursor 4 "}},
	} {
		d.Set(rpc.MethodSessionSend, c.receipt)
		d.Set(rpc.MethodSessionCreate, c.receipt)
		for _, args := range [][]string{
			{"session", "send", "review", "--request-id", "r1", "-o", "text", "--", "hello"},
			{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r2", "-o", "text", "--", "hello"},
		} {
			e, out, _ := cliEnv(t, d, nil, nil, "")
			code, stdout := runCLI(t, e, out, args...)
			for _, want := range c.want {
				if code != cli.ExitOK || !strings.Contains(stdout, want) {
					t.Fatalf("%s: exit %d, lacks %q:\n%s", args[1], code, want, stdout)
				}
			}
		}
	}

	msg := "canceled by request"
	d.Set(rpc.MethodSessionCancel, rpc.SessionResult{Session: rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateIdle},
		Cursor: "9", Result: &rpc.Result{ExecutionSeq: 3, Status: rpc.StatusCanceled, Error: &rpc.ResultError{Code: "canceled", Message: msg}}})
	d.Set(rpc.MethodSessionStop, rpc.SessionResult{Session: rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateStopped}})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"session", "cancel", "review", "-o", "text"}, "review  idle  claude\nresult  #3 canceled: canceled by request\ncursor  9\n"},
		{[]string{"session", "stop", "review", "-o", "text"}, "review  stopped  claude\n"},
	} {
		e, out, _ := cliEnv(t, d, nil, nil, "")
		if code, stdout := runCLI(t, e, out, c.args...); code != cli.ExitOK || stdout != c.want {
			t.Fatalf("%s: exit %d\n%s\nwant\n%s", c.args[1], code, stdout, c.want)
		}
	}

	// JSON stays the default, and a bad -o sends nothing.
	e, out, _ := cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "stop", "review"); code != cli.ExitOK || !strings.HasPrefix(stdout, `{"ok":true,"session":{`) {
		t.Fatalf("default output: exit %d %q", code, stdout)
	}
	before := d.Count()
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "send", "review", "--request-id", "r9", "-o", "yaml", "--", "hello"); code != cli.ExitError || !strings.Contains(stdout, "INVALID_ARGUMENT") {
		t.Fatalf("-o yaml: exit %d %q", code, stdout)
	}
	if d.Count() != before {
		t.Fatalf("-o yaml sent %d requests", d.Count()-before)
	}
}

// A cancel with nothing to interrupt answers the Session without a result;
// -o text and the MCP tool say so rather than "canceled", and a real
// cancellation still reads as one.
func TestCancelNothingToCancel(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionCancel, rpc.SessionResult{Session: rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateIdle}})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	want := "review  idle  claude\nresult  none: nothing to cancel, no execution was active (the Session is idle)\n"
	if code, stdout := runCLI(t, e, out, "session", "cancel", "review", "-o", "text"); code != cli.ExitOK || stdout != want {
		t.Fatalf("idle cancel: exit %d\n%s\nwant\n%s", code, stdout, want)
	}
	// JSON is the daemon's answer as it is: no "result" member.
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "cancel", "review"); code != cli.ExitOK || strings.Contains(stdout, `"result"`) {
		t.Fatalf("idle cancel JSON: exit %d %q", code, stdout)
	}
	e, _, _ = cliEnv(t, d, nil, nil, "")
	cs := mcpClient(t, e, 90*time.Second)
	text, _, isErr := callTool(t, cs, "cancel", map[string]any{"session": "review"})
	if isErr || !strings.HasPrefix(text, "Nothing to cancel") || strings.Contains(text, "Canceled") {
		t.Fatalf("MCP idle cancel: %v %q", isErr, text)
	}

	d.Set(rpc.MethodSessionCancel, rpc.SessionResult{Session: rpc.Session{ID: "claude:1111", Alias: "review", Harness: "claude", State: rpc.StateIdle},
		Result: &rpc.Result{ExecutionSeq: 3, Status: rpc.StatusCanceled, Error: &rpc.ResultError{Code: "canceled", Message: "canceled by request"}}})
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "cancel", "review", "-o", "text"); code != cli.ExitOK || strings.Contains(stdout, "nothing to cancel") || !strings.Contains(stdout, "result  #3 canceled") {
		t.Fatalf("real cancel: exit %d\n%s", code, stdout)
	}
	text, _, isErr = callTool(t, cs, "cancel", map[string]any{"session": "review"})
	if isErr || !strings.HasPrefix(text, "Canceled.") {
		t.Fatalf("MCP cancel: %v %q", isErr, text)
	}
}

// A create that claimed a warm spare says so in -o text: the receipt's
// first line and session read's harness line.
func TestWarmText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	s := rpc.Session{ID: "claude:1", Alias: "fix", Harness: "claude", State: rpc.StateBusy, Warm: true}
	d.Set(rpc.MethodSessionCreate, rpc.Receipt{Session: s, ExecutionSeq: 1, Cursor: "2", Submission: rpc.SubmissionConfirmed})
	d.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: s})
	e, out, _ := cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "create", "--harness", "claude", "--request-id", "r", "-o", "text", "--", "go"); code != cli.ExitOK ||
		!strings.HasPrefix(stdout, "fix  busy  claude  execution #1  (on a warm spare)\n") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "session", "read", "fix", "-o", "text"); code != cli.ExitOK || !strings.Contains(stdout, "harness  claude, started on a warm spare\n") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

func TestDaemonStatusText(t *testing.T) {
	var b strings.Builder
	st := rpc.DaemonStatus{Version: "0.1.0-dev", Commit: "0123456789ab", PID: 42, Socket: "/run/d.sock", Home: "/h", UptimeMS: 3_723_400, Connections: 1, Sessions: 2}
	if err := render.DaemonStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	want := "running  dlgt 0.1.0-dev (commit 0123456789ab), pid 42, up 1h2m3s\nholds    2 Sessions, 1 connection open\nsocket   /run/d.sock\nhome     /h\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	// With warm spares: what they are, and what creates found of them.
	b.Reset()
	st.SparesReady, st.SpareClaims, st.SpareMisses, st.SpareShapeMisses = 1, 3, 1, 2
	if err := render.DaemonStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	want += "warm     1 ready, 0 starting (dlgt session warm)\n" +
		"creates  3 claimed a warm spare, 1 found their spares still starting, 2 found spares of another shape only (environment, directory, model or options differ)\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
