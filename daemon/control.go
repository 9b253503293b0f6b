package daemon

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/daemon/worktree"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// resumeAndSend relaunches a stopped (or unknown) Session through the
// harness's resume path, then accepts the prompt.
func (rt *runtime) resumeAndSend(ctx context.Context, s *session, p *rpc.SessionSendParams) (*receipts.Stored, error) {
	rows, cols, err := validateSize(p.Rows, p.Cols)
	if err != nil {
		return nil, err
	}
	timeout, err := startupTimeout(p.StartupTimeoutMS)
	if err != nil {
		return nil, err
	}
	lo := launchOpts{resume: true, env: p.Environment, rows: rows, cols: cols, timeout: timeout}
	if s == nil {
		if s, err = rt.adoptForResume(p); err != nil {
			return nil, err
		}
	} else {
		s.mu.Lock()
		state := s.rec.State
		s.mu.Unlock()
		if !terminal(state) {
			return rt.accept(ctx, s, p.Prompt, false)
		}
		if err := unknownHarnessError(s); err != nil {
			return nil, err
		}
		if err := rt.revive(s, p.Alias); err != nil {
			return nil, err
		}
	}
	// A harness.LaunchPrompter submits the prompt itself (launch_prompt.go).
	var e *execution
	var cursor uint64
	if lp, ok := s.h.(harness.LaunchPrompter); ok && lp.LaunchPrompt(p.Prompt) == nil {
		e, cursor = rt.beginLaunchExec(s, p.Prompt, false)
		lo.prompt = p.Prompt
		rt.receipts.Provisional(ctx, receipts.Stored{SessionUID: s.uid, Receipt: rpc.Receipt{
			Session: s.snapshot(), ExecutionSeq: e.seq, Cursor: rpc.FormatPosition(cursor),
			Submission: rpc.SubmissionPending,
		}})
	}
	if _, err := rt.startGeneration(ctx, s, lo); err != nil {
		s.mu.Lock()
		failed := rpc.Event{Type: rpc.EventSessionFailed, Reason: "launch_failed"}
		if e != nil && s.exec == e {
			failed.ExecutionSeq, failed.ResultStatus = e.seq, rpc.StatusFailed
		}
		rt.launchExecFailedLocked(s, e, err)
		rt.releaseAliasLocked(s)
		rt.transitionLocked(s, stFailed, failed)
		s.mu.Unlock()
		if re, ok := err.(*rpc.Error); ok && s.rec.ID != "" {
			re.SessionID, re.LaunchID = s.rec.ID, ""
		}
		return nil, err
	}
	if e != nil {
		return rt.awaitReceipt(ctx, s, e, cursor), nil
	}
	return rt.accept(ctx, s, p.Prompt, false)
}

// revive prepares a terminal Session for relaunch: a new epoch and
// its alias back, if still free.
func (rt *runtime) revive(s *session, alias string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !terminal(s.rec.State) {
		return &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(s.rec.State)}
	}
	rt.mu.Lock()
	if a := normalizeAlias(alias); a != "" {
		s.rec.Alias = a
	}
	if s.rec.Alias != "" {
		if other, taken := rt.aliases[s.rec.Alias]; taken && other != s {
			rt.mu.Unlock()
			return &rpc.Error{Code: rpc.CodeAliasInUse, Field: "alias", Message: "alias " + strconv.Quote(s.rec.Alias) + " belongs to an active Session"}
		}
		rt.aliases[s.rec.Alias] = s
	}
	rt.mu.Unlock()
	s.newEpochLocked("restart")
	rt.transitionLocked(s, stRestarting, rpc.Event{Type: rpc.EventSessionRestarting})
	return nil
}

// newEpochLocked starts a new screen epoch. s.mu held.
func (s *session) newEpochLocked(reason string) {
	s.rec.Epoch++
	s.rec.ResetReason = reason
}

