package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// The agent-facing guide (`dlgt skill`, cmd/dlgt/skill/SKILL.md) cannot
// drift from the CLI: every command in its sh blocks is run here, as
// written, by sh with the built dlgt binary against a daemon whose Claude
// is the fake harness, and must exit as the guide says: 0 in the guide's
// own order, and the status of each "# exit N, CODE:" line under it in
// the situation CODE names. The placeholders (<session>, <cursor>, …) take
// the values the guide tells the agent to keep from earlier outputs.

const skillGuidePath = "../cmd/dlgt/skill/SKILL.md"

// guideStep is one command of the guide and the failures it documents.
type guideStep struct {
	line   string
	claims []guideClaim
}

type guideClaim struct {
	exit int
	code string // the error code the situation produces
	text string // the guide's line, for messages
}

var (
	guideBlockRE = regexp.MustCompile("(?s)```sh\n(.*?)```")
	guideClaimRE = regexp.MustCompile(`^# exit (\d+), ([A-Z_]+):`)
	guidePlaceRE = regexp.MustCompile(`<[a-z0-9-]+>`)
	guideTextRE  = regexp.MustCompile(`(?m)^reason ([a-z_]+), cursor ([0-9]+)`)
)

// parseGuide returns the commands of the guide's sh blocks in order. A
// line of an sh block is a dlgt command, a claim about the command above
// it, another comment, or blank; anything else fails the test, so every
// command the guide shows is one this test runs.
func parseGuide(t *testing.T, guide string) []guideStep {
	t.Helper()
	var steps []guideStep
	for _, block := range guideBlockRE.FindAllStringSubmatch(guide, -1) {
		for _, line := range strings.Split(block[1], "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "":
			case strings.HasPrefix(line, "dlgt "):
				steps = append(steps, guideStep{line: line})
			case guideClaimRE.MatchString(line):
				m := guideClaimRE.FindStringSubmatch(line)
				if len(steps) == 0 {
					t.Fatalf("claim %q precedes every command", line)
				}
				n, _ := strconv.Atoi(m[1])
				s := &steps[len(steps)-1]
				s.claims = append(s.claims, guideClaim{exit: n, code: m[2], text: line})
			case strings.HasPrefix(line, "#"):
			default:
				t.Fatalf("sh block line %q is neither a dlgt command nor a comment", line)
			}
		}
	}
	return steps
}

// guideRun runs the guide's commands against one daemon.
type guideRun struct {
	t   *testing.T
	td  *testDaemon
	env []string
	cwd string
}

