package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/pty"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/vt"
)

// Terminal size defaults and bounds for a harness PTY.
const (
	defaultRows = 40
	defaultCols = 120
	maxRows     = 500
	maxCols     = 1000
	// defaultStartupTimeout bounds a launch's wait for the provider's
	// SessionStart.
	defaultStartupTimeout = 60 * time.Second
	maxStartupTimeout     = 10 * time.Minute
)

// launchOpts is a launch request with the client's environment.
type launchOpts struct {
	resume     bool
	env        map[string]string
	rows, cols int
	timeout    time.Duration
	prompt     string // the first prompt, for a harness.LaunchPrompter
	// spawnOnly returns once the process runs, without waiting for its
	// ready evidence: a warm spare of a harness that reports nothing
	// before its first turn (spares.go).
	spawnOnly bool
}

// prepareMu serializes harness Prepare calls: Claude's Prepare rewrites
// the shared ~/.claude.json (read, modify, write to a per-process temp
// name, rename), so concurrent launches corrupted it or lost each other's
// trust entries and failed with LAUNCH_FAILED.
var prepareMu sync.Mutex

func newLaunchID() string {
	var b [6]byte
	rand.Read(b[:])
	return "internal:" + hex.EncodeToString(b[:])
}

// startGeneration launches a new harness process for s and waits for the
// provider's ready evidence. On failure the process group is killed and
// the error is LAUNCH_FAILED. The caller holds no locks.
func (rt *runtime) startGeneration(ctx context.Context, s *session, lo launchOpts) (*generation, error) {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if rec.Worktree != nil && rec.Worktree.Removed {
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: rec.ID, Message: "the Session's worktree was removed (session.stop remove_worktree); create a new Session"}
	}
	g := &generation{launchID: newLaunchID(), ready: make(chan struct{}), exited: make(chan struct{})}
	stateDir := filepath.Join(rt.paths.DataDir, "launch", s.uid)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, rt.storageError("the launch directory", "nothing was started; retry once the state directory is writable", err)
	}
	spec := harness.Spec{
		ProviderID: rec.ProviderID, Resume: lo.resume, Cwd: rec.Cwd,
		Model: rec.Model, Effort: rec.Effort, Options: rec.HarnessOptions,
		AutoApprove: rec.AutoApprove, Env: lo.env, StateDir: stateDir, Prompt: lo.prompt,
		HookArgv: harness.HookArgv(rt.opts.HookCommand, rt.paths.HookSocket, g.launchID),
	}
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	// A client running inside another Session carries that Session's hook
	// token; it is never passed on.
	delete(spec.Env, harness.HookTokenEnv)
	if rt.hookWeb != nil {
		spec.HookHTTP = rt.hookWeb.ForLaunch(g.launchID)
	}
	for k, v := range rt.opts.BinEnv {
		if _, ok := spec.Env[k]; !ok && v != "" {
			spec.Env[k] = v
		}
	}
	prepareMu.Lock()
	l, err := s.h.Prepare(spec)
	prepareMu.Unlock()
	if err != nil {
		return nil, launchFailed(g.launchID, err)
	}
	if l.Note != "" {
		rt.log.Warn(l.Note, "session", rec.ID, "launch", g.launchID)
	}
	proc, err := pty.Start(pty.Options{Argv: l.Argv, Env: l.Env, Dir: rec.Cwd, Rows: uint16(lo.rows), Cols: uint16(lo.cols)})
	if err != nil {
		return nil, launchFailed(g.launchID, err)
	}
	g.proc = proc

	s.mu.Lock()
	if l.ProviderID != "" {
		s.rec.ProviderID = l.ProviderID
	}
	s.rec.Rows, s.rec.Cols = lo.rows, lo.cols
	s.gen = g
	s.termMu.Lock()
	s.screen = vt.New(lo.rows, lo.cols, rt.screenCallbacks(s, proc))
	s.termMu.Unlock()
	s.mu.Unlock()

	rt.mu.Lock()
	rt.byLaunch[g.launchID] = s
	rt.wg.Add(1)
	rt.mu.Unlock()
	go rt.pump(s, g)
	if l.ReadyAtSpawn && l.ProviderID != "" {
		// dlgt's own launch operation: see harness.Launch.ReadyAtSpawn.
		rt.applyEvidence(s, g.launchID, harness.Evidence{Kind: harness.KindReady, Event: "launch", ProviderID: l.ProviderID})
	}
	if lo.spawnOnly {
		return g, nil
	}
	if err := rt.awaitReady(ctx, s, g, lo.timeout); err != nil {
		return nil, err
	}
	return g, nil
}

