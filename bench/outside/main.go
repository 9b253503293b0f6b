// Command outside measures dlgt from outside, as a client process sees
// it, against a real daemon (`dlgt daemon`) running the fake Claude Code
// (harnesstest/fakeclaude) as its harness. Run it through
// scripts/bench-outside.sh, which builds what it needs. Contenders are
// interleaved in every round, so drift on a shared machine hits them
// alike. It prints medians and p99s:
//
//   - hook forwarder: whole-process time of `dlgt-hook`, `dlgt hook` and
//     /bin/true (the peer), each given a Stop payload on stdin and (the
//     first two) delivering it to the daemon's hook socket, and of
//     dlgt-hook refusing an empty command line (its start alone);
//   - create → confirmed receipt, and the harness's own start-to-ready
//     (the same fake harness started standalone under a PTY, until it
//     starts its SessionStart hook), and their difference: what dlgt adds;
//   - send → confirmed receipt on an idle Session;
//   - Stop hook → the client holds the fetch response, 1 waiter: from the
//     moment the harness starts its Stop hook (before it starts the
//     hook's shell; the harness stamps it) to the long poll's answer;
//   - the same with 1,000 waiters (waiters.go);
//   - ingest of 50 MiB: throughput and CPU per MiB against tmux and a raw
//     PTY read (ingest.go);
//   - daemon CPU of an all:true poll with nothing new over 64 Sessions
//     (poll.go);
//   - RPC latency of a quiet Session while another prints a 5 MB line or
//     floods, against tmux commands while a pane does (neighbour.go);
//   - daemon CPU with 16 idle Sessions against a tmux server holding 16
//     idle panes (idle.go).
//
// -rows selects rows; a summary table closes the run. Daemon and tmux
// server CPU are read from /proc (cpuTime).
//
// The harness is harnesstest/benchclaude: the fake Claude Code,
// stamping the timed hooks as it starts them and running the stamp
// program as their forwarder (bench/outside/stamp), and a stream it
// prints on SIGUSR1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/pty"
	"github.com/dlgt-dev/dlgt/rpc"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "outside:", err)
		os.Exit(1)
	}
}

type bench struct {
	bin    string // directory holding dlgt, dlgt-hook, stamp, benchclaude
	claude string
	work   string
	socket string
	hooks  string
	env    map[string]string // the client environment sent with create
	stamps string            // the daemon-run harness's stamp file

	daemonPid                int
	summary                  []summaryRow
	pool                     []string // idle Sessions kept for the idle, poll and neighbour rows
	seq                      int      // request ids
	waiterBytes, waiterLines int      // answers read by the waiters row
	stream                   string   // the 50 MiB ingest stream file, made on first use
	opts                     options
}

// options are the per-row knobs.
type options struct {
	waiterRounds, ingestRounds, pollRounds, pollsPerRound, neighbourRounds, idleRounds int
	idleWindow                                                                         time.Duration
	perfDir                                                                            string
	pollSessions                                                                       []int
}

