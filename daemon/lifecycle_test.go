package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Session runtime invariants (issue 4): stop, restart, cancel, aliases,
// launch failures, busy diagnostics and input validation. Every wait is
// bounded by a generous deadline; no test asserts a duration.

const lifecycleGuard = 30 * time.Second

// envWith returns a copy of the client environment with overrides.
func envWith(base map[string]string, kv ...string) map[string]string {
	env := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

func (td *testDaemon) events(t testing.TB, session string) []rpc.Event {
	t.Helper()
	var evs []rpc.Event
	td.mustCall(rpc.MethodEventRead, rpc.EventReadParams{Session: session}, &evs)
	return evs
}

func eventTypes(evs []rpc.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func hasEvent(evs []rpc.Event, typ string) bool {
	for _, e := range evs {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func (td *testDaemon) read(t testing.TB, session string) rpc.SessionReadResult {
	t.Helper()
	var r rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: session}, &r)
	return r
}

// waitState polls session.read until the Session is in state.
func (td *testDaemon) waitState(t testing.TB, session, state string) rpc.SessionReadResult {
	t.Helper()
	deadline := time.Now().Add(lifecycleGuard)
	for {
		r := td.read(t, session)
		if r.Session.State == state {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s stayed %s, want %s", session, r.Session.State, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitScreen polls scrollback.read until a line contains substr.
func (td *testDaemon) waitScreen(t testing.TB, session, substr string) {
	t.Helper()
	deadline := time.Now().Add(lifecycleGuard)
	for {
		var page rpc.ScrollbackPage
		td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: session}, &page)
		if strings.Contains(strings.Join(page.Lines, "\n"), substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen of %s never showed %q:\n%s", session, substr, strings.Join(page.Lines, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (td *testDaemon) status(t testing.TB) rpc.DaemonStatus {
	t.Helper()
	var st rpc.DaemonStatus
	td.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
	return st
}

// procsIn lists the live (non-zombie) processes whose working directory
// is dir: a fake harness, its hooks and tools all run in the Session's
// cwd.
func procsIn(t testing.TB, dir string) []int {
	t.Helper()
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		want = dir
	}
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || cwd != want {
			continue
		}
		if procState(pid) == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// procState is the state letter of /proc/pid/stat, 0 when gone.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// harnessPIDs lists the fake harnesses running in dir (group leaders
// whose role is claude). Hooks run in groups of their own.
func harnessPIDs(t testing.TB, dir string) []int {
	t.Helper()
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	var out []int
	for _, pid := range procsIn(t, dir) {
		// A hook's /bin/sh inherits the harness's environment; only the
		// harness is this test binary with the claude role.
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		pgid, _ := syscall.Getpgid(pid)
		if exe == self && pgid == pid && bytes.Contains(env, []byte("DLGT_TEST_ROLE=claude\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// harnessPID waits for the one fake harness of a Session.
func harnessPID(t testing.TB, dir string) int {
	t.Helper()
	deadline := time.Now().Add(lifecycleGuard)
	for {
		if pids := harnessPIDs(t, dir); len(pids) == 1 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no harness process runs in %s", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNoProcs waits until no process runs in dir.
func waitNoProcs(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(lifecycleGuard)
	for {
		pids := procsIn(t, dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes leaked in %s: %v", dir, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkInterrupted asserts the latest result is execution seq,
// interrupted, with the error code code.
func checkInterrupted(t testing.TB, r rpc.SessionReadResult, seq uint64, code string) {
	t.Helper()
	res := r.Result
	if res == nil || res.ExecutionSeq != seq || res.Status != rpc.StatusInterrupted || res.Error == nil || res.Error.Code != code {
		t.Fatalf("result = %+v (error %+v), want execution %d interrupted with %q", res, errOf(res), seq, code)
	}
}

func errOf(r *rpc.Result) *rpc.ResultError {
	if r == nil {
		return nil
	}
	return r.Error
}

func TestStopIsNotACrash(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "stop-1", "[[slow 20000]] long work")
	td.waitState(t, r.Session.ID, rpc.StateBusy)
	// Without force, a stop refuses the active execution and changes nothing.
	var stopped rpc.SessionResult
	err := td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, &stopped)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeSessionBusy || !strings.Contains(re.Message, "--force") || re.SessionID != r.Session.ID {
		t.Fatalf("stop without force during a turn: %v, want SESSION_BUSY naming --force", err)
	}
	if rd := td.read(t, r.Session.ID); rd.Session.State != rpc.StateBusy || rd.Result != nil {
		t.Fatalf("a refused stop changed the Session: %+v", rd)
	}
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, Force: true}, &stopped)
	if stopped.Session.State != rpc.StateStopped {
		t.Fatalf("state after stop = %s", stopped.Session.State)
	}
	checkInterrupted(t, td.read(t, r.Session.ID), 1, "stopped")
	evs := td.events(t, r.Session.ID)
	if hasEvent(evs, rpc.EventSessionFailed) {
		t.Fatalf("stop read as a crash: %v", eventTypes(evs))
	}
	got := strings.Join(eventTypes(evs), ",")
	if want := "session.created,session.ready,session.busy,session.stopping,session.stopped"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	waitNoProcs(t, r.Session.Cwd)
}

// A harness that ignores SIGTERM is killed after StopGrace; force kills
// at once. Both end stopped, with an interrupted result, and no process.
func TestStopHungHarness(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run("force="+strconv.FormatBool(force), func(t *testing.T) {
			td := startTestDaemon(t)
			// A stop without force never interrupts a turn, so that case
			// stops an idle harness that has stopped listening to signals.
			prompt := "[[hang]] freeze"
			if !force {
				prompt = "[[deaf]] ignore signals"
			}
			r := td.create(t, "hang-1", prompt)
			if force {
				// The fake ignores signals only once it drew its hung footer.
				td.waitScreen(t, r.Session.ID, "(hung)")
			} else {
				td.waitResult(t, r.Session.ID, r.Cursor)
			}
			pid := harnessPID(t, r.Session.Cwd)
			// The hung harness survives a plain SIGTERM to its group.
			syscall.Kill(-pid, syscall.SIGTERM)
			time.Sleep(100 * time.Millisecond)
			if st := procState(pid); st == 0 || st == 'Z' {
				t.Fatalf("hung harness died of SIGTERM (state %q)", st)
			}
			start := time.Now()
			var stopped rpc.SessionResult
			td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, Force: force}, &stopped)
			t.Logf("stop force=%v took %v (StopGrace 2s)", force, time.Since(start))
			if stopped.Session.State != rpc.StateStopped {
				t.Fatalf("state after stop = %s", stopped.Session.State)
			}
			if st := procState(pid); st != 0 && st != 'Z' {
				t.Fatalf("harness %d still alive (state %q) after stop", pid, st)
			}
			if force {
				checkInterrupted(t, td.read(t, r.Session.ID), 1, "stopped")
			} else if res := td.read(t, r.Session.ID).Result; res == nil || res.Status != rpc.StatusCompleted {
				t.Fatalf("the idle Session's result after stop = %+v", res)
			}
			evs := td.events(t, r.Session.ID)
			if hasEvent(evs, rpc.EventSessionFailed) {
				t.Fatalf("stop read as a crash: %v", eventTypes(evs))
			}
			if last := evs[len(evs)-1]; last.Type != rpc.EventSessionStopped {
				t.Fatalf("last event = %+v", last)
			}
			waitNoProcs(t, r.Session.Cwd)
		})
	}
}

func fetchEpoch(t testing.TB, td *testDaemon, id string) uint64 {
	t.Helper()
	var doc rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": id, "screen": true}, &doc)
	if len(doc.Sessions) != 1 || doc.Sessions[0].Screen == nil {
		t.Fatalf("fetch without screen: %+v", doc)
	}
	return doc.Sessions[0].Screen.Epoch
}

// restart keeps the id, alias and history, starts a new epoch, and
// interrupts active work with "restarted" without reading as a crash.
func TestRestartKeepsIdentityAndIsNotACrash(t *testing.T) {
	td := startTestDaemon(t)
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "restart me", Alias: "@phoenix", Harness: "claude", Cwd: t.TempDir(),
		Prompt: "first turn", RequestID: "rst-1", Environment: td.env,
	}, &r)
	td.waitResult(t, r.Session.ID, r.Cursor)
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: "phoenix", Prompt: "[[slow 20000]] long", RequestID: "rst-2"}, &r2)
	td.waitState(t, r.Session.ID, rpc.StateBusy)
	epoch := fetchEpoch(t, td, r.Session.ID)

	var rs rpc.SessionResult
	td.mustCall(rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: "@phoenix", Environment: td.env}, &rs)
	if rs.Session.ID != r.Session.ID || rs.Session.Alias != "phoenix" || rs.Session.State != rpc.StateIdle || rs.Cursor == "" {
		t.Fatalf("restart = %+v", rs)
	}
	checkInterrupted(t, td.read(t, "@phoenix"), 2, "restarted")
	if e2 := fetchEpoch(t, td, r.Session.ID); e2 <= epoch {
		t.Fatalf("epoch %d -> %d, want a new epoch", epoch, e2)
	}
	evs := td.events(t, r.Session.ID)
	got := strings.Join(eventTypes(evs), ",")
	if hasEvent(evs, rpc.EventSessionFailed) || !strings.HasSuffix(got, "session.busy,session.restarting,session.ready") {
		t.Fatalf("events = %s", got)
	}
	// History: the first turn's reply is still in the scrollback, and the
	// resumed harness shows the conversation.
	td.waitScreen(t, r.Session.ID, "MOCK-REPLY: first turn")
	var r3 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: "phoenix", Prompt: "after restart", RequestID: "rst-3"}, &r3)
	if r3.ExecutionSeq != 3 || r3.Session.ID != r.Session.ID {
		t.Fatalf("send after restart = %+v", r3)
	}
	_, res := td.waitResult(t, r.Session.ID, r3.Cursor)
	if res.Status != rpc.StatusCompleted || *res.FinalText != "MOCK-REPLY: after restart" {
		t.Fatalf("result after restart = %+v", res)
	}
	// The old generation left no harness behind: exactly one runs.
	if pids := harnessPIDs(t, r.Session.Cwd); len(pids) != 1 {
		t.Fatalf("harness processes after restart: %v", pids)
	}
}