// sh runs line with the placeholders replaced by vals and returns its
// exit status and stdout.
func (g *guideRun) sh(line string, vals map[string]string) (int, string) {
	g.t.Helper()
	cmdline := guidePlaceRE.ReplaceAllStringFunc(line, func(p string) string {
		v, ok := vals[p]
		if !ok {
			g.t.Fatalf("%q: the guide uses %s, which no earlier output gave", line, p)
		}
		return v
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
	cmd.Env, cmd.Dir = g.env, g.cwd
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		g.t.Fatalf("%s: %v", cmdline, err)
	}
	g.t.Logf("$ %s\n[exit %d] %s%s", cmdline, code, clipGuide(string(out)), clipGuide(stderr.String()))
	return code, string(out)
}

var guideResultRE = regexp.MustCompile(`^result #[0-9]+ ([a-z]+) \([^)]*\)( \[final_text from byte [0-9]+, continued in the next fetch\])?$`)

// waitLoop follows the guide's wait: out is the fetch's first output;
// while there is no result line, or the result is continued, it runs the
// fetch again with the cursor kept. It returns the result's status, its
// text joined from the pieces, and how many pieces there were.
func (g *guideRun) waitLoop(line, out string, vals map[string]string) (status, text string, pieces int) {
	g.t.Helper()
	for i := 0; ; i++ {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		last := lines[len(lines)-1]
		m := guideTextRE.FindStringSubmatch(last)
		if m == nil {
			g.t.Fatalf("%s: the last line %q is not 'reason R, cursor C'", line, last)
		}
		g.keep(out, vals)
		if m[1] == "blocked" {
			g.t.Fatalf("%s: reason blocked", line)
		}
		continued := false
		for j, l := range lines[:len(lines)-1] {
			rm := guideResultRE.FindStringSubmatch(l)
			if rm == nil {
				continue
			}
			status, continued = rm[1], rm[2] != ""
			k := j + 1
			for k < len(lines)-1 && (strings.HasPrefix(lines[k], "error ") || strings.HasPrefix(lines[k], "usage ")) {
				k++
			}
			// The text, without the line break the output ends it with.
			text += strings.Join(lines[k:len(lines)-1], "\n")
			pieces++
			break
		}
		if status != "" && !continued {
			return status, text, pieces
		}
		if i == 30 {
			g.t.Fatalf("%s: no whole result after %d fetches", line, i+1)
		}
		var code int
		if code, out = g.sh(line, vals); code != 0 {
			g.t.Fatalf("%s: exit %d", line, code)
		}
	}
}

// killed starts line and kills its process group after d: a client
// whose response is lost at an arbitrary point.
func (g *guideRun) killed(line string, vals map[string]string, d time.Duration) {
	g.t.Helper()
	cmdline := guidePlaceRE.ReplaceAllStringFunc(line, func(p string) string { return vals[p] })
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Env, cmd.Dir = g.env, g.cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	time.Sleep(d)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

func clipGuide(s string) string {
	if len(s) > 600 {
		return s[:600] + "…\n"
	}
	return s
}

// keep takes from a command's output what the guide says to keep: the
// Session id and cursor of a receipt, the cursor of a fetch's last line.
func (g *guideRun) keep(out string, vals map[string]string) {
	var doc struct {
		OK      bool   `json:"ok"`
		Cursor  string `json:"cursor"`
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if json.Unmarshal([]byte(out), &doc) == nil && doc.OK {
		if doc.Session.ID != "" {
			vals["<session>"] = doc.Session.ID
		}
		if doc.Cursor != "" {
			vals["<cursor>"] = doc.Cursor
		}
	}
	if m := guideTextRE.FindAllStringSubmatch(out, -1); len(m) > 0 {
		vals["<cursor>"] = m[len(m)-1][2]
	}
}

func TestSkillGuideCommands(t *testing.T) {
	data, err := os.ReadFile(skillGuidePath)
	if err != nil {
		t.Fatal(err)
	}
	steps := parseGuide(t, string(data))
	if len(steps) < 6 {
		t.Fatalf("only %d commands in the guide", len(steps))
	}
	td := startTestDaemon(t)
	bin := dlgtBinary(t)
	g := &guideRun{t: t, td: td, cwd: t.TempDir()}
	env := map[string]string{}
	for k, v := range td.env {
		env[k] = v
	}
	env["PATH"] = filepath.Dir(bin) + ":" + os.Getenv("PATH")
	env["DLGT_SOCKET"] = td.paths.Socket
	env["DLGT_HOME"] = t.TempDir()
	env["DLGT_NO_AUTOSTART"] = "1"
	for k, v := range env {
		g.env = append(g.env, k+"="+v)
	}
	task, followUp := "Summarise parser.go for me", "Now list the tests it lacks"
	vals := map[string]string{
		"<harness>": "claude", "<dir>": g.cwd, "<title>": "guide test",
		"<request-id>": "guide-task-1", "<request-id-2>": "guide-followup-1",
		"<task>": task, "<follow-up>": followUp,
	}

	// The guide's order, every command exiting 0.
	var lastPrompt, session string
	ran := map[string]bool{}
	for _, s := range steps {
		words := strings.Fields(s.line)
		verb := words[1] + " " + words[2]
		ran[verb] = true
		code, out := g.sh(s.line, vals)
		if code != 0 {
			t.Fatalf("%s: exit %d, the guide expects 0\n%s", s.line, code, out)
		}
		switch verb {
		case "session create", "session send":
			g.keep(out, vals)
			session = vals["<session>"]
			if verb == "session create" {
				lastPrompt = task
			} else {
				lastPrompt = followUp
			}
			// "Run it again unchanged … the same receipt with replayed:true."
			var first, again rpc.Receipt
			json.Unmarshal([]byte(out), &first)
			code, out2 := g.sh(s.line, vals)
			json.Unmarshal([]byte(out2), &again)
			if code != 0 || !again.Replayed || again.Session.ID != first.Session.ID || again.ExecutionSeq != first.ExecutionSeq || first.Session.ID == "" {
				t.Fatalf("%s run again: exit %d, %s; first %s", s.line, code, out2, out)
			}
			if verb == "session create" {
				// "An id reused with a different prompt is refused."
				changed := strings.Replace(s.line, "<task>", "<task> (changed)", 1)
				if code, out := g.sh(changed, vals); code != 1 || !strings.Contains(out, `"code":"INVALID_ARGUMENT"`) {
					t.Fatalf("same request id, another prompt: exit %d, %s", code, out)
				}
			}
		case "session fetch":
			status, text, pieces := g.waitLoop(s.line, out, vals)
			if status != "completed" || pieces != 1 || text != "MOCK-REPLY: "+lastPrompt {
				t.Fatalf("%s: result %s in %d pieces %q, want the reply to %q", s.line, status, pieces, text, lastPrompt)
			}
		case "session read":
			if !strings.Contains(out, "MOCK-REPLY: "+lastPrompt) {
				t.Fatalf("%s: no latest result in\n%s", s.line, out)
			}
		case "session list":
			if !strings.Contains(out, "guide test") {
				t.Fatalf("%s: the Session is not listed\n%s", s.line, out)
			}
		}
	}
	for _, verb := range []string{"session create", "session fetch", "session send", "session stop"} {
		if !ran[verb] {
			t.Errorf("the guide never runs dlgt %s", verb)
		}
	}
	// Each prompt ran once, whatever was repeated; stop left no process.
	r := td.waitState(t, session, rpc.StateStopped)
	busy := 0
	for _, ev := range td.events(t, session) {
		if ev.Type == "session.busy" {
			busy++
		}
	}
	if busy != 2 || r.Result == nil || r.Result.ExecutionSeq != 2 {
		t.Fatalf("%d executions began, latest result %+v; want the task and the follow-up once each", busy, r.Result)
	}

	// A result longer than one fetch, read the guide's way: its pieces
	// joined are the text, byte for byte.
	var fetch string
	for _, s := range steps {
		if strings.HasPrefix(s.line, "dlgt session fetch") {
			fetch = s.line
			break
		}
	}
	var long rpc.Receipt
	td.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "guide long", Harness: "claude", Cwd: g.cwd,
		Prompt: "[[long 20000]]", RequestID: "guide-long-1", Environment: td.env}, &long)
	lv := map[string]string{"<session>": long.Session.ID, "<cursor>": long.Cursor}
	code, out := g.sh(fetch, lv)
	if code != 0 {
		t.Fatalf("%s: exit %d", fetch, code)
	}
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		if i > 1 {
			want.WriteByte('\n')
		}
		fmt.Fprintf(&want, "MOCK-LONG %d", i)
	}
	if status, text, pieces := g.waitLoop(fetch, out, lv); status != "completed" || pieces < 2 || text != want.String() {
		t.Fatalf("long result: %s in %d pieces, %d bytes joined, want %d bytes in 2 or more", status, pieces, len(text), want.Len())
	}
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: long.Session.ID, Force: true}, nil)

	// A lost response: the create is killed at some point of its run
	// (before or after the daemon accepted it), then run again unchanged as
	// the guide says. Either way there is one Session with one execution,
	// and another rerun replays its receipt.
	var create string
	for _, s := range steps {
		if strings.HasPrefix(s.line, "dlgt session create") {
			create = s.line
			break
		}
	}
	for i, d := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond} {
		lost := map[string]string{}
		for k, v := range vals {
			lost[k] = v
		}
		title := fmt.Sprintf("guide lost %d", i)
		lost["<title>"], lost["<request-id>"] = title, fmt.Sprintf("guide-lost-%d", i)
		g.killed(create, lost, d)
		code, out := g.sh(create, lost)
		var first, again rpc.Receipt
		json.Unmarshal([]byte(out), &first)
		code2, out2 := g.sh(create, lost)
		json.Unmarshal([]byte(out2), &again)
		if code != 0 || code2 != 0 || !again.Replayed || again.Session.ID != first.Session.ID || first.Session.ID == "" {
			t.Fatalf("rerun after a lost response: exit %d %s; again exit %d %s", code, out, code2, out2)
		}
		var list rpc.SessionListResult
		td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list)
		n := 0
		for _, ss := range list.Sessions {
			if ss.Title == title {
				n++
			}
		}
		if n != 1 || first.ExecutionSeq != 1 {
			t.Fatalf("%d Sessions titled %q, execution %d: want one, with one execution", n, title, first.ExecutionSeq)
		}
		t.Logf("lost response after %v: the killed create had been accepted: %v", d, first.Replayed)
		td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: first.Session.ID, Force: true}, nil)
	}

	// Each documented failure, in its situation.
	n := 0
	for _, s := range steps {
		for _, c := range s.claims {
			n++
			sv := map[string]string{}
			for k, v := range vals {
				sv[k] = v
			}
			sv["<request-id-2>"] = "guide-claim-" + strconv.Itoa(n)
			id := g.situation(c.code, n)
			sv["<session>"] = id
			code, out := g.sh(s.line, sv)
			if code != c.exit || !strings.Contains(out, `"code":"`+c.code+`"`) {
				t.Errorf("%s (%s): exit %d, %s", s.line, c.text, code, out)
			}
			if c.code == string(rpc.CodeSessionBusy) {
				// "… then rerun this unchanged": once the running prompt
				// has ended, the same command is accepted (a refused
				// request id is not used up).
				td.mustCall(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: id}, nil)
				td.waitState(t, id, rpc.StateIdle)
				if code, out := g.sh(s.line, sv); code != 0 || strings.Contains(out, `"replayed":true`) {
					t.Errorf("%s rerun after the busy prompt ended: exit %d, %s", s.line, code, out)
				}
			}
			// Clean up: stop, interrupting whatever runs.
			td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: true}, nil)
		}
	}
	if n < 4 {
		t.Fatalf("only %d documented failures found", n)
	}

	// "submission":"pending": a harness slow to acknowledge the prompt (the
	// fake's UserPromptSubmit 2 s late, the daemon waiting 300 ms for it).
	// The guide: do not resubmit under a new id; rerun the same command to
	// refresh the receipt, or wait for the result. The task runs once.
	td.stop()
	td.opts.SubmitWait = 300 * time.Millisecond
	td.start()
	slow := *g
	slow.env = append(append([]string{}, g.env...), "FAKECLAUDE_SUBMIT_DELAY_MS=2000")
	pv := map[string]string{}
	for k, v := range vals {
		pv[k] = v
	}
	pv["<title>"], pv["<request-id>"], pv["<task>"] = "guide pending", "guide-pending-1", "a task acknowledged late"
	code, out = slow.sh(create, pv)
	var pending rpc.Receipt
	if json.Unmarshal([]byte(out), &pending); code != 0 || pending.Submission != rpc.SubmissionPending || pending.Session.ID == "" {
		t.Fatalf("create against a slow harness: exit %d, %s; want submission pending", code, out)
	}
	slow.keep(out, pv)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, out := slow.sh(create, pv)
		var again rpc.Receipt
		json.Unmarshal([]byte(out), &again)
		if code != 0 || !again.Replayed || again.Session.ID != pending.Session.ID || again.ExecutionSeq != pending.ExecutionSeq || again.Cursor != pending.Cursor {
			t.Fatalf("rerun of a pending create: exit %d, %s; first %+v", code, out, pending)
		}
		if again.Submission == rpc.SubmissionConfirmed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receipt stayed pending: %s", out)
		}
	}
	code, out = slow.sh(fetch, pv)
	if code != 0 {
		t.Fatalf("%s: exit %d", fetch, code)
	}
	if status, text, _ := slow.waitLoop(fetch, out, pv); status != "completed" || text != "MOCK-REPLY: a task acknowledged late" {
		t.Fatalf("pending task: %s %q", status, text)
	}
	busy = 0
	for _, ev := range td.events(t, pending.Session.ID) {
		if ev.Type == "session.busy" {
			busy++
		}
	}
	if busy != 1 {
		t.Fatalf("the pending task began %d times", busy)
	}
}