func run() error {
	bin := flag.String("bin", "", "directory with the dlgt, dlgt-hook, stamp and benchclaude binaries (scripts/bench-outside.sh builds them)")
	rounds := flag.Int("rounds", 30, "create/send/stop rounds")
	hookRounds := flag.Int("hook-rounds", 300, "rounds of the hook forwarder timing")
	old := flag.String("old-dlgt", "", "an older dlgt binary whose `dlgt hook` joins the forwarder contenders")
	keep := flag.Bool("keep", false, "keep the work directory (the daemon's log) and print its path")
	rowsFlag := flag.String("rows", strings.Join(allRows, ","), "rows to measure, comma-separated: "+strings.Join(allRows, ","))
	var o options
	flag.IntVar(&o.waiterRounds, "waiter-rounds", 10, "waiters: rounds, each a 1-waiter and a 1,000-waiter Stop")
	flag.IntVar(&o.ingestRounds, "ingest-rounds", 5, "ingest: rounds of raw PTY, tmux and dlgt")
	flag.IntVar(&o.pollRounds, "poll-rounds", 10, "poll: rounds, each a block of all:true and of single-Session polls")
	flag.IntVar(&o.pollsPerRound, "polls", 200, "poll: polls per block")
	pollCounts := flag.String("poll-sessions", "64", "poll: Session counts, comma-separated and ascending (each Session is one more harness process)")
	flag.IntVar(&o.neighbourRounds, "neighbour-rounds", 3, "neighbour: rounds of each phase")
	flag.IntVar(&o.idleRounds, "idle-rounds", 3, "idle: windows")
	flag.DurationVar(&o.idleWindow, "idle-window", 10*time.Second, "idle: length of a window")
	flag.StringVar(&o.perfDir, "perf", "", "record `perf` profiles of the daemon during the ingest, poll, neighbour and idle rows into this directory")
	flag.Parse()
	if *bin == "" {
		return errors.New("-bin is required")
	}
	rows, err := parseRows(*rowsFlag)
	if err != nil {
		return err
	}
	if o.pollSessions, err = parseCounts(*pollCounts); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "dlgt-bench-")
	if err != nil {
		return err
	}
	if *keep {
		defer fmt.Println("\nwork directory kept:", work)
	} else {
		defer os.RemoveAll(work)
	}
	b := &bench{bin: *bin, claude: filepath.Join(*bin, "benchclaude"), work: work, stamps: filepath.Join(work, "stamps"), opts: o}
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	b.socket = filepath.Join(home, "dlgt.sock")
	b.hooks = b.socket + ".hooks"
	dargs := []string{"daemon"}
	if *keep {
		dargs = append(dargs, "--debug") // the log shows each delivery's wait
	}
	daemon := exec.Command(filepath.Join(*bin, "dlgt"), dargs...)
	daemon.Env = append(os.Environ(), "DLGT_HOME="+home, "DLGT_SOCKET="+b.socket)
	logf, err := os.Create(filepath.Join(work, "daemon.log"))
	if err != nil {
		return err
	}
	daemon.Stderr = logf
	if err := daemon.Start(); err != nil {
		return err
	}
	defer func() {
		daemon.Process.Signal(os.Interrupt)
		daemon.Wait()
	}()
	if err := waitSocket(b.socket, 10*time.Second); err != nil {
		return err
	}
	b.daemonPid = daemon.Process.Pid
	b.env = map[string]string{
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  home,
		"TERM":                  "xterm-256color",
		"DLGT_CLAUDE_BIN":       b.claude,
		"DLGT_BENCH_STAMP_BIN":  filepath.Join(*bin, "stamp"),
		"DLGT_BENCH_STAMPS":     b.stamps,
		"FAKECLAUDE_STARTUP_MS": "0",
	}
	var sel []string
	for _, r := range allRows {
		if rows[r] {
			sel = append(sel, r)
		}
	}
	hooks := "the forwarder over the hook socket"
	if os.Getenv("DLGT_HOOKS") == "http" {
		// The daemon inherits it: Claude's hooks other than SessionStart
		// are posted, and their stamp and line-sent stamp are one moment.
		hooks = "DLGT_HOOKS=http (the fake Claude posts all but SessionStart)"
	}
	fmt.Printf("dlgt outside-in benchmark, rows %s; hooks: %s; load average at start %s\n\n", strings.Join(sel, ","), hooks, loadAvg())
	start := time.Now()
	if rows["hook"] {
		if err := b.hookForwarder(*hookRounds, *old); err != nil {
			return err
		}
	}
	if rows["create"] || rows["send"] || rows["hook"] {
		fmt.Printf("create, send, Stop → fetch: %d rounds\n", *rounds)
		if err := b.sessions(*rounds, rows); err != nil {
			return err
		}
	}
	c, err := dialConn(b.socket)
	if err != nil {
		return err
	}
	defer c.close()
	steps := []struct {
		row string
		run func(*conn) error
	}{
		{"waiters", b.waiters},
		{"ingest", b.ingest},
		{"idle", b.idle},
		{"poll", b.poll},
		{"neighbour", b.neighbour},
	}
	for _, s := range steps {
		if !rows[s.row] {
			continue
		}
		t := time.Now()
		if err := s.run(c); err != nil {
			return fmt.Errorf("%s: %w", s.row, err)
		}
		fmt.Printf("  (%s row: %.0f s, load average %s; daemon %s)\n\n", s.row, time.Since(t).Seconds(), loadAvg(), memOf(b.daemonPid))
	}
	fmt.Printf("whole run %.0f s; load average at the end %s\n\n", time.Since(start).Seconds(), loadAvg())
	b.printSummary()
	return nil
}

