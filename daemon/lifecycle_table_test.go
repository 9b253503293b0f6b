package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The Session lifecycle (lifecycle.go): its table, the refusal of a move
// it does not allow, the moves the real call sites make, and that no other
// file writes a Session's state.

// refusals collects every move the lifecycle refused in this test binary;
// TestMain fails the run on any a test did not take (takeRefusals).
var refusals struct {
	sync.Mutex
	list []string
	uids []string
}

func init() {
	lifecycleRefused = func(uid string, from, to lifecycleState, event string) {
		refusals.Lock()
		defer refusals.Unlock()
		refusals.list = append(refusals.list, fmt.Sprintf("%s: %s -> %s (%s)", uid, from, to, event))
		refusals.uids = append(refusals.uids, uid)
	}
}

// takeRefusals removes and returns the refusals recorded for uid.
func takeRefusals(uid string) []string {
	refusals.Lock()
	defer refusals.Unlock()
	var got []string
	for i := 0; i < len(refusals.uids); {
		if refusals.uids[i] == uid {
			got = append(got, refusals.list[i])
			refusals.list = slices.Delete(refusals.list, i, i+1)
			refusals.uids = slices.Delete(refusals.uids, i, i+1)
			continue
		}
		i++
	}
	return got
}

// unexpectedRefusals reports, for TestMain, the refusals no test took: a
// call site made a move the lifecycle table does not allow.
func unexpectedRefusals() bool {
	refusals.Lock()
	defer refusals.Unlock()
	for _, r := range refusals.list {
		fmt.Fprintln(os.Stderr, "lifecycle: refused transition:", r)
	}
	return len(refusals.list) > 0
}

var allStates = []lifecycleState{stStarting, stIdle, stBusy, stBlocked, stCanceling, stStopping, stRestarting, stStopped, stFailed}

// lifecycleRows is the lifecycle written out by operation, independently
// of the table: every row must be allowed, and every allowed move must be
// some row's.
var lifecycleRows = []struct {
	from  lifecycleState
	op    string
	to    lifecycleState
	event string
}{
	{stStarting, "ready evidence", stIdle, rpc.EventSessionReady},
	{stStarting, "stop --force", stStopping, rpc.EventSessionStopping},
	{stStarting, "launch failed, daemon restart", stFailed, rpc.EventSessionFailed},
	{stRestarting, "ready evidence", stIdle, rpc.EventSessionReady},
	{stRestarting, "stop --force", stStopping, rpc.EventSessionStopping},
	{stRestarting, "launch failed, daemon restart", stFailed, rpc.EventSessionFailed},
	{stIdle, "send, launch prompt, typed turn", stBusy, rpc.EventSessionBusy},
	{stIdle, "restart", stRestarting, rpc.EventSessionRestarting},
	{stIdle, "stop", stStopping, rpc.EventSessionStopping},
	{stIdle, "harness crash", stFailed, rpc.EventSessionFailed},
	{stBusy, "permission dialog", stBlocked, rpc.EventSessionBlocked},
	{stBusy, "turn ended", stIdle, rpc.EventSessionIdle},
	{stBusy, "cancel", stCanceling, rpc.EventSessionCanceling},
	{stBusy, "restart", stRestarting, rpc.EventSessionRestarting},
	{stBusy, "stop --force", stStopping, rpc.EventSessionStopping},
	{stBusy, "harness crash", stFailed, rpc.EventSessionFailed},
	{stBlocked, "activity", stBusy, rpc.EventSessionResumed},
	{stBlocked, "turn ended", stIdle, rpc.EventSessionIdle},
	{stBlocked, "cancel", stCanceling, rpc.EventSessionCanceling},
	{stBlocked, "restart", stRestarting, rpc.EventSessionRestarting},
	{stBlocked, "stop --force", stStopping, rpc.EventSessionStopping},
	{stBlocked, "harness crash", stFailed, rpc.EventSessionFailed},
	{stCanceling, "interrupt proven", stIdle, rpc.EventSessionIdle},
	{stCanceling, "stop --force", stStopping, rpc.EventSessionStopping},
	{stCanceling, "harness crash", stFailed, rpc.EventSessionFailed},
	{stStopping, "second stop", stStopping, rpc.EventSessionStopping},
	{stStopping, "process gone", stStopped, rpc.EventSessionStopped},
	{stStopping, "daemon restart, launch killed", stFailed, rpc.EventSessionFailed},
	{stStopped, "resume, restart", stRestarting, rpc.EventSessionRestarting},
	{stStopped, "stop of a live process", stStopping, rpc.EventSessionStopping},
	{stStopped, "second stop finishing", stStopped, rpc.EventSessionStopped},
	{stStopped, "launch failed after a forced stop", stFailed, rpc.EventSessionFailed},
	{stFailed, "resume, restart", stRestarting, rpc.EventSessionRestarting},
	{stFailed, "stop of a live process", stStopping, rpc.EventSessionStopping},
	{stFailed, "stop finishing after a failed launch", stStopped, rpc.EventSessionStopped},
	{stFailed, "launch failed after a crash", stFailed, rpc.EventSessionFailed},
}

