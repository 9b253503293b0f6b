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

	"github.com/dlgt-dev/dlgt/internal/harnesstest/mockapi"
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

// rtLeaderPlan: delegate, wait until the result, stop, then answer.
func rtLeaderPlan(harness string) func([]string) (*mockapi.ToolCall, string) {
	tool := func(name string, in map[string]any) *mockapi.ToolCall {
		return &mockapi.ToolCall{Name: "mcp__dlgt__" + name, Input: in}
	}
	return func(results []string) (*mockapi.ToolCall, string) {
		if len(results) == 0 {
			return tool("delegate", map[string]any{"harness": harness, "prompt": rtTask, "request_id": "rt-1", "title": "round trip"}), ""
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
	at  map[string]time.Time // first arrival of each event type
	err error
}

func followEvents(t *testing.T, socket string) *eventClock {
	t.Helper()
	ec := &eventClock{at: map[string]time.Time{}}
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

// rtStep is one step of the timeline and who spends that time.
type rtStep struct {
	name, who string
	d         time.Duration
}

// roundTrip runs one delegation and returns its steps, in order.
func roundTrip(t *testing.T, leaderName, counterpart string) []rtStep {
	t.Helper()
	r := newAgentRigScript(t, counterpart, mockapi.Script{mockapi.Contains("COUNTERPART-RT", mockapi.Reply{Text: agentAnswer})})
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
		leader, lenv = r.claudeLeader(t, rtLeaderPlan(counterpart))
		args := append([]string{"-p", "LEADER-TASK: round trip", "--output-format", "json", "--strict-mcp-config"}, r.mcpArgs(t, "claude")...)
		out = r.runLeader(t, lenv, lenv["DLGT_CLAUDE_BIN"], args...)
	case "gemini":
		if counterpart == "claude" {
			claudeKeyHelper(t, r.home)
		}
		var lenv map[string]string
		leader, lenv = r.geminiLeader(t, rtLeaderPlan(counterpart))
		out = r.runLeader(t, lenv, e2eGeminiBin(t), geminiLeaderArgs("LEADER-TASK: round trip")...)
	case "codex":
		var lenv map[string]string
		leader, lenv = r.codexLeader(t, rtLeaderPlan(counterpart))
		name, _, _ := strings.Cut(r.mark, "=")
		fwd := []string{"--forward-env", "HOME", "--forward-env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "--forward-env", name}
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
	marks := []struct {
		name string
		at   time.Time
	}{
		{"leader model answered delegate", turn[0].Answered},
		{"counterpart CLI started", launchedAt},
		{"session.ready (SessionStart hook)", ec.get(rpc.EventSessionReady)},
		{"session.busy", ec.get(rpc.EventSessionBusy)},
		{"counterpart model asked", cpReq.Received},
		{"counterpart model answered", cpReq.Answered},
		{"session.idle", ec.get(rpc.EventSessionIdle)},
		{"leader model got the answer", turn[answered].Received},
	}
	for i := 1; i < len(marks); i++ {
		if marks[i].at.IsZero() || marks[i].at.Before(marks[i-1].at) {
			t.Fatalf("timeline out of order: %q at %v before %q at %v", marks[i].name, marks[i].at, marks[i-1].name, marks[i-1].at)
		}
	}
	between := func(i int) time.Duration { return marks[i+1].at.Sub(marks[i].at) }
	return []rtStep{
		{"leader CLI → dlgt mcp → daemon → counterpart CLI started", "leader CLI + dlgt", between(0)},
		{"counterpart CLI start until its SessionStart hook", "counterpart CLI", between(1)},
		{"prompt delivered and confirmed (busy)", "dlgt + counterpart CLI", between(2)},
		{"counterpart CLI until its model request", "counterpart CLI", between(3)},
		{"counterpart model", "counterpart model", between(4)},
		{"counterpart CLI reply → Stop hook → idle", "counterpart CLI + dlgt", between(5)},
		{"idle → wait returns → leader's next request (incl. leader model " + leaderModel.Round(time.Millisecond).String() + ")", "dlgt + leader CLI + leader model", between(6)},
		{"round trip", "all", marks[len(marks)-1].at.Sub(marks[0].at)},
	}
}

func TestAgentsRoundTripTiming(t *testing.T) {
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("DLGT_AGENTS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for _, dir := range []struct{ leader, counterpart string }{{"claude", "codex"}, {"codex", "claude"}, {"claude", "gemini"}, {"gemini", "claude"}} {
		t.Run(dir.leader+"_leads_"+dir.counterpart, func(t *testing.T) {
			var all [][]rtStep
			for i := 0; i < rounds; i++ {
				var steps []rtStep
				t.Run(fmt.Sprint("round", i), func(t *testing.T) { steps = roundTrip(t, dir.leader, dir.counterpart) })
				if steps == nil {
					return
				}
				all = append(all, steps)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s leads %s, median of %d round trip(s):\n", dir.leader, dir.counterpart, len(all))
			for j := range all[0] {
				ds := make([]time.Duration, len(all))
				for i := range all {
					ds[i] = all[i][j].d
				}
				sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
				fmt.Fprintf(&b, "  %8s  %-24s %s\n", ds[len(ds)/2].Round(time.Millisecond), all[0][j].who, all[0][j].name)
			}
			t.Log(b.String())
		})
	}
}