func waitSocket(path string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := rpc.Dial(context.Background(), path); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("no daemon on %s after %v", path, d)
}

// hookForwarder times whole processes, interleaved: /bin/true, dlgt-hook,
// dlgt hook (and an older dlgt hook), each with a Stop payload on stdin.
func (b *bench) hookForwarder(rounds int, old string) error {
	payload := []byte(`{"session_id":"00000000-0000-4000-8000-000000000000","hook_event_name":"Stop","last_assistant_message":"bench"}`)
	pf := filepath.Join(b.work, "payload.json")
	if err := os.WriteFile(pf, payload, 0o600); err != nil {
		return err
	}
	fwd := []string{"--socket", b.hooks, "--launch", "internal:000000000000", "Stop"}
	type contender struct {
		name     string
		argv     []string
		d        []time.Duration
		complain bool // prints a usage error: start and exit only
	}
	cs := []*contender{
		{name: "/bin/true", argv: []string{"/bin/true"}},
		{name: "dlgt-hook", argv: append([]string{filepath.Join(b.bin, "dlgt-hook")}, fwd...)},
		// No arguments: the process starts, refuses its usage and exits;
		// what separates it from the line above is the delivery.
		{name: "dlgt-hook start", argv: []string{filepath.Join(b.bin, "dlgt-hook")}, complain: true},
		{name: "dlgt hook", argv: append([]string{filepath.Join(b.bin, "dlgt"), "hook"}, fwd...)},
	}
	if old != "" {
		cs = append(cs, &contender{name: "older dlgt hook", argv: append([]string{old, "hook"}, fwd...)})
	}
	for r := 0; r < rounds+10; r++ {
		for _, c := range cs {
			in, err := os.Open(pf)
			if err != nil {
				return err
			}
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Stdin = in
			var stderr strings.Builder
			cmd.Stderr = &stderr
			start := time.Now()
			err = cmd.Run()
			d := time.Since(start)
			in.Close()
			if err != nil || (stderr.Len() > 0) != c.complain {
				return fmt.Errorf("%s: %v %s", c.name, err, stderr.String())
			}
			if r >= 10 { // the first rounds warm the page cache
				c.d = append(c.d, d)
			}
		}
	}
	fmt.Println("hook forwarder, whole process (fork, exec, deliver, exit), interleaved:")
	base := median(cs[0].d)
	for _, c := range cs {
		fmt.Printf("  %-17s %s   median − /bin/true %s\n", c.name, stats(c.d), ms(median(c.d)-base))
	}
	fmt.Println()
	b.summarise("hook forwarder `dlgt-hook`, whole process", medP99(cs[1].d), "/bin/true "+medP99(cs[0].d),
		ratio(float64(median(cs[1].d)), float64(median(cs[0].d))), verdict(median(cs[1].d)-median(cs[0].d) < time.Millisecond/2, "well under 1 ms (< 0.5 ms) of its own work"))
	if hf, err := exec.LookPath("hyperfine"); err == nil {
		// hyperfine runs each command through sh (for the stdin
		// redirection) and subtracts the shell's own start.
		var cmds []string
		for _, c := range cs {
			cmds = append(cmds, strings.Join(c.argv, " ")+" < "+pf)
		}
		export := filepath.Join(b.work, "hyperfine.json")
		args := append([]string{"-w", "20", "-r", strconv.Itoa(rounds), "--style", "none", "--export-json", export}, cmds...)
		if out, err := exec.Command(hf, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("hyperfine: %v\n%s", err, out)
		}
		var res struct {
			Results []struct {
				Mean, Stddev, Median, Min float64
			}
		}
		data, err := os.ReadFile(export)
		if err != nil || json.Unmarshal(data, &res) != nil || len(res.Results) != len(cs) {
			return fmt.Errorf("hyperfine export %s unreadable: %v", export, err)
		}
		fmt.Println("the same with hyperfine (one command after the other, shell start subtracted):")
		for i, c := range cs {
			r := res.Results[i]
			fmt.Printf("  %-17s median %s  mean %s ± %s  min %s   median − /bin/true %s\n", c.name,
				sec(r.Median), sec(r.Mean), sec(r.Stddev), sec(r.Min), sec(r.Median-res.Results[0].Median))
		}
		fmt.Println()
	}
	return nil
}