func TestLifecycleTable(t *testing.T) {
	allowed := map[[2]lifecycleState]bool{}
	for _, r := range lifecycleRows {
		ev, ok := transitionEvent(r.from, r.to)
		if !ok || ev != r.event {
			t.Errorf("%s --%s--> %s: allowed %v with %q, want allowed with %q", r.from, r.op, r.to, ok, ev, r.event)
		}
		allowed[[2]lifecycleState{r.from, r.to}] = true
	}
	// Every other pair is refused: the table allows nothing the rows do
	// not name.
	for _, from := range allStates {
		for _, to := range allStates {
			if allowed[[2]lifecycleState{from, to}] {
				continue
			}
			if ev, ok := transitionEvent(from, to); ok {
				t.Errorf("%s -> %s is allowed (%s) but no operation makes it", from, to, ev)
			}
		}
	}
	if n := len(allowed); n < 30 {
		t.Fatalf("only %d moves", n)
	}
	// Some refusals spelled out.
	for _, p := range [][2]lifecycleState{
		{stStopped, stIdle}, {stFailed, stBusy}, {stIdle, stBlocked}, {stIdle, stIdle}, {stIdle, stCanceling},
		{stCanceling, stBusy}, {stCanceling, stRestarting}, {stStarting, stBusy}, {stStarting, stRestarting},
		{stRestarting, stRestarting}, {stStopping, stIdle}, {stStarting, stIdle + "x"},
	} {
		if _, ok := transitionEvent(p[0], p[1]); ok {
			t.Errorf("%s -> %s allowed", p[0], p[1])
		}
	}
	// A state this daemon does not know can only fail.
	if ev, ok := transitionEvent("paused", stFailed); !ok || ev != rpc.EventSessionFailed {
		t.Errorf("unknown -> failed: %v %q", ok, ev)
	}
	if _, ok := transitionEvent("paused", stIdle); ok {
		t.Error("unknown -> idle allowed")
	}
	// Every wire state has its constant, and the table knows them all.
	for _, st := range allStates {
		if _, ok := transitions[st]; !ok {
			t.Errorf("no row for %s", st)
		}
	}
	if len(transitions) != len(allStates) {
		t.Errorf("table has %d states, want %d", len(transitions), len(allStates))
	}
}

// lastEvents returns the types of the events recorded for s after seq.
func lastEvents(t *testing.T, rt *runtime, s *session, after uint64) []string {
	t.Helper()
	evs, err := rt.db.ReadEvents(after, 0, s.uid)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		var ev rpc.Event
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	return types
}