func TestCancelIdleIsNoOp(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "ci-1", "hi")
	td.waitResult(t, r.Session.ID, r.Cursor)
	before := td.events(t, r.Session.ID)
	var cr rpc.SessionResult
	td.mustCall(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: r.Session.ID}, &cr)
	if cr.Session.State != rpc.StateIdle || cr.Result != nil {
		t.Fatalf("idle cancel = %+v", cr)
	}
	if after := td.events(t, r.Session.ID); len(after) != len(before) {
		t.Fatalf("idle cancel emitted %v", eventTypes(after[len(before):]))
	}
	if rd := td.read(t, r.Session.ID); rd.Result == nil || rd.Result.Status != rpc.StatusCompleted {
		t.Fatalf("idle cancel changed the result: %+v", rd.Result)
	}
}

func TestCancelBusyTurn(t *testing.T) {
	td := startTestDaemonWith(t, envWith(startTestDaemon(t).env, "FAKECLAUDE_IDLE_MS", "100"))
	r := td.create(t, "cb-1", "[[slow 20000]] long")
	if r.Submission != rpc.SubmissionConfirmed {
		t.Fatalf("submission = %s", r.Submission)
	}
	var cr rpc.SessionResult
	td.mustCall(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: r.Session.ID}, &cr)
	if cr.Session.State != rpc.StateIdle || cr.Result == nil || cr.Result.Status != rpc.StatusCanceled || cr.Result.ExecutionSeq != 1 {
		t.Fatalf("cancel = %+v result %+v", cr, cr.Result)
	}
	evs := td.events(t, r.Session.ID)
	got := strings.Join(eventTypes(evs), ",")
	if want := "session.created,session.ready,session.busy,session.canceling,session.idle"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	if last := evs[len(evs)-1]; last.ResultStatus != rpc.StatusCanceled || last.ExecutionSeq != 1 {
		t.Fatalf("idle event = %+v", last)
	}
	// The Session takes work again.
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "again", RequestID: "cb-2"}, &r2)
	if _, res := td.waitResult(t, r.Session.ID, r2.Cursor); res.Status != rpc.StatusCompleted || res.ExecutionSeq != 2 {
		t.Fatalf("after cancel = %+v", res)
	}
}

