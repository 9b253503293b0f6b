package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// One delegated round trip, timed: from the moment the leader's model
// answered with a delegate call to the moment the leader's model received
// the counterpart's answer in a tool result. The clocks are the two mock
// model servers (when each request arrived and was answered) and the
// daemon's event stream as a subscriber sees it, all in this process.
//
// The test asserts the order of the timeline (which fails when a step is
// missing or out of place) and logs the breakdown; it never asserts a
// duration. DLGT_AGENTS_ROUNDS=N repeats the round trip N times per
// direction and logs the medians.

const rtTask = "COUNTERPART-RT: answer at once"

// rtLeaderPlan: delegate through the profile rtProfile, wait until the
// result, stop, then answer. before runs when the model is first asked,
// before it answers with the delegate call.
func rtLeaderPlan(before func()) func([]string) (*mockapi.ToolCall, string) {
	tool := func(name string, in map[string]any) *mockapi.ToolCall {
		return &mockapi.ToolCall{Name: "mcp__dlgt__" + name, Input: in}
	}
	return func(results []string) (*mockapi.ToolCall, string) {
		if len(results) == 0 {
			before()
			return tool("delegate", map[string]any{"profile": rtProfile, "prompt": rtTask, "request_id": "rt-1", "title": "round trip"}), ""
		}
		session := lastMatch(agentSessionRe, results[0])
		last := results[len(results)-1]
		switch {
		case strings.Contains(last, "Stopped"):
			return nil, "RT-DONE " + grab(results, agentAnswer)
		case strings.Contains(last, "Execution 1 completed"):
			return tool("stop", map[string]any{"session": session}), ""
		}
		return tool("wait", map[string]any{"session": session, "cursor": lastMatch(agentCursorRe, last)}), ""
	}
}

// eventClock records when this process saw each event of the daemon.
type eventClock struct {
	mu  sync.Mutex
	at  map[string]time.Time    // first arrival of each event type
	by  map[[2]string]time.Time // first arrival of each event type, by session
	err error
}

// followEvents records the daemon's events on socket until the test ends.
func followEvents(t *testing.T, socket string) *eventClock {
	t.Helper()
	ec := &eventClock{at: map[string]time.Time{}, by: map[[2]string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	zero := uint64(0)
	_, next, err := c.Subscribe(ctx, rpc.MethodEventSubscribe, rpc.EventReadParams{After: &zero})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); c.Close(); <-done })
	go func() {
		defer close(done)
		for {
			line, err := next()
			now := time.Now()
			if err != nil {
				return
			}
			var ev rpc.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				ec.mu.Lock()
				ec.err = fmt.Errorf("undecodable event %q: %v", line, err)
				ec.mu.Unlock()
				return
			}
			ec.mu.Lock()
			if _, ok := ec.at[ev.Type]; !ok {
				ec.at[ev.Type] = now
			}
			if k := [2]string{ev.SessionID, ev.Type}; ec.by[k].IsZero() {
				ec.by[k] = now
			}
			ec.mu.Unlock()
		}
	}()
	return ec
}

func (ec *eventClock) get(typ string) time.Time {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.at[typ]
}

// getFor is when session's first event typ arrived (zero: never).
func (ec *eventClock) getFor(session, typ string) time.Time {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.by[[2]string{session, typ}]
}

// rtStep is one step of the timeline and who spends that time.
type rtStep struct {
	name, who string
	d         time.Duration
}

// rtSpareSettle is how long a warm round trip's spare rests after it is
// ready before the leader delegates.
const rtSpareSettle = 2 * time.Second

// rtProfile is the profile the leader delegates through: the counterpart
// harness, with one warm spare in a warm round trip.
const rtProfile = "counterpart"