// storedState reads s's state from its stored record.
func storedState(t *testing.T, rt *runtime, s *session) lifecycleState {
	t.Helper()
	recs, err := rt.db.ListSessions()
	if err != nil {
		t.Fatal(err)
	}
	var state lifecycleState
	for _, r := range recs {
		if r.Key != s.uid {
			continue
		}
		var rec sessionRecord
		if err := json.Unmarshal(r.Data, &rec); err != nil {
			t.Fatal(err)
		}
		state = rec.State
	}
	return state
}

// A move the table does not allow changes nothing and says so; so does a
// move announced by the wrong event.
func TestTransitionRefusedChangesNothing(t *testing.T) {
	rt := newFetchRuntime(t)
	s := addSession(t, rt, "refuse")
	s.mu.Lock()
	rt.persistLocked(s)
	before, updated := s.lastEvent, s.rec.UpdatedAtMS
	moved := rt.transitionLocked(s, stBlocked, rpc.Event{Type: rpc.EventSessionBlocked, ExecutionSeq: 1})
	moved2 := rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionResumed})
	state, after := s.rec.State, s.lastEvent
	s.mu.Unlock()
	if moved || moved2 || state != stIdle || after != before || s.rec.UpdatedAtMS != updated {
		t.Fatalf("refused moves: moved %v %v, state %s, events %d -> %d", moved, moved2, state, before, after)
	}
	if got := storedState(t, rt, s); got != stIdle {
		t.Fatalf("stored state %s", got)
	}
	if got := takeRefusals(s.uid); len(got) != 2 {
		t.Fatalf("refusals recorded: %q", got)
	}

	// An acceptance on a Session that is not idle is refused and undone.
	s.mu.Lock()
	s.rec.State = stBlocked
	seq := s.rec.LastExecSeq
	e := s.startExecLocked("p")
	err := rt.acceptExecLocked(s, e, func() { t.Error("provisional ran for a refused acceptance") })
	exec, active, last, state := s.exec, s.rec.ActiveExec, s.rec.LastExecSeq, s.rec.State
	s.mu.Unlock()
	if re, ok := err.(*rpc.Error); !ok || re.Code != rpc.CodeInternal {
		t.Fatalf("refused acceptance: %v", err)
	}
	if exec != nil || active != nil || last != seq || state != stBlocked {
		t.Fatalf("not undone: exec %v active %v seq %d (was %d) state %s", exec, active, last, seq, state)
	}
	if got := takeRefusals(s.uid); len(got) != 1 {
		t.Fatalf("refusals recorded: %q", got)
	}
}

