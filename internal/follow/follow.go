// Package follow is the events follower of dlgt events --follow: it
// survives daemon restarts by subscribing again (through the client's
// dial policy, never starting a daemon on a redial) after the last seq
// it handled, so no event is lost or printed twice (seqs are monotonic
// across daemon lifetimes); a state file makes it restartable itself,
// and a command can run per event (bounded jobs, queue and output).
package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Follower reconnect backoff bounds.
const (
	followRetryMin = 100 * time.Millisecond
	followRetryMax = 2 * time.Second
	// execQueue bounds the events waiting for an --exec worker; a full
	// queue stops reading (the daemon may then drop the slow subscriber,
	// which resubscribes after the last queued seq: nothing is lost).
	execQueue = 64
	// execOutputCap bounds what a command's output costs in memory.
	execOutputCap = 64 << 10
)

// Options configure a follower.
type Options struct {
	// Params select the events; Params.After is where to start (nil:
	// the latest).
	Params rpc.EventReadParams
	// StateFile, when set, receives the last seq handled (WriteState).
	StateFile string
	// Exec, when set, is run with /bin/sh once per event (RunExec), at
	// most ExecJobs at once, each killed after ExecTimeout.
	Exec        string
	ExecJobs    int
	ExecTimeout time.Duration
	// Stderr receives notices and the commands' output.
	Stderr io.Writer
	// Emit hands on each event line; its error ends the follow (a
	// *HandleError).
	Emit func(line []byte) error
	// RetryMin is the first reconnect delay (0: 100 ms).
	RetryMin time.Duration
	// Wait, when set, waits for a daemon that is not running at the
	// start (it never starts one) instead of failing.
	Wait bool
	// Name starts the notices on Stderr ("": "dlgt events").
	Name string
}

// Fields are the members of an event the follower reads, and what Exec
// gets in its environment.
type Fields struct {
	Seq          uint64 `json:"seq"`
	Type         string `json:"type"`
	SessionID    string `json:"session_id"`
	ExecutionSeq uint64 `json:"execution_seq"`
	ResultStatus string `json:"result_status"`
}