func TestCancelTimeoutContinues(t *testing.T) {
	td := startTestDaemonWith(t, envWith(startTestDaemon(t).env, "FAKECLAUDE_IDLE_MS", "3000"))
	r := td.create(t, "ct-1", "[[slow 20000]] long")
	// The fake takes at least 50 ms to tell a lone Esc from an escape
	// sequence, so a 1 ms bound always expires first.
	timeout := int64(1)
	err := td.call(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: r.Session.ID, TimeoutMS: &timeout}, nil)
	if !errors.Is(err, rpc.ErrCancelTimeout) {
		t.Fatalf("cancel = %v, want CANCEL_TIMEOUT", err)
	}
	if st := td.read(t, r.Session.ID).Session.State; st != rpc.StateCanceling {
		t.Fatalf("state after CANCEL_TIMEOUT = %s", st)
	}
	// A send meanwhile is refused as busy.
	if err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "x", RequestID: "ct-2"}, nil); !errors.Is(err, rpc.ErrSessionBusy) {
		t.Fatalf("send while canceling = %v", err)
	}
	// Cancellation completes once the harness reports idle.
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Status != rpc.StatusCanceled || res.ExecutionSeq != 1 {
		t.Fatalf("result = %+v", res)
	}
	rd := td.waitState(t, r.Session.ID, rpc.StateIdle)
	if rd.Result == nil || rd.Result.Status != rpc.StatusCanceled {
		t.Fatalf("read = %+v", rd.Result)
	}
	n := 0
	for _, e := range td.events(t, r.Session.ID) {
		if e.Type == rpc.EventSessionIdle {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d idle events, want 1", n)
	}
}

