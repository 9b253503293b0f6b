package main

import (
	"fmt"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// poll measures the daemon's CPU per fetch that finds nothing new:
// all:true over each count of idle Sessions in -poll-sessions (64 by
// default, the row), and a single Session for comparison.
func (b *bench) poll(c *conn) error {
	for _, n := range b.opts.pollSessions {
		if err := b.pollAt(c, n); err != nil {
			return err
		}
	}
	return nil
}

// pollAt is poll with n Sessions: alternating blocks of polls on one
// connection (each poll returns at once: no wait_ms), each block's daemon
// CPU divided by its polls.
func (b *bench) pollAt(c *conn, pollSessions int) error {
	fmt.Printf("poll with nothing new, %d Sessions, %d rounds of %d all:true and %d single-Session polls:\n",
		pollSessions, b.opts.pollRounds, b.opts.pollsPerRound, b.opts.pollsPerRound)
	if err := b.fillPool(c, pollSessions); err != nil {
		return err
	}
	k, err := dialConn(b.socket)
	if err != nil {
		return err
	}
	defer k.close()
	kinds := []struct {
		name   string
		params map[string]any
	}{
		{"all:true", map[string]any{"all": true}},
		{"single", map[string]any{"session": b.pool[0]}},
	}
	// Baselines: page through until nothing more, keeping the cursor.
	cursors := make([]string, len(kinds))
	for i, kd := range kinds {
		for page := 0; ; page++ {
			if page > 100 {
				return fmt.Errorf("%s enumeration did not end", kd.name)
			}
			var doc rpc.FetchDocument
			if err := k.call(rpc.MethodSessionFetch, withCursor(kd.params, cursors[i]), &doc); err != nil {
				return err
			}
			cursors[i] = doc.Cursor
			if !doc.HasMore {
				break
			}
		}
	}
	time.Sleep(time.Second)                    // the baselines' positions are stored about 100 ms later
	cpu := make([][]time.Duration, len(kinds)) // per block, daemon CPU per poll
	lat := make([][]time.Duration, len(kinds)) // per poll, as the client sees it
	changed := make([]int, len(kinds))         // polls that found something after all
	reasons := make([]map[string]int, len(kinds))
	stopPerf := b.perf(fmt.Sprintf("poll-%d", pollSessions))
	defer stopPerf()
	for r := 0; r < b.opts.pollRounds; r++ {
		for i, kd := range kinds {
			if reasons[i] == nil {
				reasons[i] = map[string]int{}
			}
			c0 := mustCPU(b.daemonPid)
			for p := 0; p < b.opts.pollsPerRound; p++ {
				var doc rpc.FetchDocument
				t := time.Now()
				if err := k.call(rpc.MethodSessionFetch, withCursor(kd.params, cursors[i]), &doc); err != nil {
					return err
				}
				lat[i] = append(lat[i], time.Since(t))
				reasons[i][doc.Reason]++
				for _, s := range doc.Sessions {
					if len(s.Events) > 0 || len(s.Results) > 0 {
						changed[i]++
						break
					}
				}
				cursors[i] = doc.Cursor
			}
			cpu[i] = append(cpu[i], (mustCPU(b.daemonPid)-c0)/time.Duration(b.opts.pollsPerRound))
		}
	}
	stopPerf()
	for i, kd := range kinds {
		fmt.Printf("  %-9s daemon CPU per poll (per block) %s; client round trip %s; reasons %v; polls with news %d\n",
			kd.name, stats(cpu[i]), stats(lat[i]), reasons[i], changed[i])
	}
	b.summarise(fmt.Sprintf("all:true poll, nothing new, %d Sessions: daemon CPU per poll (blocks of %d)", pollSessions, b.opts.pollsPerRound),
		medP99(cpu[0]), "single-Session poll "+medP99(cpu[1]), ratio(float64(median(cpu[0])), float64(median(cpu[1]))), verdict(median(cpu[0]) < 100*time.Microsecond, "< 0.1 ms, flat to 1,000"))
	b.summarise("the same polls: client round trip", medP99(lat[0]), "single-Session "+medP99(lat[1]),
		ratio(float64(median(lat[0])), float64(median(lat[1]))), "–")
	return nil
}

// withCursor is params plus the cursor, when there is one.
func withCursor(params map[string]any, cursor string) map[string]any {
	out := map[string]any{}
	for k, v := range params {
		out[k] = v
	}
	if cursor != "" {
		out["cursor"] = cursor
	}
	return out
}