// awaitReady waits for g's ready evidence, at most timeout; when it does
// not come the process is killed and the error is LAUNCH_FAILED.
func (rt *runtime) awaitReady(ctx context.Context, s *session, g *generation, timeout time.Duration) error {
	proc := g.proc
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// A harness that draws some screens only when it cannot go on without
	// a person (harness.LaunchBlocker: Gemini's sign-in) is watched for
	// them, and the launch fails as soon as one shows.
	var watch <-chan time.Time
	blocker, _ := s.h.(harness.LaunchBlocker)
	if blocker != nil {
		t := time.NewTicker(launchWatchEvery)
		defer t.Stop()
		watch = t.C
	}
	for {
		select {
		case <-g.ready:
			return nil
		case <-watch:
			hint := blocker.BlockingLaunchHint(s.liveRows())
			if hint == "" {
				continue
			}
			rt.logLaunchScreen(s, g, "the harness stopped at a screen that waits for a person", "hint", hint)
			proc.Kill()
			<-g.exited
			return &rpc.Error{Code: rpc.CodeLaunchFailed, LaunchID: g.launchID,
				Message: "the harness stopped at a screen of its own before it was ready (the daemon's log has it); " + hint}
		case <-g.exited:
			// The pump has rendered all the harness wrote before it exited (a
			// sign-in it cannot do here, say): logged as for a timeout.
			hint := rt.logLaunchScreen(s, g, "the harness exited before it was ready", "exit", g.exit.String())
			return &rpc.Error{Code: rpc.CodeLaunchFailed, LaunchID: g.launchID,
				Message: fmt.Sprintf("the harness exited before it was ready (%s; the daemon's log has its last screen)%s", g.exit, hint)}
		case <-timer.C:
			// What held the harness (a dialog of its own, say) is on its
			// screen: the log keeps the last rows, the error says where.
			hint := rt.logLaunchScreen(s, g, "the harness did not report ready", "timeout", timeout)
			// Wait for the pump: it persists the record on exit, which must
			// not resurrect a Session the caller is about to discard.
			proc.Kill()
			<-g.exited
			return &rpc.Error{Code: rpc.CodeLaunchFailed, LaunchID: g.launchID,
				Message: fmt.Sprintf("the harness did not report ready within %s (the daemon's log has its last screen)%s", timeout, hint)}
		case <-ctx.Done():
			proc.Kill()
			<-g.exited
			return &rpc.Error{Code: rpc.CodeLaunchFailed, LaunchID: g.launchID, Message: "the request was canceled during launch"}
		}
	}
}

// launchWatchEvery is how often a launch's screen is read for a
// harness.LaunchBlocker's screens.
const launchWatchEvery = 250 * time.Millisecond

func launchFailed(launchID string, err error) error {
	var re *rpc.Error
	if errors.As(err, &re) && re.Code != rpc.CodeLaunchFailed {
		return re
	}
	msg := err.Error()
	if re != nil {
		msg = re.Message
	}
	return &rpc.Error{Code: rpc.CodeLaunchFailed, LaunchID: launchID, Message: msg}
}

// screenCallbacks connects the emulator to the row store and the PTY.
func (rt *runtime) screenCallbacks(s *session, proc *pty.Process) vt.Callbacks {
	return vt.Callbacks{
		Stable: func(rows []string) {
			s.mu.Lock()
			epoch := s.rec.Epoch
			s.mu.Unlock()
			s.rows.Append(epoch, rows...)
		},
		Reply: func(b []byte) {
			// Written from a goroutine: the callback runs under the
			// screen lock and a full PTY input buffer must not stall it.
			reply := append([]byte(nil), b...)
			go proc.Write(reply)
		},
		Reset: func(reason vt.ResetReason) {
			s.mu.Lock()
			s.rec.Epoch++
			s.rec.ResetReason = string(reason)
			rt.persistLocked(s)
			s.notifyLocked()
			s.mu.Unlock()
		},
	}
}

// pumpChunk sizes one PTY read (at least the 4 KiB pty.Drain expects);
// a read returns at most a few KiB anyway.
const pumpChunk = 16 << 10