func TestAliases(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	first := rpc.SessionCreateParams{Title: "review", Alias: "@rev", Harness: "claude", Cwd: cwd, Prompt: "one", RequestID: "al-1", Environment: td.env}
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, first, &r)
	if r.Session.Alias != "rev" {
		t.Fatalf("alias = %q", r.Session.Alias)
	}
	second := rpc.SessionCreateParams{Title: "review 2", Alias: "rev", Harness: "claude", Cwd: cwd, Prompt: "two", RequestID: "al-2", Environment: td.env}
	err := td.call(rpc.MethodSessionCreate, second, nil)
	if !errors.Is(err, rpc.ErrAliasInUse) {
		t.Fatalf("second create = %v, want ALIAS_IN_USE", err)
	}
	if msg := rpc.AsError(err).Message; !strings.Contains(msg, `alias "rev" `) || strings.Contains(msg, "@") {
		t.Fatalf("ALIAS_IN_USE says %q, want the alias plainly", msg)
	}
	if n := td.status(t).Sessions; n != 1 {
		t.Fatalf("daemon holds %d Sessions, want 1", n)
	}
	// The alias resolves with or without @.
	for _, ref := range []string{"rev", "@rev"} {
		if got := td.read(t, ref).Session.ID; got != r.Session.ID {
			t.Fatalf("%s resolved to %s", ref, got)
		}
	}
	td.waitResult(t, "@rev", r.Cursor)
	var stopped rpc.SessionResult
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: "@rev"}, &stopped)
	if stopped.Session.State != rpc.StateStopped {
		t.Fatalf("stop = %+v", stopped)
	}
	// After the first stopped, the alias is free; the refused request id
	// stored nothing, so it may be retried unchanged.
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, second, &r2)
	if r2.Replayed || r2.Session.Alias != "rev" || r2.Session.ID == r.Session.ID {
		t.Fatalf("retry after stop = %+v", r2)
	}
	if got := td.read(t, "@rev").Session.ID; got != r2.Session.ID {
		t.Fatalf("@rev now names %s, want %s", got, r2.Session.ID)
	}
	// The stopped Session is still readable by id.
	if st := td.read(t, r.Session.ID).Session.State; st != rpc.StateStopped {
		t.Fatalf("first Session state = %s", st)
	}

	// Without an alias, one is derived from the title plus a suffix.
	var r3 rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{Title: "My Review: Task #1", Harness: "claude", Cwd: cwd, Prompt: "three", RequestID: "al-3", Environment: td.env}, &r3)
	if !regexp.MustCompile(`^my-review-task-1-[0-9a-f]{6}$`).MatchString(r3.Session.Alias) {
		t.Fatalf("derived alias = %q", r3.Session.Alias)
	}
	if got := td.read(t, "@"+r3.Session.Alias).Session.ID; got != r3.Session.ID {
		t.Fatalf("derived alias resolved to %s", got)
	}
	// The title's start addresses nothing, but the error names the
	// derived alias a person probably meant; a ref no alias starts with
	// gets no suggestion.
	err = td.call(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "my-review-task-1"}, nil)
	if re := wantCode(t, err, rpc.CodeNotFound); !strings.HasSuffix(re.Message, "; did you mean "+r3.Session.Alias+"?") {
		t.Fatalf("error %q does not suggest %s plainly", re.Message, r3.Session.Alias)
	}
	err = td.call(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "my-rev"}, nil)
	if re := wantCode(t, err, rpc.CodeNotFound); strings.Contains(re.Message, "did you mean") {
		t.Fatalf("error %q suggests an alias for a ref none starts with", re.Message)
	}

	// A stopped Session's alias is named as it was typed: "rev", not
	// "@rev"; with the "@" typed, with it.
	td.waitResult(t, r3.Session.ID, r3.Cursor)
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r3.Session.Alias}, nil)
	for _, ref := range []string{r3.Session.Alias, "@" + r3.Session.Alias} {
		err = td.call(rpc.MethodSessionCancel, rpc.SessionCancelParams{Session: ref}, nil)
		re := wantCode(t, err, rpc.CodeNotFound)
		if !strings.Contains(re.Message, "alias "+strconv.Quote(ref)+";") || !strings.Contains(re.Message, r3.Session.ID) {
			t.Fatalf("%s: message %q does not name the alias as typed and the Session", ref, re.Message)
		}
		if ref[0] != '@' && strings.Contains(re.Message, "@") {
			t.Fatalf("%s: message %q adds an @ the client did not type", ref, re.Message)
		}
	}
}