func sec(s float64) string { return ms(time.Duration(s * float64(time.Second))) }

// sessions runs the create / send / Stop rounds.
func (b *bench) sessions(rounds int, rows map[string]bool) error {
	ctx := context.Background()
	c, err := rpc.Dial(ctx, b.socket)
	if err != nil {
		return err
	}
	defer c.Close()
	var ready, create, added, send, wake, wakeSent []time.Duration
	cwd := filepath.Join(b.work, "cwd")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		return err
	}
	for r := 0; r < rounds; r++ {
		// The harness alone: spawn to its SessionStart hook.
		rd, err := b.standaloneReady(cwd)
		if err != nil {
			return fmt.Errorf("standalone harness: %w", err)
		}
		// create → confirmed.
		start := time.Now()
		var rc rpc.Receipt
		err = c.Call(ctx, rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: "bench", Harness: "claude", Cwd: cwd, Prompt: fmt.Sprintf("bench create %d", r),
			RequestID: fmt.Sprintf("bench-create-%d-%d", os.Getpid(), r), Environment: b.env,
		}, &rc)
		cr := time.Since(start)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if rc.Submission != rpc.SubmissionConfirmed {
			return fmt.Errorf("create receipt %+v", rc)
		}
		id := rc.Session.ID
		if _, err := waitResult(ctx, b.socket, id, rc.Cursor); err != nil {
			return err
		}
		// send → confirmed on the idle Session.
		start = time.Now()
		var rs rpc.Receipt
		err = c.Call(ctx, rpc.MethodSessionSend, rpc.SessionSendParams{
			Session: id, Prompt: fmt.Sprintf("bench send %d", r), RequestID: fmt.Sprintf("bench-send-%d-%d", os.Getpid(), r),
		}, &rs)
		sd := time.Since(start)
		if err != nil || rs.Submission != rpc.SubmissionConfirmed {
			return fmt.Errorf("send: %v %+v", err, rs)
		}
		if _, err := waitResult(ctx, b.socket, id, rs.Cursor); err != nil {
			return err
		}
		// Stop hook → fetch response: a turn of 300 ms, a long poll parked
		// on its result.
		var rw rpc.Receipt
		err = c.Call(ctx, rpc.MethodSessionSend, rpc.SessionSendParams{
			Session: id, Prompt: fmt.Sprintf("[[slow 300]] bench stop %d", r), RequestID: fmt.Sprintf("bench-stop-%d-%d", os.Getpid(), r),
		}, &rw)
		if err != nil || rw.Submission != rpc.SubmissionConfirmed {
			return fmt.Errorf("send: %v %+v", err, rw)
		}
		answered, err := waitResult(ctx, b.socket, id, rw.Cursor)
		if err != nil {
			return err
		}
		stop, ok := lastStamp(b.stamps, "Stop")
		if !ok {
			return errors.New("no Stop stamp")
		}
		sent, ok := awaitStamp(b.stamps, "Stop-sent", stop)
		if !ok {
			return errors.New("no Stop-sent stamp")
		}
		var stopped rpc.SessionResult
		if err := c.Call(ctx, rpc.MethodSessionStop, rpc.SessionStopParams{Session: id, Force: true}, &stopped); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		ready, create, send = append(ready, rd), append(create, cr), append(send, sd)
		added = append(added, cr-rd)
		wake = append(wake, answered.Sub(stop))
		wakeSent = append(wakeSent, answered.Sub(sent))
	}
	fmt.Println("Sessions (fake Claude Code), interleaved per round:")
	fmt.Printf("  %-40s %s\n", "harness alone: spawn → SessionStart hook", stats(ready))
	fmt.Printf("  %-40s %s\n", "create → confirmed receipt", stats(create))
	fmt.Printf("  %-40s %s\n", "  minus the harness's start-to-ready", stats(added))
	fmt.Printf("  %-40s %s\n", "send → confirmed receipt, idle Session", stats(send))
	fmt.Printf("  %-40s %s\n", "Stop hook started → fetch answered (1)", stats(wake))
	fmt.Printf("  %-40s %s\n", "  from the hook's line sent", stats(wakeSent))
	fmt.Println()
	if rows["create"] {
		b.summarise("create → confirmed, minus the harness's start-to-ready", medP99(added),
			"harness alone "+medP99(ready), "–", verdict(median(added) < 30*time.Millisecond, "< 30 ms added"))
	}
	if rows["send"] {
		b.summarise("send → confirmed, idle Session", medP99(send), "–", "–", verdict(median(send) < 30*time.Millisecond, "< 30 ms added"))
	}
	if rows["hook"] {
		b.summarise("Stop hook → fetch answered, 1 waiter", medP99(wake), "from the forwarder's line sent "+medP99(wakeSent), "–",
			verdict(quantile(wake, 0.99) < 3*time.Millisecond, "p99 < 3 ms")+"; from the line sent: "+verdict(quantile(wakeSent, 0.99) < 3*time.Millisecond, "p99 < 3 ms"))
	}
	return nil
}

