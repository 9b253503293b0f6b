package acp_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/acp"
	"github.com/dlgt-dev/dlgt/rpc"
)

// TestACPMeasure prints, per real CLI against its mock (and the fake
// Claude Code), over DLGT_ACP_ROUNDS rounds (default 5):
//   - new: the session/new round trip;
//   - ready: session/new to its warm spare being ready (session.warm);
//   - first: the first prompt to its first agent_message_chunk, with the
//     spare ready (warm) and with no spare (cold);
//   - overhead: a follow-up prompt's round trip over ACP against
//     session.send + WaitResult from the client on the same Session.
//
// It runs only with DLGT_ACP_MEASURE=1: it measures, it does not check.
func TestACPMeasure(t *testing.T) {
	if os.Getenv("DLGT_ACP_MEASURE") != "1" {
		t.Skip("set DLGT_ACP_MEASURE=1 to measure")
	}
	rounds := 5
	fmt.Sscan(os.Getenv("DLGT_ACP_ROUNDS"), &rounds)
	rows := append([]realRow{{name: "fake-claude"}}, realRows...)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			var w *world
			var spec = claude()
			if row.setup != nil {
				env := map[string]string{"PATH": os.Getenv("PATH"), "TERM": "xterm-256color", "GORACE": "atexit_sleep_ms=0"}
				row.setup(t, env, nil)
				w = newWorldEnv(t, env)
				spec = row.spec(false)
			} else {
				w = newWorld(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var newD, readyD, warmD, coldD, acpD, cliD, acpO, cliO []time.Duration
			for i := 0; i < rounds; i++ {
				for _, warm := range []bool{true, false} {
					opts := acp.Options{Launch: spec, Version: "test", WarmSpares: -1}
					if warm {
						opts.WarmSpares = 1
					}
					e := w.connectWith(opts)
					e.initialize(ctx)
					t0 := time.Now()
					id := e.newSession(ctx, w.cwd)
					if warm {
						newD = append(newD, time.Since(t0))
						l, err := w.c.ResolveLaunch(spec)
						if err != nil {
							t.Fatal(err)
						}
						l.Params.Cwd = w.cwd
						wp, _ := l.WarmParams(1)
						for {
							r, err := w.c.SessionWarm(ctx, wp)
							if err != nil {
								t.Fatal(err)
							}
							if r.Ready > 0 {
								break
							}
							time.Sleep(5 * time.Millisecond)
						}
						readyD = append(readyD, time.Since(t0))
					}
					e.stub.mu.Lock()
					n := len(e.stub.updates)
					e.stub.mu.Unlock()
					t1 := time.Now()
					if _, err := e.prompt(ctx, id, fmt.Sprintf("MEASURE-FIRST %d %v", i, warm)); err != nil {
						t.Fatal(err)
					}
					e.stub.mu.Lock()
					first := e.stub.at[n].Sub(t1)
					e.stub.mu.Unlock()
					if warm {
						warmD = append(warmD, first)
					} else {
						coldD = append(coldD, first)
					}
					if !warm {
						// Follow-ups on a ready Session: ACP against the client.
						for k := 0; k < 2; k++ {
							t2 := time.Now()
							if _, err := e.prompt(ctx, id, fmt.Sprintf("MEASURE-ACP %d %d", i, k)); err != nil {
								t.Fatal(err)
							}
							acpD = append(acpD, time.Since(t2))
							acpO = append(acpO, time.Since(t2)-span(t, w, string(id)))
							waitIdle(t, w, string(id))
							t3 := time.Now()
							r, err := w.c.SessionSend(ctx, rpc.SessionSendParams{Session: string(id), Prompt: fmt.Sprintf("MEASURE-CLI %d %d", i, k), RequestID: fmt.Sprintf("m-%d-%d", i, k)})
							if err != nil {
								t.Fatal(err)
							}
							if _, err := w.c.WaitResult(ctx, string(id), r.Cursor, time.Minute); err != nil {
								t.Fatal(err)
							}
							cliD = append(cliD, time.Since(t3))
							cliO = append(cliO, time.Since(t3)-span(t, w, string(id)))
							waitIdle(t, w, string(id))
						}
					}
					if _, err := e.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
						t.Fatal(err)
					}
					e.quit()
				}
			}
			t.Logf("%s: session/new %s; new->spare ready %s; first prompt->first chunk warm %s, cold %s; follow-up round trip ACP %s, client send+wait %s; round trip less the execution's span ACP %s, client %s",
				row.name, stats(newD), stats(readyD), stats(warmD), stats(coldD), stats(acpD), stats(cliD), stats(acpO), stats(cliO))
		})
	}
}

// span is the latest execution's span in the daemon (started to
// completed), so a round trip less it is what the client side and the
// transport added.
func span(t *testing.T, w *world, ref string) time.Duration {
	t.Helper()
	rd, err := w.c.SessionRead(context.Background(), rpc.SessionReadParams{Session: ref})
	if err != nil || rd.Result == nil {
		t.Fatalf("session.read: %v", err)
	}
	return time.Duration(rd.Result.CompletedAtMS-rd.Result.StartedAtMS) * time.Millisecond
}

// waitIdle waits for the Session to be idle again (its turn fully over).
func waitIdle(t *testing.T, w *world, ref string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		rd, err := w.c.SessionRead(context.Background(), rpc.SessionReadParams{Session: ref})
		if err == nil && rd.Session.State == rpc.StateIdle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s did not go idle", ref)
}

// stats is "median (min–max) ms of n".
func stats(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	ms := func(d time.Duration) string {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(d.Microseconds())/1000), ".0")
	}
	return fmt.Sprintf("%s ms (%s–%s, n=%d)", ms(s[len(s)/2]), ms(s[0]), ms(s[len(s)-1]), len(s))
}