// A derived alias's title part is at most maxAliasSlug characters, cut at
// a word boundary when one is near the bound: 27 characters in all.
func TestSlugAliasBound(t *testing.T) {
	for title, want := range map[string]string{
		"My Review: Task #1": "my-review-task-1",
		"Investigate the race condition in the event subscriber": "investigate-the-race",
		"Fix the flaky test in daemon/fetch_longpoll.go":         "fix-the-flaky-test",
		"race":                                   "race",
		"supercalifragilisticexpialidocious fix": "supercalifragilistic",
		"a supercalifragilisticexpialidocious":   "a-supercalifragilist",
		"!!! ??? ***":                            "session",
		"   --- Title ---   ":                    "title",
	} {
		got := slugAlias(title)
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(want) + `-[0-9a-f]{6}$`).MatchString(got) {
			t.Errorf("slugAlias(%q) = %q, want %s-xxxxxx", title, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const chars = "abc XYZ 019 -_.:/é"
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := rng.IntN(120); n > 0; n-- {
			b.WriteString(string([]rune(chars)[rng.IntN(len([]rune(chars)))]))
		}
		got := slugAlias(b.String())
		if len(got) > maxAliasSlug+7 || !regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`).MatchString(got) {
			t.Fatalf("slugAlias(%q) = %q (%d characters)", b.String(), got, len(got))
		}
	}
}

var launchIDRE = regexp.MustCompile(`^internal:[0-9a-f]+$`)

func checkLaunchFailed(t testing.TB, err error) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeLaunchFailed {
		t.Fatalf("create = %v, want LAUNCH_FAILED", err)
	}
	if !launchIDRE.MatchString(re.LaunchID) || re.SessionID != "" {
		t.Fatalf("launch failure names launch_id=%q session_id=%q", re.LaunchID, re.SessionID)
	}
}

// checkNoSessions asserts nothing of a failed launch is visible.
func checkNoSessions(t testing.TB, td *testDaemon, when string) {
	t.Helper()
	var list rpc.SessionListResult
	td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("%s: session.list all = %+v", when, list.Sessions)
	}
	if n := td.status(t).Sessions; n != 0 {
		t.Fatalf("%s: daemon holds %d Sessions", when, n)
	}
	if evs := td.events(t, ""); len(evs) != 0 {
		t.Fatalf("%s: events = %+v", when, evs)
	}
}

func TestLaunchFailureBeforeBinding(t *testing.T) {
	td := startTestDaemon(t)
	cases := []struct {
		name string
		env  map[string]string
	}{
		{"exits at once", envWith(td.env, "DLGT_CLAUDE_BIN", "/bin/false")},
		{"never ready", envWith(td.env, "FAKECLAUDE_SILENT_HOOKS", "1")},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cwd := t.TempDir()
			p := rpc.SessionCreateParams{
				Title: "doomed", Alias: "doomed", Harness: "claude", Cwd: cwd, Prompt: "hi",
				RequestID: "lf-" + strconv.Itoa(i), StartupTimeoutMS: 3000, Environment: c.env,
			}
			checkLaunchFailed(t, td.call(rpc.MethodSessionCreate, p, nil))
			checkNoSessions(t, td, "after the failure")
			waitNoProcs(t, cwd)
			// Nothing comes back after a daemon restart either.
			td.stop()
			td.start()
			checkNoSessions(t, td, "after a daemon restart")
			// No receipt was stored: the same request id (the environment
			// is not part of the payload) succeeds, and the alias is free.
			p.Environment = td.env
			var r rpc.Receipt
			td.mustCall(rpc.MethodSessionCreate, p, &r)
			if r.Replayed || r.Session.Alias != "doomed" {
				t.Fatalf("retry = %+v", r)
			}
			td.waitResult(t, r.Session.ID, r.Cursor)
			td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, nil)
			td.stop()
			td.start()
		})
		// Each case starts from an empty daemon.
		td = startTestDaemon(t)
	}
}

// A launch that times out says where to look, and the daemon's log has
// the harness's last screen rows (here the fake's banner).
func TestLaunchTimeoutLogsTheScreen(t *testing.T) {
	logs := &logBuffer{}
	td := newTestDaemon(t, fakeClaudeEnv(t))
	td.logTo = logs
	td.start()
	t.Cleanup(td.stop)
	p := rpc.SessionCreateParams{
		Title: "held", Harness: "claude", Cwd: t.TempDir(), Prompt: "hi", RequestID: "held-1",
		StartupTimeoutMS: 1500, Environment: envWith(td.env, "FAKECLAUDE_SILENT_HOOKS", "1"),
	}
	err := td.call(rpc.MethodSessionCreate, p, nil)
	checkLaunchFailed(t, err)
	if !strings.Contains(err.Error(), "the daemon's log has its last screen") {
		t.Fatalf("error %v does not say where to look", err)
	}
	line := grepLines(logs.String(), "did not report ready")
	if !strings.Contains(line, "Welcome to Claude Code") {
		t.Fatalf("the log line lacks the screen: %q", line)
	}
}

// A Session still starting reads as one: state starting, no public id
// before the provider bound it, and its timestamps set.
func TestStartingSessionRead(t *testing.T) {
	td := startTestDaemon(t)
	p := rpc.SessionCreateParams{
		Title: "slow", Alias: "slow", Harness: "claude", Cwd: t.TempDir(), Prompt: "hi", RequestID: "slow-1",
		Environment: envWith(td.env, "FAKECLAUDE_STARTUP_MS", "1500"),
	}
	created := make(chan error, 1)
	go func() { created <- td.call(rpc.MethodSessionCreate, p, nil) }()
	var got struct {
		Session map[string]any `json:"session"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := td.call(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "slow"}, &got); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the starting Session never became readable by its alias")
		}
	}
	s := got.Session
	if s["state"] != "starting" || s["id"] != "" {
		t.Fatalf("starting Session: %v", s)
	}
	if c, u := s["created_at_ms"].(float64), s["updated_at_ms"].(float64); c <= 0 || u < c {
		t.Fatalf("created_at_ms %v, updated_at_ms %v", c, u)
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
}

