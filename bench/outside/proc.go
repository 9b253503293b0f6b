package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/procmem"
	"github.com/dlgt-dev/dlgt/rpc"
)

// cpuTime is the CPU time process pid has used so far: the sum of its
// threads' run times from /proc/PID/task/*/schedstat (nanoseconds), or,
// where schedstat is missing, utime+stime from /proc/PID/stat (clock
// ticks of 10 ms, too coarse for the idle row). A thread that exited
// takes its schedstat time with it; the daemon's threads live as long as
// it does, and tmux has one.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err == nil && len(tasks) > 0 {
		var sum time.Duration
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue // the thread exited since the glob
			}
			f := strings.Fields(string(data))
			if len(f) == 0 {
				continue
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q", t, data)
			}
			sum += time.Duration(ns)
		}
		return sum, nil
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// mustCPU is cpuTime, failing the benchmark on error.
func mustCPU(pid int) time.Duration {
	d, err := cpuTime(pid)
	if err != nil {
		panic(fmt.Sprintf("cpu time of %d: %v", pid, err))
	}
	return d
}

// loadAvg is the first field of /proc/loadavg.
// memOf is a process's resident set now and its peak so far
// (/proc/PID/status VmRSS and VmHWM).
func memOf(pid int) string {
	rss, hwm, err := procmem.Of(pid)
	if err != nil {
		return "RSS ?"
	}
	return fmt.Sprintf("RSS %.0f MiB, peak %.0f MiB", float64(rss)/1024, float64(hwm)/1024)
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// tmuxServer is a private tmux server (its own -L socket and config) with
// a first session of 120×40 running cmd.
type tmuxServer struct {
	sock, cfg string
	env       []string
	pid       int
}

func startTmux(work, name, cmd string) (*tmuxServer, error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return nil, errors.New("tmux not on PATH")
	}
	cfg := filepath.Join(work, name+".tmux.conf")
	conf := "set-option -g history-limit 10000\nset-option -g default-size 120x40\nset-option -g status off\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	t := &tmuxServer{sock: fmt.Sprintf("dlgt-bench-%d-%s", os.Getpid(), name), cfg: cfg}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			t.env = append(t.env, kv)
		}
	}
	if out, err := t.cmd("new-session", "-d", "-s", "main", "-x", "120", "-y", "40", cmd).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tmux new-session: %v: %s", err, out)
	}
	out, err := t.cmd("display-message", "-p", "#{pid}").Output()
	if err != nil {
		t.kill()
		return nil, fmt.Errorf("tmux display #{pid}: %v", err)
	}
	if t.pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		t.kill()
		return nil, fmt.Errorf("tmux server pid %q", out)
	}
	return t, nil
}

func (t *tmuxServer) cmd(args ...string) *exec.Cmd {
	c := exec.Command("tmux", append([]string{"-L", t.sock, "-f", t.cfg}, args...)...)
	c.Env = t.env
	return c
}

func (t *tmuxServer) run(args ...string) error {
	if out, err := t.cmd(args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (t *tmuxServer) kill() { t.cmd("kill-server").Run() }

// conn is an RPC client that redials before the server's per-connection
// rate limit (rpc.DefaultRateLimit requests per window) would refuse it,
// and while the server has not yet released a closed connection (the
// connection cap).
type conn struct {
	socket string
	c      *rpc.Client
	calls  int
}

func dialConn(socket string) (*conn, error) {
	k := &conn{socket: socket}
	return k, k.redial()
}

func (k *conn) redial() error {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
	var err error
	for try := 0; try < 500; try++ {
		var c *rpc.Client
		c, err = rpc.Dial(context.Background(), k.socket)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		// A connection over the cap is refused on its first request.
		if err = c.Call(context.Background(), rpc.MethodDaemonStatus, struct{}{}, nil); err != nil {
			c.Close()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		k.c, k.calls = c, 1
		return nil
	}
	return fmt.Errorf("dial %s: %w", k.socket, err)
}

func (k *conn) call(method string, params, out any) error {
	if k.calls >= rpc.DefaultRateLimit*8/10 {
		if err := k.redial(); err != nil {
			return err
		}
	}
	k.calls++
	return k.c.Call(context.Background(), method, params, out)
}

func (k *conn) close() {
	if k.c != nil {
		k.c.Close()
	}
}

// perf starts `perf record` on the daemon for a row when -perf is set and
// returns the function that ends it (safe to call twice). Read a profile
// with `perf report -i DIR/ROW.data --no-children --sort dso,symbol`.
func (b *bench) perf(row string) func() {
	if b.opts.perfDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(b.opts.perfDir, 0o755); err != nil {
		fmt.Println("  perf:", err)
		return func() {}
	}
	out := filepath.Join(b.opts.perfDir, row+".data")
	cmd := exec.Command("perf", "record", "-q", "-F", "997", "-g", "-p", strconv.Itoa(b.daemonPid), "-o", out)
	if err := cmd.Start(); err != nil {
		fmt.Println("  perf:", err)
		return func() {}
	}
	time.Sleep(200 * time.Millisecond) // perf attaches
	done := false
	return func() {
		if done {
			return
		}
		done = true
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		fmt.Printf("  perf profile of the daemon: %s\n", out)
	}
}