// standaloneReady starts the fake harness under a PTY with only a
// stamped SessionStart hook and returns the time from spawn to the hook.
func (b *bench) standaloneReady(cwd string) (time.Duration, error) {
	stamps := filepath.Join(b.work, "standalone-stamps")
	os.Remove(stamps)
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "/bin/true SessionStart"}}}},
	}})
	env := []string{}
	for k, v := range b.env {
		if k != "DLGT_BENCH_STAMPS" {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "DLGT_BENCH_STAMPS="+stamps)
	argv := []string{b.claude, "--session-id", harness.NewUUID(), "--settings", string(settings)}
	start := time.Now()
	p, err := pty.Start(pty.Options{Argv: argv, Env: env, Dir: cwd, Rows: 40, Cols: 120})
	if err != nil {
		return 0, err
	}
	defer func() {
		p.Kill()
		<-p.Done()
		p.Close()
	}()
	go io.Copy(io.Discard, p)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if t, ok := lastStamp(stamps, "SessionStart"); ok {
			return t.Sub(start), nil
		}
		time.Sleep(time.Millisecond)
	}
	return 0, errors.New("no SessionStart within 10s")
}

// waitResult long-polls a fresh connection until the result after
// cursor and returns when the answer was read.
func waitResult(ctx context.Context, socket, id, cursor string) (time.Time, error) {
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		var doc rpc.FetchDocument
		err := c.Call(ctx, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "until": "result", "wait_ms": 10000, "max_bytes": 65536}, &doc)
		at := time.Now()
		if err != nil {
			return time.Time{}, fmt.Errorf("fetch: %w", err)
		}
		if len(doc.Sessions) == 1 && len(doc.Sessions[0].Results) > 0 {
			return at, nil
		}
		cursor = doc.Cursor
		if doc.HasMore {
			continue
		}
	}
	return time.Time{}, fmt.Errorf("no result for %s", id)
}

// awaitStamp waits up to 2 s for a time stamped for event at or after
// notBefore (the forwarder writes its -sent stamp once it has its answer,
// which can be after the client has its own) and returns the last one.
func awaitStamp(path, event string, notBefore time.Time) (time.Time, bool) {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		if t, ok := lastStamp(path, event); ok && !t.Before(notBefore) {
			return t, true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
}

// lastStamp is the last time stamped for event.
func lastStamp(path, event string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	var last time.Time
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ev, ns, ok := strings.Cut(sc.Text(), " ")
		if !ok || ev != event {
			continue
		}
		if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
			last, found = time.Unix(0, n), true
		}
	}
	return last, found
}

func median(d []time.Duration) time.Duration { return quantile(d, 0.5) }

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func stats(d []time.Duration) string {
	return fmt.Sprintf("median %s  p99 %s  min %s  (n=%d)", ms(median(d)), ms(quantile(d, 0.99)), ms(quantile(d, 0)), len(d))
}

func ms(d time.Duration) string { return fmt.Sprintf("%7.2f ms", float64(d.Microseconds())/1000) }