// A harness that exits on a screen of its own before it is ready (Claude
// Code's first run, offline, prints the screen below and exits 1) gets
// the same log line as a timeout, and an error that names what held it
// without carrying the screen.
func TestLaunchExitLogsTheScreen(t *testing.T) {
	cases := []struct {
		name, screen, hint string
	}{
		{"first run offline", "Welcome to Claude Code v2.1.332\n Unable to connect to Anthropic services\n Failed to connect: EAI_AGAIN\n Check your internet connection and network settings.",
			"Claude Code's first-run setup could not reach Anthropic: run `claude` once in a terminal with network access"},
		{"login", "Welcome to Claude Code v2.1.332\n Select login method:\n ❯ 1. Claude account with subscription · Individual, Team, or Enterprise",
			"Claude Code is not logged in: run `claude` once in a terminal and sign in"},
		{"unknown", "Welcome to Claude Code v2.1.332\n something else went wrong", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := &logBuffer{}
			td := newTestDaemon(t, fakeClaudeEnv(t))
			td.logTo = logs
			td.start()
			t.Cleanup(td.stop)
			p := rpc.SessionCreateParams{
				Title: "early", Harness: "claude", Cwd: t.TempDir(), Prompt: "hi", RequestID: "early-" + strconv.Itoa(i),
				Environment: envWith(td.env, "FAKECLAUDE_EXIT_SCREEN", c.screen),
			}
			err := td.call(rpc.MethodSessionCreate, p, nil)
			checkLaunchFailed(t, err)
			msg := err.(*rpc.Error).Message
			if !strings.Contains(msg, "the harness exited before it was ready (exit 1; the daemon's log has its last screen)") {
				t.Fatalf("error %q does not say where to look", msg)
			}
			if c.hint != "" && !strings.Contains(msg, "; "+c.hint) {
				t.Fatalf("error %q lacks the hint %q", msg, c.hint)
			}
			if c.hint == "" && strings.Count(msg, ";") != 1 {
				t.Fatalf("error %q hints at an unknown screen", msg)
			}
			if strings.Contains(msg, "Welcome") || strings.Contains(msg, "EAI_AGAIN") || strings.Contains(msg, "something else") {
				t.Fatalf("error %q carries terminal output", msg)
			}
			line := grepLines(logs.String(), "exited before it was ready")
			last := c.screen[strings.LastIndex(c.screen, "\n")+1:]
			if !strings.Contains(line, "exit 1") || !strings.Contains(line, strings.TrimSpace(last)) {
				t.Fatalf("the log line lacks the exit or the screen: %q", line)
			}
		})
	}
}