// situation makes a Session in the state behind code and returns its id:
// SESSION_BUSY a prompt still running, CANCEL_TIMEOUT one that ignores
// interrupts, SESSION_BLOCKED a turn stopped at a permission prompt (which
// the guide's fetch reports as reason blocked).
func (g *guideRun) situation(code string, n int) string {
	g.t.Helper()
	params := rpc.SessionCreateParams{Title: "situation", Harness: "claude", Cwd: g.cwd,
		RequestID: "guide-situation-" + strconv.Itoa(n), Environment: g.td.env}
	switch code {
	case string(rpc.CodeSessionBusy):
		params.Prompt = "[[slow 60000]] a long task"
	case string(rpc.CodeCancelTimeout):
		// A turn that ignores the interrupt: the cancel is never proved.
		params.Prompt = "[[hang]] a stuck task"
	case string(rpc.CodeSessionBlocked):
		no := false
		params.Prompt, params.AutoApprove, params.HarnessOptions = "[[tool echo hi]] run it", &no, []string{"permission-mode=default"}
	default:
		g.t.Fatalf("the guide documents %s, which this test cannot bring about: add it here", code)
	}
	var r rpc.Receipt
	g.td.accept(g.t, rpc.MethodSessionCreate, params, &r)
	if code == string(rpc.CodeSessionBlocked) {
		// The guide's wait reports it: "reason blocked".
		steps := parseGuide(g.t, mustReadGuide(g.t))
		for _, s := range steps {
			if strings.HasPrefix(s.line, "dlgt session fetch") {
				c, out := g.sh(s.line, map[string]string{"<session>": r.Session.ID, "<cursor>": r.Cursor})
				if c != 0 || !guideTextRE.MatchString(out) || guideTextRE.FindStringSubmatch(out)[1] != "blocked" {
					g.t.Fatalf("%s on a Session at a permission prompt: exit %d\n%s", s.line, c, out)
				}
				break
			}
		}
	} else {
		g.td.waitState(g.t, r.Session.ID, rpc.StateBusy)
	}
	return r.Session.ID
}

func mustReadGuide(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(skillGuidePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