// adoptForResume creates a Session object for a provider id this daemon
// does not hold, from the resume request's launch options.
func (rt *runtime) adoptForResume(p *rpc.SessionSendParams) (*session, error) {
	name, pid, ok := strings.Cut(p.Session, ":")
	if !ok || pid == "" {
		return nil, rpc.InvalidField("session", "resume needs a provider-qualified id such as claude:<session-id>")
	}
	h, err := rt.catalog.Get(name)
	if err != nil {
		return nil, rpc.InvalidField("session", "unknown harness %q in %q", clipRef(name), clipRef(p.Session))
	}
	if p.Cwd == "" || !strings.HasPrefix(p.Cwd, "/") {
		return nil, rpc.InvalidField("cwd", "resuming a Session this daemon does not hold needs its absolute cwd")
	}
	if fi, err := os.Stat(p.Cwd); err != nil || !fi.IsDir() {
		return nil, rpc.InvalidField("cwd", "%s is not a directory", clipRef(p.Cwd))
	}
	if err := h.ValidateOptions(p.HarnessOptions); err != nil {
		return nil, err
	}
	title := p.Title
	if title == "" {
		title = "resumed " + p.Session
	}
	if err := validateTitle(title); err != nil {
		return nil, err
	}
	rec := sessionRecord{
		UID: newUID(), ProviderID: pid, Title: title, Harness: name, Cwd: p.Cwd,
		Model: p.Model, Effort: p.Effort, HarnessOptions: p.HarnessOptions,
		AutoApprove: p.AutoApprove == nil || *p.AutoApprove,
		State:       rpc.StateStarting, CreatedAtMS: nowMS(), Epoch: 1,
	}
	s, err := rt.newSessionObject(rec)
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if other, ok := rt.byID[p.Session]; ok {
		return other, nil
	}
	alias := normalizeAlias(p.Alias)
	if alias == "" {
		alias = slugAlias(title)
	}
	if _, taken := rt.aliases[alias]; taken {
		return nil, &rpc.Error{Code: rpc.CodeAliasInUse, Field: "alias", Message: "alias " + strconv.Quote(alias) + " belongs to an active Session"}
	}
	s.rec.Alias = alias
	rt.aliases[alias] = s
	rt.holdSessionLocked(s)
	return s, nil
}

// stopSession stops the live generation's process group. force sends
// SIGKILL at once; otherwise SIGTERM, then SIGKILL after StopGrace.
func (rt *runtime) stopSession(s *session, force bool, reason string) {
	rt.stopSessionIf(s, force, reason, nil)
}

// stopSessionIf is stopSession after refuse, called with s.mu held, has
// found nothing that forbids the stop (a nil refuse allows every stop).
func (rt *runtime) stopSessionIf(s *session, force bool, reason string, refuse func() error) error {
	s.mu.Lock()
	if refuse != nil {
		if err := refuse(); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if terminal(s.rec.State) && s.gen == nil {
		s.mu.Unlock()
		return nil
	}
	g := s.gen
	// The event that records the end of an active execution carries its
	// execution_seq and result_status: stopping (its result is retained
	// with it) and stopped alike.
	var ended rpc.Event
	stopping := rpc.Event{Type: rpc.EventSessionStopping, Reason: reason}
	// The result, the record and the event are stored in one transaction.
	rt.oneTxLocked(s, func() {
		if s.exec != nil {
			res := rt.finishExecLocked(s, rpc.StatusInterrupted, "", rpc.TextSourceMissing, &rpc.ResultError{Code: reason, Message: "the Session was stopped during this execution"})
			ended = rpc.Event{ExecutionSeq: res.ExecutionSeq, ResultStatus: res.Status}
			stopping.ExecutionSeq, stopping.ResultStatus = ended.ExecutionSeq, ended.ResultStatus
		}
		rt.transitionLocked(s, stStopping, stopping)
	})
	s.mu.Unlock()
	if g != nil {
		if force {
			g.proc.Kill()
		} else {
			g.proc.Terminate(rt.opts.StopGrace)
		}
		<-g.exited
	}
	s.mu.Lock()
	if s.gen == g {
		s.gen = nil
	}
	rt.releaseAliasLocked(s)
	rt.transitionLocked(s, stStopped, rpc.Event{Type: rpc.EventSessionStopped, Reason: reason,
		ExecutionSeq: ended.ExecutionSeq, ResultStatus: ended.ResultStatus})
	s.mu.Unlock()
	return nil
}

func (rt *runtime) sessionStop(ctx context.Context, peer rpc.Peer, p rpc.SessionStopParams) (rpc.SessionResult, error) {
	s, err := rt.resolveLast(p.Session)
	if err != nil {
		return rpc.SessionResult{}, err
	}
	// Without force, a stop never kills work in progress: a Session in
	// transition is SESSION_UNAVAILABLE and one with an active execution
	// SESSION_BUSY, both naming force. Checked under the same lock the
	// stop starts under, so no execution can slip in between.
	refuse := func() error {
		if p.Force {
			return nil
		}
		switch state := s.rec.State; state {
		case rpc.StateStarting, rpc.StateRestarting, rpc.StateStopping:
			return &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(state) + "; use force to kill it (dlgt session stop --force)"}
		}
		if s.exec != nil {
			return &rpc.Error{Code: rpc.CodeSessionBusy, SessionID: s.rec.ID,
				Message: "execution " + itoa(s.exec.seq) + " is active (the Session is " + string(s.rec.State) + "); cancel it first, or stop anyway with force (dlgt session stop --force), which interrupts it"}
		}
		return nil
	}
	var wt *rpc.Worktree
	if p.RemoveWorktree {
		// Checked before the stop, so a refused removal changes nothing.
		if wt, err = rt.removableWorktree(ctx, s, p.Force); err != nil {
			return rpc.SessionResult{}, err
		}
	}
	if err := rt.stopSessionIf(s, p.Force, "stopped", refuse); err != nil {
		return rpc.SessionResult{}, err
	}
	if wt != nil && !wt.Removed {
		if err := rt.removeSessionWorktree(ctx, s, wt, p.Force); err != nil {
			return rpc.SessionResult{}, err
		}
	}
	return rpc.SessionResult{Session: s.snapshot()}, nil
}