// pump copies one generation's PTY output into the raw log and the
// emulator until EOF, then records the process exit.
func (rt *runtime) pump(s *session, g *generation) {
	defer rt.wg.Done()
	err := g.proc.Pump(make([]byte, pumpChunk), func(chunk []byte) {
		if _, werr := s.raw.Write(chunk); werr != nil {
			rt.log.Warn("raw log write", "session", s.uid, "err", werr)
		}
		s.termMu.Lock()
		s.screen.Write(chunk)
		s.termMu.Unlock()
		g.out.Observe(chunk) // after the grid has it: see package delivery
		s.mu.Lock()
		s.lastOutput = time.Now()
		s.mu.Unlock()
	})
	if !errors.Is(err, io.EOF) {
		rt.log.Debug("pty read ended", "session", s.uid, "err", err)
	}
	// The child may outlive its output (EIO first); wait for it, bounded.
	select {
	case <-g.proc.Done():
	case <-time.After(rt.opts.StopGrace):
		g.proc.Kill()
		<-g.proc.Done()
	}
	g.exit = g.proc.Wait()
	g.proc.Close()
	s.rows.Flush()
	// Keep the final screen: after the process is gone (and after a daemon
	// restart) it is still what a reader expects below the history.
	final := s.liveRows()
	s.mu.Lock()
	s.rec.FinalLive = final
	rt.persistLocked(s)
	s.mu.Unlock()
	s.raw.Sync()
	rt.mu.Lock()
	delete(rt.byLaunch, g.launchID)
	rt.mu.Unlock()
	close(g.exited)
	rt.generationExited(s, g)
	s.mu.Lock()
	sp := s.spare
	s.mu.Unlock()
	if sp != nil {
		rt.spareExited(sp, g)
	}
}

// generationExited applies a process exit. Exits the daemon asked for
// (stop, restart) are handled by those operations; any other exit of the
// live generation is a crash: active work is interrupted and the Session
// fails.
func (rt *runtime) generationExited(s *session, g *generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != g {
		return
	}
	s.gen = nil
	switch s.rec.State {
	case rpc.StateStopping, rpc.StateRestarting:
		return // the operation in progress finishes the transition
	case rpc.StateStarting:
		return // the launch reports LAUNCH_FAILED
	case rpc.StateCanceling:
		if s.exec != nil {
			seq := s.exec.seq
			rt.finishExecLocked(s, rpc.StatusCanceled, "", rpc.TextSourceMissing, &rpc.ResultError{Code: "harness_exited", Message: "the harness exited while canceling (" + g.exit.String() + ")"})
			rt.releaseAliasLocked(s)
			rt.transitionLocked(s, stFailed, rpc.Event{Type: rpc.EventSessionFailed, ExecutionSeq: seq, ResultStatus: rpc.StatusCanceled, Reason: "harness_exited"})
			return
		}
	}
	if terminal(s.rec.State) {
		return
	}
	rt.failLocked(s, "harness_exited", "the harness process exited unexpectedly ("+g.exit.String()+")")
}

// writeKeys delivers keystrokes that await nothing (an interrupt, a
// dialog's dismissal) to the live generation; a prompt goes through
// runtime.deliver.
func writeKeys(ctx context.Context, proc *pty.Process, keys []harness.Keystroke) error {
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := proc.Write(k.Data); err != nil {
			return err
		}
	}
	return nil
}

// logLaunchScreen logs, as a warning headed by what happened, the last
// screen rows of a launch that failed, and returns the harness's hint for
// that screen (a sign-in or first-run setup of its own: see
// harness.LaunchDiagnoser) as "; <hint>" for the error message, or "".
// The hint is a fixed sentence of the harness package: the error carries
// no terminal output.
func (rt *runtime) logLaunchScreen(s *session, g *generation, what string, attrs ...any) string {
	rows := s.liveRows()
	attrs = append([]any{"launch", g.launchID}, attrs...)
	rt.log.Warn(what+"; its screen ended with", append(attrs, "screen", screenTail(rows, launchTailRows, launchTailBytes))...)
	if d, ok := s.h.(harness.LaunchDiagnoser); ok {
		if hint := d.LaunchHint(rows); hint != "" {
			return "; " + hint
		}
	}
	return ""
}

// The screen rows a failed launch logs, and their bound in bytes.
const (
	launchTailRows  = 8
	launchTailBytes = 1024
)

// screenTail joins the last n non-blank rows of rows (right-trimmed) with
// " | ", keeping at most max bytes, cut at a UTF-8 boundary, from the end.
func screenTail(rows []string, n, max int) string {
	var tail []string
	for i := len(rows) - 1; i >= 0 && len(tail) < n; i-- {
		if r := strings.TrimRight(rows[i], " "); strings.TrimSpace(r) != "" {
			tail = append(tail, r)
		}
	}
	slices.Reverse(tail)
	out := strings.Join(tail, " | ")
	if len(out) > max {
		cut := len(out) - max
		for cut < len(out) && !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = "…" + out[cut:]
	}
	return out
}