// The moves provider evidence makes (applyEvidence), from each state it
// acts in, and evidence that the call sites' guards ignore.
func TestEvidenceMovesSession(t *testing.T) {
	type setup struct {
		state     lifecycleState
		exec      bool
		canceling bool
	}
	typed := "typed at the terminal"
	own, other := "p", "an earlier turn's prompt"
	for i, c := range []struct {
		in      setup
		ev      harness.Evidence
		applied bool
		want    lifecycleState
		events  []string
	}{
		{setup{state: stStarting}, harness.Evidence{Kind: harness.KindReady}, true, stIdle, []string{rpc.EventSessionReady}},
		{setup{state: stRestarting}, harness.Evidence{Kind: harness.KindReady}, true, stIdle, []string{rpc.EventSessionReady}},
		{setup{state: stStarting, exec: true}, harness.Evidence{Kind: harness.KindReady}, true, stBusy, []string{rpc.EventSessionReady, rpc.EventSessionBusy}},
		{setup{state: stIdle}, harness.Evidence{Kind: harness.KindPromptSubmitted, Prompt: &typed}, true, stBusy, []string{rpc.EventSessionBusy}},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindBlocked, Reason: "permission"}, true, stBlocked, []string{rpc.EventSessionBlocked}},
		{setup{state: stBlocked, exec: true}, harness.Evidence{Kind: harness.KindActivity}, true, stBusy, []string{rpc.EventSessionResumed}},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindStop}, true, stIdle, []string{rpc.EventSessionIdle}},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindStopFailure}, true, stIdle, []string{rpc.EventSessionIdle}},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindInterrupted}, true, stIdle, []string{rpc.EventSessionIdle}},
		{setup{state: stBlocked, exec: true}, harness.Evidence{Kind: harness.KindStop}, true, stIdle, []string{rpc.EventSessionIdle}},
		{setup{state: stCanceling, exec: true, canceling: true}, harness.Evidence{Kind: harness.KindIdlePrompt}, true, stIdle, []string{rpc.EventSessionIdle}},
		{setup{state: stCanceling, exec: true, canceling: true}, harness.Evidence{Kind: harness.KindInterrupted}, true, stIdle, []string{rpc.EventSessionIdle}},
		// Ignored by the guards: nothing moves.
		{setup{state: stIdle}, harness.Evidence{Kind: harness.KindReady}, false, stIdle, nil},
		{setup{state: stStopped}, harness.Evidence{Kind: harness.KindReady}, false, stStopped, nil},
		{setup{state: stIdle}, harness.Evidence{Kind: harness.KindBlocked}, false, stIdle, nil},
		{setup{state: stBlocked, exec: true}, harness.Evidence{Kind: harness.KindBlocked}, false, stBlocked, nil},
		{setup{state: stCanceling, exec: true, canceling: true}, harness.Evidence{Kind: harness.KindBlocked}, false, stCanceling, nil},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindIdlePrompt}, false, stBusy, nil},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindActivity}, false, stBusy, nil},
		{setup{state: stStopped}, harness.Evidence{Kind: harness.KindStop}, false, stStopped, nil},
		// A turn end naming its prompt (Gemini's AfterAgent) ends only
		// the execution of that prompt: a late one for a closed turn
		// leaves the next execution running.
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindStop, Prompt: &own}, true, stIdle, []string{rpc.EventSessionIdle}},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindStop, Prompt: &other}, false, stBusy, nil},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindStopFailure, Prompt: &other}, false, stBusy, nil},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindInterrupted, Prompt: &other}, false, stBusy, nil},
		{setup{state: stBusy, exec: true}, harness.Evidence{Kind: harness.KindInterrupted, Prompt: &own}, true, stIdle, []string{rpc.EventSessionIdle}},
	} {
		name := fmt.Sprintf("%d-%s-%d", i, c.in.state, c.ev.Kind)
		t.Run(name, func(t *testing.T) {
			rt := newFetchRuntime(t)
			s := addSession(t, rt, fmt.Sprintf("ev%d", i))
			g := &generation{launchID: "internal:lc", ready: make(chan struct{}), exited: make(chan struct{})}
			s.mu.Lock()
			s.gen = g
			if c.in.exec {
				s.startExecLocked("p").canceling = c.in.canceling
			}
			s.rec.State = c.in.state // the setup only: tests may write it
			from := s.lastEvent
			s.mu.Unlock()
			c.ev.ProviderID = s.rec.ProviderID
			if got := rt.applyEvidence(s, g.launchID, c.ev); got != c.applied {
				t.Fatalf("applied %v, want %v", got, c.applied)
			}
			s.mu.Lock()
			state := s.rec.State
			s.mu.Unlock()
			if state != c.want {
				t.Fatalf("state %s, want %s", state, c.want)
			}
			if got := lastEvents(t, rt, s, from); !slices.Equal(got, c.events) {
				t.Fatalf("events %q, want %q", got, c.events)
			}
			if c.applied && storedState(t, rt, s) != c.want {
				t.Fatalf("stored state %s, want %s", storedState(t, rt, s), c.want)
			}
		})
	}
}