func TestScreenTail(t *testing.T) {
	rows := []string{"a", "  ", "b  ", "", "c", ""}
	for _, c := range []struct {
		n, max int
		want   string
	}{
		{8, 100, "a | b | c"}, {2, 100, "b | c"}, {8, 5, "…b | c"}, {8, 1, "…c"},
	} {
		if got := screenTail(rows, c.n, c.max); got != c.want {
			t.Errorf("screenTail(%d, %d) = %q, want %q", c.n, c.max, got, c.want)
		}
	}
	if got := screenTail([]string{"ab€"}, 1, 2); got != "…" {
		t.Errorf("a cut inside a rune: %q", got)
	}
}

func TestBusyDiagnostics(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "bd-1", "[[slow 3000]] spin")
	type snap struct {
		Session map[string]json.RawMessage `json:"session"`
	}
	num := func(m map[string]json.RawMessage, k string) (int64, bool) {
		v, ok := m[k]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			t.Fatalf("%s = %s", k, v)
		}
		return n, true
	}
	var s snap
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &s)
	if string(s.Session["state"]) != `"busy"` {
		t.Fatalf("state = %s", s.Session["state"])
	}
	busy, ok1 := num(s.Session, "busy_for_ms")
	quiet, ok2 := num(s.Session, "pty_quiet_for_ms")
	if !ok1 || !ok2 || busy < 0 || quiet < 0 || quiet > busy {
		t.Fatalf("busy diagnostics busy=%d(%v) quiet=%d(%v)", busy, ok1, quiet, ok2)
	}
	var list struct {
		Sessions []map[string]json.RawMessage `json:"sessions"`
	}
	td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{}, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("list = %v", list)
	}
	if _, ok := num(list.Sessions[0], "busy_for_ms"); !ok && string(list.Sessions[0]["state"]) == `"busy"` {
		t.Fatalf("busy list entry without busy_for_ms: %v", list.Sessions[0])
	}
	td.waitResult(t, r.Session.ID, r.Cursor)
	td.waitState(t, r.Session.ID, rpc.StateIdle)
	s = snap{} // decoding into a used map would merge keys
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &s)
	for _, k := range []string{"busy_for_ms", "pty_quiet_for_ms"} {
		if _, ok := s.Session[k]; ok {
			t.Fatalf("idle Session carries %s: %v", k, s.Session)
		}
	}
	list.Sessions = nil
	td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{}, &list)
	for _, k := range []string{"busy_for_ms", "pty_quiet_for_ms"} {
		if _, ok := list.Sessions[0][k]; ok {
			t.Fatalf("idle list entry carries %s", k)
		}
	}
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID}, nil)
	s = snap{}
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &s)
	if _, ok := s.Session["busy_for_ms"]; ok {
		t.Fatalf("stopped Session carries busy_for_ms")
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	td := startTestDaemon(t)
	cwd := t.TempDir()
	valid := func() rpc.SessionCreateParams {
		return rpc.SessionCreateParams{Title: "bad", Harness: "claude", Cwd: cwd, Prompt: "hi", RequestID: "bad-1", Environment: td.env}
	}
	cases := []struct {
		name, field string
		mod         func(*rpc.SessionCreateParams)
	}{
		{"unknown harness", "harness", func(p *rpc.SessionCreateParams) { p.Harness = "nope" }},
		{"relative cwd", "cwd", func(p *rpc.SessionCreateParams) { p.Cwd = "rel/dir" }},
		{"empty prompt", "prompt", func(p *rpc.SessionCreateParams) { p.Prompt = "" }},
		{"escape in prompt", "prompt", func(p *rpc.SessionCreateParams) { p.Prompt = "hi\x1b[201~\r/exit\r" }},
		{"long request id", "request_id", func(p *rpc.SessionCreateParams) { p.RequestID = strings.Repeat("r", 129) }},
		{"managed option", "harness_options", func(p *rpc.SessionCreateParams) { p.HarnessOptions = []string{"session-id=x"} }},
	}
	for _, c := range cases {
		p := valid()
		c.mod(&p)
		err := td.call(rpc.MethodSessionCreate, p, nil)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument {
			t.Fatalf("%s: %v, want INVALID_ARGUMENT", c.name, err)
		}
		if re.Field != "" && !strings.HasPrefix(re.Field, c.field) {
			t.Errorf("%s: field %q, want %q", c.name, re.Field, c.field)
		}
		checkNoSessions(t, td, c.name)
		if pids := procsIn(t, cwd); len(pids) != 0 {
			t.Fatalf("%s started processes %v", c.name, pids)
		}
	}
	// No receipt was stored under bad-1 by any refusal.
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, valid(), &r)
	if r.Replayed {
		t.Fatalf("receipt replayed after refusals: %+v", r)
	}
	// Sends too: bad input on an existing Session changes nothing.
	td.waitResult(t, r.Session.ID, r.Cursor)
	before := td.events(t, r.Session.ID)
	for _, p := range []rpc.SessionSendParams{
		{Session: r.Session.ID, Prompt: "", RequestID: "bs-1"},
		{Session: r.Session.ID, Prompt: "a\x1bb", RequestID: "bs-1"},
		{Session: r.Session.ID, Prompt: "ok", RequestID: strings.Repeat("s", 129)},
		{Session: r.Session.ID, Prompt: "ok", RequestID: "bs-1", Cwd: "/"},
	} {
		if err := td.call(rpc.MethodSessionSend, p, nil); !errors.Is(err, rpc.ErrInvalidArgument) {
			t.Fatalf("send %+v = %v", p, err)
		}
	}
	if after := td.events(t, r.Session.ID); len(after) != len(before) {
		t.Fatalf("refused sends emitted %v", eventTypes(after[len(before):]))
	}
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "ok", RequestID: "bs-1"}, &r2)
	if r2.Replayed || r2.ExecutionSeq != 2 {
		t.Fatalf("send after refusals = %+v", r2)
	}
}