// removableWorktree is s's worktree when session.stop may remove it.
func (rt *runtime) removableWorktree(ctx context.Context, s *session, force bool) (*rpc.Worktree, error) {
	s.mu.Lock()
	id := s.rec.ID
	var wt *rpc.Worktree
	if s.rec.Worktree != nil {
		c := *s.rec.Worktree
		wt = &c
	}
	s.mu.Unlock()
	if wt == nil {
		return nil, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "remove_worktree", SessionID: id, Message: "the Session has no worktree"}
	}
	if wt.Removed {
		return wt, nil
	}
	return wt, worktree.CheckRemovable(ctx, id, wt, force)
}

// removeSessionWorktree removes a stopped Session's worktree and branch
// (checked again now that the harness is gone) and records it.
func (rt *runtime) removeSessionWorktree(ctx context.Context, s *session, wt *rpc.Worktree, force bool) error {
	s.mu.Lock()
	id := s.rec.ID
	s.mu.Unlock()
	if err := worktree.CheckRemovable(ctx, id, wt, force); err != nil {
		return err
	}
	if err := worktree.Remove(wt.Repo, wt.Path, wt.Branch); err != nil {
		return &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: id, Message: "removing the worktree failed: " + worktree.ClipText(err.Error(), 400)}
	}
	s.mu.Lock()
	if s.rec.Worktree != nil {
		s.rec.Worktree.Removed = true
	}
	err := rt.persistLocked(s)
	s.mu.Unlock()
	if err != nil {
		rt.log.Warn("recording a removed worktree", "session", id, "err", err)
	}
	return nil
}