// roundTrip runs one delegation and returns its steps, in order. warm:
// the profile keeps a warm spare (dlgt mcp asks for it when the leader
// starts it), and the leader's model answers with the delegate call only
// once the spare is ready, as a model that takes a few seconds to decide
// would, and that spare has rested rtSpareSettle; the round trip is timed
// from that answer in both cases.
func roundTrip(t *testing.T, leaderName, counterpart string, warm bool) []rtStep {
	t.Helper()
	r := newAgentRigScript(t, counterpart, mockapi.Script{mockapi.Contains("COUNTERPART-RT", mockapi.Reply{Text: agentAnswer})})
	profiles := filepath.Join(t.TempDir(), "profiles.toml")
	spares := 0
	if warm {
		spares = 1
	}
	if err := os.WriteFile(profiles, fmt.Appendf(nil, "[profiles.%s]\nharness = %q\nwarm = %d\n", rtProfile, counterpart, spares), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env["DLGT_PROFILES"] = profiles
	var spareRSS int64
	before := func() {
		if !warm {
			return
		}
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var st rpc.DaemonStatus
			if err := r.td.call(rpc.DaemonStatusMethod.Name, struct{}{}, &st); err == nil && st.SparesReady > 0 {
				// A spare waits at rest: a CLI still finishing its
				// start after its SessionStart hook would compete
				// with the leader for the CPU, which a spare started
				// seconds or minutes before a delegate does not.
				time.Sleep(rtSpareSettle)
				r.td.call(rpc.DaemonStatusMethod.Name, struct{}{}, &st)
				spareRSS = st.SparesRSSBytes
				return
			}
		}
		t.Errorf("no warm spare was ready within 90 s")
	}
	ec := followEvents(t, r.td.paths.Socket)
	// The counterpart CLI runs through a wrapper that notes when the
	// daemon started it (the first time), then becomes the CLI.
	binVar := "DLGT_" + strings.ToUpper(counterpart) + "_BIN"
	launched := filepath.Join(t.TempDir(), "launched")
	wrapper := filepath.Join(t.TempDir(), counterpart)
	script := fmt.Sprintf("#!/bin/sh\n[ -e %[1]q ] || date +%%s%%N > %[1]q\nexec %[2]q \"$@\"\n", launched, r.env[binVar])
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.env[binVar] = wrapper
	var leader *mockapi.Server
	var out string
	switch leaderName {
	case "claude":
		var lenv map[string]string
		leader, lenv = r.claudeLeader(t, rtLeaderPlan(before))
		args := append([]string{"-p", "LEADER-TASK: round trip", "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
		out = r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)
	case "gemini":
		if counterpart == "claude" {
			claudeKeyHelper(t, r.home)
		}
		var lenv map[string]string
		leader, lenv = r.geminiLeader(t, rtLeaderPlan(before))
		out = r.runLeader(t, lenv, e2eGeminiBin(t), geminiLeaderArgs("LEADER-TASK: round trip")...)
	case "codex":
		var lenv map[string]string
		leader, lenv = r.codexLeader(t, rtLeaderPlan(before))
		name, _, _ := strings.Cut(r.mark, "=")
		fwd := claudeForwardEnv("HOME", name)
		args := append([]string{"exec", "--json", "--skip-git-repo-check"}, r.mcpArgs(t, "codex", fwd...)...)
		out = r.runLeader(t, lenv, e2eCodexBin(t), append(args, "LEADER-TASK: round trip")...)
	}
	if !strings.Contains(out, "RT-DONE "+agentAnswer) {
		t.Fatalf("the leader did not get the answer:\n%s", out)
	}
	if ec.err != nil {
		t.Fatal(ec.err)
	}

	// The leader's turn: the request answered with the delegate call, the
	// ones answered with each next call, and the first to carry the answer.
	var turn []mockapi.Request
	for _, req := range leader.Requests() {
		if strings.HasPrefix(req.Prompt, "LEADER-TASK") && req.Kind != mockapi.KindTitle {
			turn = append(turn, req)
		}
	}
	sort.Slice(turn, func(i, j int) bool { return turn[i].Received.Before(turn[j].Received) })
	answered := -1
	for i, req := range turn {
		if answered < 0 && strings.Contains(strings.Join(req.ToolResults, "\n"), agentAnswer) {
			answered = i
		}
	}
	if len(turn) < 3 || answered < 2 {
		t.Fatalf("leader requests: %d, the answer first in #%d; want the delegate, at least one wait and the answer", len(turn), answered)
	}
	var cpReq *mockapi.Request
	for _, req := range r.cp.Requests() {
		if strings.Contains(req.Prompt, "COUNTERPART-RT") && req.Kind == mockapi.KindPrompt {
			cpReq = &req
			break
		}
	}
	if cpReq == nil {
		t.Fatalf("the counterpart's model never saw the task")
	}
	// The leader's model time between the delegate call and the answer:
	// the requests answered with the calls that follow delegate.
	var leaderModel time.Duration
	for _, req := range turn[1:answered] {
		leaderModel += req.Answered.Sub(req.Received)
	}
	var launchedAt time.Time
	if b, err := os.ReadFile(launched); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			launchedAt = time.Unix(0, ns)
		}
	}
	type mark struct {
		name string
		at   time.Time
	}
	marks := []mark{
		{"leader model answered delegate", turn[0].Answered},
		{"counterpart CLI started", launchedAt},
		{"session.ready (SessionStart hook)", ec.get(rpc.EventSessionReady)},
		{"session.busy", ec.get(rpc.EventSessionBusy)},
		{"counterpart model asked", cpReq.Received},
		{"counterpart model answered", cpReq.Answered},
		{"session.idle", ec.get(rpc.EventSessionIdle)},
		{"leader model got the answer", turn[answered].Received},
	}
	if warm {
		// The spare's CLI started before the delegate: the claim's
		// session.ready follows the delegate call instead.
		if !launchedAt.Before(turn[0].Answered) {
			t.Fatalf("the counterpart CLI started at %v, after the delegate call at %v: no spare served it", launchedAt, turn[0].Answered)
		}
		marks = append(marks[:1], marks[2:]...)
		t.Logf("the warm spare's resident memory: %d MiB", spareRSS>>20)
	}
	for i := 1; i < len(marks); i++ {
		if marks[i].at.IsZero() || marks[i].at.Before(marks[i-1].at) {
			t.Fatalf("timeline out of order: %q at %v before %q at %v", marks[i].name, marks[i].at, marks[i-1].name, marks[i-1].at)
		}
	}
	at := func(name string) time.Time {
		for _, m := range marks {
			if m.name == name {
				return m.at
			}
		}
		return time.Time{}
	}
	span := func(from, to string) time.Duration { return at(to).Sub(at(from)) }
	var steps []rtStep
	if warm {
		steps = append(steps, rtStep{"leader CLI → dlgt mcp → daemon → spare claimed (session.ready)", "leader CLI + dlgt", span("leader model answered delegate", "session.ready (SessionStart hook)")})
	} else {
		steps = append(steps,
			rtStep{"leader CLI → dlgt mcp → daemon → counterpart CLI started", "leader CLI + dlgt", span("leader model answered delegate", "counterpart CLI started")},
			rtStep{"counterpart CLI start until its SessionStart hook", "counterpart CLI", span("counterpart CLI started", "session.ready (SessionStart hook)")})
	}
	return append(steps,
		rtStep{"prompt delivered and confirmed (busy)", "dlgt + counterpart CLI", span("session.ready (SessionStart hook)", "session.busy")},
		rtStep{"counterpart CLI until its model request", "counterpart CLI", span("session.busy", "counterpart model asked")},
		rtStep{"counterpart model", "counterpart model", span("counterpart model asked", "counterpart model answered")},
		rtStep{"counterpart CLI reply → Stop hook → idle", "counterpart CLI + dlgt", span("counterpart model answered", "session.idle")},
		rtStep{"idle → wait returns → leader's next request (incl. leader model " + leaderModel.Round(time.Millisecond).String() + ")", "dlgt + leader CLI + leader model", span("session.idle", "leader model got the answer")},
		rtStep{rtToFirstRequest, "all", span("leader model answered delegate", "counterpart model asked")},
		rtStep{rtRoundTrip, "all", marks[len(marks)-1].at.Sub(marks[0].at)},
	)
}