// The moves the daemon's own operations make: stop, cancel, a crash (and
// a daemon restart), a resume's revive.
func TestOperationsMoveSession(t *testing.T) {
	nonTerminal := []lifecycleState{stStarting, stIdle, stBusy, stBlocked, stCanceling, stRestarting, stStopping}
	for _, from := range nonTerminal {
		t.Run("stop-"+string(from), func(t *testing.T) {
			rt := newFetchRuntime(t)
			s := addSession(t, rt, "stop"+string(from))
			s.mu.Lock()
			s.rec.State = from
			seq := s.lastEvent
			s.mu.Unlock()
			rt.stopSession(s, true, "stopped")
			if got := lastEvents(t, rt, s, seq); s.rec.State != stStopped || !slices.Equal(got, []string{rpc.EventSessionStopping, rpc.EventSessionStopped}) {
				t.Fatalf("state %s, events %q", s.rec.State, got)
			}
		})
		t.Run("fail-"+string(from), func(t *testing.T) {
			rt := newFetchRuntime(t)
			s := addSession(t, rt, "fail"+string(from))
			s.mu.Lock()
			s.rec.State = from
			seq := s.lastEvent
			rt.failLocked(s, "harness_exited", "test")
			state := s.rec.State
			s.mu.Unlock()
			if got := lastEvents(t, rt, s, seq); state != stFailed || !slices.Equal(got, []string{rpc.EventSessionFailed}) {
				t.Fatalf("state %s, events %q", state, got)
			}
		})
	}
	for _, from := range []lifecycleState{stBusy, stBlocked} {
		t.Run("cancel-"+string(from), func(t *testing.T) {
			rt := newFetchRuntime(t)
			s := addSession(t, rt, "cancel"+string(from))
			s.mu.Lock()
			s.startExecLocked("p")
			s.rec.State = from
			seq := s.lastEvent
			s.mu.Unlock()
			_, err := rt.methodOf[rpc.MethodSessionCancel](context.Background(), rpc.Peer{}, json.RawMessage(`{"session":"`+s.rec.ID+`","timeout_ms":0}`))
			if re, ok := err.(*rpc.Error); !ok || re.Code != rpc.CodeCancelTimeout {
				t.Fatalf("cancel: %v", err)
			}
			if got := lastEvents(t, rt, s, seq); s.rec.State != stCanceling || !slices.Equal(got, []string{rpc.EventSessionCanceling}) {
				t.Fatalf("state %s, events %q", s.rec.State, got)
			}
		})
	}
	for _, from := range []lifecycleState{stStopped, stFailed} {
		t.Run("revive-"+string(from), func(t *testing.T) {
			rt := newFetchRuntime(t)
			s := addSession(t, rt, "revive"+string(from))
			s.mu.Lock()
			s.rec.State = from
			seq := s.lastEvent
			s.mu.Unlock()
			if err := rt.revive(s, ""); err != nil {
				t.Fatal(err)
			}
			if got := lastEvents(t, rt, s, seq); s.rec.State != stRestarting || !slices.Equal(got, []string{rpc.EventSessionRestarting}) {
				t.Fatalf("state %s, events %q", s.rec.State, got)
			}
		})
	}
}

// Only lifecycle.go writes a Session's state: no other source file of the
// package assigns to rec.State (or takes its address), or replaces a
// whole record of a live Session.
func TestOnlyLifecycleWritesState(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	isRecState := func(x ast.Expr) bool {
		sel, ok := x.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "State" {
			return false
		}
		switch r := sel.X.(type) {
		case *ast.SelectorExpr:
			return r.Sel.Name == "rec"
		case *ast.Ident:
			return r.Name == "rec"
		}
		return false
	}
	isRec := func(x ast.Expr) bool {
		sel, ok := x.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "rec"
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "lifecycle.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if isRecState(l) || isRec(l) {
						t.Errorf("%s: writes a Session's state outside lifecycle.go", fset.Position(l.Pos()))
					}
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND && isRecState(n.X) {
					t.Errorf("%s: takes the address of a Session's state outside lifecycle.go", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