func (rt *runtime) sessionRestart(ctx context.Context, peer rpc.Peer, p rpc.SessionRestartParams) (rpc.SessionResult, error) {
	if err := validateEnv(p.Environment); err != nil {
		return rpc.SessionResult{}, err
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return rpc.SessionResult{}, err
	}
	if err := unknownHarnessError(s); err != nil {
		return rpc.SessionResult{}, err
	}
	s.mu.Lock()
	rows, cols := s.rec.Rows, s.rec.Cols
	s.mu.Unlock()
	if p.Rows != 0 {
		rows = p.Rows
	}
	if p.Cols != 0 {
		cols = p.Cols
	}
	rows, cols, err = validateSize(rows, cols)
	if err != nil {
		return rpc.SessionResult{}, err
	}
	timeout, err := startupTimeout(p.StartupTimeoutMS)
	if err != nil {
		return rpc.SessionResult{}, err
	}
	s.mu.Lock()
	switch s.rec.State {
	case rpc.StateStarting, rpc.StateRestarting, rpc.StateStopping, rpc.StateCanceling:
		st := s.rec.State
		s.mu.Unlock()
		return rpc.SessionResult{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(st)}
	}
	g := s.gen
	restarting := rpc.Event{Type: rpc.EventSessionRestarting}
	rt.oneTxLocked(s, func() {
		if s.exec != nil {
			res := rt.finishExecLocked(s, rpc.StatusInterrupted, "", rpc.TextSourceMissing, &rpc.ResultError{Code: "restarted", Message: "the Session was restarted during this execution"})
			restarting.ExecutionSeq, restarting.ResultStatus = res.ExecutionSeq, res.Status
		}
		rt.transitionLocked(s, stRestarting, restarting)
	})
	s.mu.Unlock()
	if g != nil {
		g.proc.Terminate(rt.opts.StopGrace)
		<-g.exited
	}
	s.mu.Lock()
	s.newEpochLocked("restart")
	rt.persistLocked(s)
	if s.rec.Alias != "" {
		rt.mu.Lock()
		if _, taken := rt.aliases[s.rec.Alias]; !taken {
			rt.aliases[s.rec.Alias] = s
		}
		rt.mu.Unlock()
	}
	s.mu.Unlock()
	if _, err := rt.startGeneration(ctx, s, launchOpts{resume: true, env: p.Environment, rows: rows, cols: cols, timeout: timeout}); err != nil {
		s.mu.Lock()
		rt.releaseAliasLocked(s)
		rt.transitionLocked(s, stFailed, rpc.Event{Type: rpc.EventSessionFailed, Reason: "launch_failed"})
		s.mu.Unlock()
		if re, ok := err.(*rpc.Error); ok {
			re.SessionID, re.LaunchID = s.rec.ID, ""
		}
		return rpc.SessionResult{}, err
	}
	s.mu.Lock()
	cursor := rt.positions.MintSession(s.uid, s.markLocked())
	snap := s.snapshotLocked(time.Now())
	s.mu.Unlock()
	return rpc.SessionResult{Session: snap, Cursor: rpc.FormatPosition(cursor)}, nil
}

// defaultCancelTimeout is the spec's default bound on session.cancel.
const defaultCancelTimeout = 30 * time.Second

func (rt *runtime) sessionCancel(ctx context.Context, peer rpc.Peer, p rpc.SessionCancelParams) (rpc.SessionResult, error) {
	timeout := defaultCancelTimeout
	if p.TimeoutMS != nil {
		if *p.TimeoutMS < 0 || *p.TimeoutMS > 600000 {
			return rpc.SessionResult{}, rpc.InvalidField("timeout_ms", "must be between 0 and 600000")
		}
		timeout = time.Duration(*p.TimeoutMS) * time.Millisecond
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return rpc.SessionResult{}, err
	}
	s.mu.Lock()
	e, g := s.exec, s.gen
	switch {
	case e == nil:
		// Nothing to cancel: a no-op success.
		snap := s.snapshotLocked(time.Now())
		s.mu.Unlock()
		return rpc.SessionResult{Session: snap}, nil
	case s.rec.State != rpc.StateBusy && s.rec.State != rpc.StateBlocked && s.rec.State != rpc.StateCanceling:
		st := s.rec.State
		s.mu.Unlock()
		return rpc.SessionResult{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(st)}
	}
	wasBlocked := s.rec.State == rpc.StateBlocked
	rt.cancelQueuedLocked(s) // cancel clears the queue (queue.go)
	if !e.canceling {
		e.canceling = true
		rt.transitionLocked(s, stCanceling, rpc.Event{Type: rpc.EventSessionCanceling, ExecutionSeq: e.seq})
	}
	s.mu.Unlock()
	if g != nil {
		since := time.Now()
		if wasBlocked {
			// Dismissing the dialog and interrupting the turn are
			// separate steps.
			writeKeys(ctx, g.proc, s.h.DismissDialog())
			time.Sleep(150 * time.Millisecond)
		}
		writeKeys(ctx, g.proc, s.h.Interrupt())
		rt.proveInterrupt(s, g, e, since)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.done:
		s.mu.Lock()
		snap := s.snapshotLocked(time.Now())
		s.mu.Unlock()
		return rpc.SessionResult{Session: snap, Result: e.result}, nil
	case <-t.C:
		return rpc.SessionResult{}, &rpc.Error{Code: rpc.CodeCancelTimeout, SessionID: s.rec.ID, Message: "the harness has not confirmed the interrupt within " + timeout.String() + "; cancellation continues"}
	case <-ctx.Done():
		return rpc.SessionResult{}, ctx.Err()
	}
}