// The two figures cold and warm are compared on.
const (
	rtToFirstRequest = "delegate → counterpart's first model request"
	rtRoundTrip      = "round trip"
)

// TestAgentsRoundTripTiming times one delegation per direction cold (the
// counterpart CLI starts when the leader delegates) and warm (a spare of
// the profile's launch is claimed), rounds interleaved, and logs both
// timelines' medians and the warm/cold ratios side by side.
func TestAgentsRoundTripTiming(t *testing.T) {
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("DLGT_AGENTS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for _, dir := range []struct{ leader, counterpart string }{{"claude", "codex"}, {"codex", "claude"}, {"claude", "gemini"}, {"gemini", "claude"}} {
		t.Run(dir.leader+"_leads_"+dir.counterpart, func(t *testing.T) {
			all := map[bool][][]rtStep{}
			for i := 0; i < rounds; i++ {
				for _, warm := range []bool{false, true} {
					var steps []rtStep
					t.Run(fmt.Sprintf("%s%d", map[bool]string{false: "cold", true: "warm"}[warm], i), func(t *testing.T) {
						steps = roundTrip(t, dir.leader, dir.counterpart, warm)
					})
					if steps == nil {
						return
					}
					all[warm] = append(all[warm], steps)
				}
			}
			var b strings.Builder
			medians := map[bool]map[string]time.Duration{}
			for _, warm := range []bool{false, true} {
				runs := all[warm]
				medians[warm] = map[string]time.Duration{}
				fmt.Fprintf(&b, "%s leads %s %s, median of %d round trip(s):\n", dir.leader, dir.counterpart, map[bool]string{false: "cold", true: "warm"}[warm], len(runs))
				for j := range runs[0] {
					ds := make([]time.Duration, len(runs))
					for i := range runs {
						ds[i] = runs[i][j].d
					}
					sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
					medians[warm][runs[0][j].name] = ds[len(ds)/2]
					fmt.Fprintf(&b, "  %8s  %-24s %s\n", ds[len(ds)/2].Round(time.Millisecond), runs[0][j].who, runs[0][j].name)
				}
			}
			for _, name := range []string{rtToFirstRequest, rtRoundTrip} {
				cold, warm := medians[false][name], medians[true][name]
				fmt.Fprintf(&b, "  %s: cold %s, warm %s, warm/cold %.2f\n", name, cold.Round(time.Millisecond), warm.Round(time.Millisecond), float64(warm)/float64(cold))
			}
			t.Log(b.String())
		})
	}
}