// ReadState returns the seq stored in a --state file, or ok false when
// the file does not exist.
func ReadState(path string) (uint64, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, rpc.Errorf(rpc.CodeInvalidArgument, "--state %s: %v", path, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false, rpc.Errorf(rpc.CodeInvalidArgument, "--state %s does not hold an event seq: %q", path, clipText(string(b), 40))
	}
	return n, true, nil
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// WriteState stores seq in path atomically (a temporary file renamed over
// it).
func WriteState(path string, seq uint64) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dlgt-events-state-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(strconv.FormatUint(seq, 10) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// watermark tracks the highest seq through which every event has been
// handled (printed, and its --exec command finished), for --state.
type watermark struct {
	mu       sync.Mutex
	inflight []uint64 // ascending
	last     uint64   // last seq queued
	stored   uint64
	path     string
	stderr   io.Writer
	name     string
}

func (w *watermark) queued(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight = append(w.inflight, seq)
	w.last = seq
}

func (w *watermark) done(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.inflight, seq); i >= 0 {
		w.inflight = slices.Delete(w.inflight, i, i+1)
	}
	w.saveLocked()
}

// handled marks seq done without a command.
func (w *watermark) handled(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = seq
	w.saveLocked()
}

// start records where a follow that began at the latest event starts,
// storing it even when nothing was stored before (seq 0 included).
func (w *watermark) start(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = seq
	if w.path == "" {
		return
	}
	if err := WriteState(w.path, seq); err != nil {
		fmt.Fprintf(w.stderr, "%s: cannot store the last seq in %s: %v\n", w.name, w.path, err)
		return
	}
	w.stored = seq
}

func (w *watermark) saveLocked() {
	through := w.last
	if len(w.inflight) > 0 {
		through = w.inflight[0] - 1
	}
	if w.path == "" || through <= w.stored {
		return
	}
	if err := WriteState(w.path, through); err != nil {
		fmt.Fprintf(w.stderr, "%s: cannot store the last seq in %s: %v\n", w.name, w.path, err)
		return
	}
	w.stored = through
}

// Run subscribes through c for the Session ref ("" for all) and hands
// every event to opts.Emit (and Exec) until ctx ends, resubscribing after
// the last seq whenever the connection to the daemon is lost. It returns
// nil when ctx ends; an error it cannot follow through (never subscribed,
// refused, or Emit's *HandleError) otherwise.
func Run(ctx context.Context, c *client.Client, ref string, opts Options) error {
	if opts.Name == "" {
		opts.Name = "dlgt events"
	}
	wm := &watermark{path: opts.StateFile, stderr: opts.Stderr, name: opts.Name}
	var after *uint64
	if opts.Params.After != nil {
		a := *opts.Params.After
		after, wm.stored, wm.last = &a, a, a
	}
	var jobs chan execJob
	var workers sync.WaitGroup
	if opts.Exec != "" {
		jobs = make(chan execJob, execQueue)
		for i := 0; i < max(1, opts.ExecJobs); i++ {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for j := range jobs {
					runExec(opts, j)
					wm.done(j.seq)
				}
			}()
		}
		defer func() {
			close(jobs)
			workers.Wait()
		}()
	}
	delay := opts.RetryMin
	if delay <= 0 {
		delay = followRetryMin
	}
	reconnecting, dialed, ever := false, false, false
	for {
		p := opts.Params
		p.After = after
		progressed, err := subscribeOnce(ctx, c, ref, p, reconnecting || dialed || opts.Wait, func(ack rpc.SubscribeAck) {
			if after == nil {
				// Started at the latest: that seq is where a restart
				// (--state) or a resubscription goes on from, even before
				// any event has come, so none in between is lost.
				a := ack.After
				after = &a
				wm.start(a)
			}
		}, func(line []byte) error {
			var f Fields
			if err := json.Unmarshal(line, &f); err != nil {
				return rpc.Errorf(rpc.CodeInternal, "unexpected event line: %v", err)
			}
			if after != nil && f.Seq <= *after {
				return nil // already handled before a reconnect
			}
			if err := opts.Emit(line); err != nil {
				return err
			}
			seq := f.Seq
			after = &seq
			if jobs == nil {
				wm.handled(seq)
				return nil
			}
			wm.queued(seq)
			select {
			case jobs <- execJob{seq: seq, line: slices.Clone(line), f: f}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if ctx.Err() != nil {
			return nil
		}
		ever = ever || progressed
		if (!ever && !opts.Wait) || !retryable(err) {
			return err // never subscribed (no daemon to follow), or refused
		}
		dialed = true
		if progressed || !reconnecting {
			delay = opts.RetryMin
			if delay <= 0 {
				delay = followRetryMin
			}
		}
		if !reconnecting {
			if ever {
				fmt.Fprintf(opts.Stderr, "%s: the daemon went away (%v); following again after seq %s once it is back\n", opts.Name, err, seqText(after))
			} else {
				fmt.Fprintf(opts.Stderr, "%s: no daemon to follow yet (%v); waiting for one\n", opts.Name, err)
			}
			reconnecting = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, followRetryMax)
		if progressed {
			reconnecting = false
		}
	}
}

func seqText(p *uint64) string {
	if p == nil {
		return "the latest"
	}
	return strconv.FormatUint(*p, 10)
}

// retryable reports whether a follower should subscribe again after err:
// the daemon went away (or dropped a slow follower), not a refusal.
func retryable(err error) bool {
	var he *HandleError
	if errors.As(err, &he) {
		return false
	}
	var re *rpc.Error
	if errors.As(err, &re) {
		return re.Code == rpc.CodeRPCUnavailable
	}
	return err != nil
}

// subscribeOnce subscribes once and handles lines until the stream ends.
// progressed reports whether the subscription was acknowledged.
func subscribeOnce(ctx context.Context, cl *client.Client, ref string, p rpc.EventReadParams, redial bool, acked func(rpc.SubscribeAck), handle func([]byte) error) (progressed bool, err error) {
	// A follower must not bring back a daemon someone stopped: a redial
	// never starts one (it waits for it instead).
	var c *rpc.Client
	if redial {
		c, err = cl.DialExisting(ctx, ref)
	} else {
		c, err = cl.Dial(ctx, ref)
	}
	if err != nil {
		return false, err
	}
	defer c.Close()
	raw, next, err := c.Subscribe(ctx, rpc.MethodEventSubscribe, p)
	if err != nil {
		return false, err
	}
	var ack rpc.SubscribeAck
	if json.Unmarshal(raw, &ack) == nil && ack.Subscribed {
		acked(ack)
	}
	for {
		line, err := next()
		if err != nil {
			return true, err
		}
		if err := handle(line); err != nil {
			return true, &HandleError{err}
		}
	}
}

// HandleError is a failure of Emit (stdout gone): not a reason to
// reconnect. Err is Emit's error.
type HandleError struct{ Err error }

func (h *HandleError) Error() string { return h.Err.Error() }
func (h *HandleError) Unwrap() error { return h.Err }

type execJob struct {
	seq  uint64
	line []byte
	f    Fields
}

// runExec runs the --exec command for one event: the event JSON on stdin,
// its fields in the environment, output to stderr. A failure is reported
// on stderr and the follow goes on.
func runExec(opts Options, j execJob) {
	ctx, cancel := context.WithTimeout(context.Background(), opts.ExecTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", opts.Exec)
	cmd.Stdin = bytes.NewReader(append(j.line, '\n'))
	cmd.Env = append(os.Environ(),
		"DLGT_EVENT_TYPE="+j.f.Type,
		"DLGT_EVENT_SEQ="+strconv.FormatUint(j.f.Seq, 10),
		"DLGT_SESSION_ID="+j.f.SessionID,
		"DLGT_EXECUTION_SEQ="+uintOrEmpty(j.f.ExecutionSeq),
		"DLGT_RESULT_STATUS="+j.f.ResultStatus,
	)
	out := &Capped{N: execOutputCap}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if len(out.Bytes()) > 0 {
		opts.Stderr.Write(out.Bytes())
		if !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			fmt.Fprintln(opts.Stderr)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("killed after %s", opts.ExecTimeout)
		}
		fmt.Fprintf(opts.Stderr, "%s: --exec for event %d (%s) failed: %v\n", opts.Name, j.f.Seq, j.f.Type, err)
	}
}

func uintOrEmpty(n uint64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatUint(n, 10)
}

// Capped keeps the first N bytes written to it and counts the rest as
// written. It has no ReadFrom, so io.Copy (os/exec's copy of a command's
// output) goes through Write and the bound.
type Capped struct {
	N   int
	buf bytes.Buffer
}

func (c *Capped) Write(p []byte) (int, error) {
	if room := c.N - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Bytes is what was kept.
func (c *Capped) Bytes() []byte { return c.buf.Bytes() }
