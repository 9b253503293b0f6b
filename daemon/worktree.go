package daemon

// The worktree's git work is package worktree's; the daemon places the
// worktrees under its state directory, maps a failure to create their
// directory to a storage error, and serves session.diff and the summary
// a result carries.

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/worktree"
	"github.com/dlgt-dev/dlgt/rpc"
)

// worktrees is the daemon's side of package worktree: where worktrees
// go, session.diff and a result's summary. It sees the runtime only as
// the Sessions by reference (resolveLast) and its storage errors.
type worktrees struct {
	// dir is where worktrees are made: $DLGT_HOME/worktrees.
	dir          string
	resolveLast  func(ref string) (*session, error)
	storageError func(what, then string, err error) *rpc.Error
}

func newWorktrees(rt *runtime) *worktrees {
	return &worktrees{dir: filepath.Join(rt.paths.Home, "worktrees"), resolveLast: rt.resolveLast, storageError: rt.storageError}
}

// make is worktree.Make under the state directory.
func (w *worktrees) make(ctx context.Context, cwd, branch string) (*rpc.Worktree, string, error) {
	wt, launch, err := worktree.Make(ctx, w.dir, cwd, branch)
	if de := (*worktree.DirError)(nil); errors.As(err, &de) {
		return nil, "", w.storageError("the worktree directory", "nothing was created", de.Err)
	}
	return wt, launch, err
}

// summaryLocked is the summary a worktree Session's result carries.
// s.mu held; bounded by worktree.DiffSummaryTimeout.
func (w *worktrees) summaryLocked(s *session) *rpc.DiffSummary {
	wt := s.rec.Worktree
	if wt == nil || wt.Removed {
		return nil
	}
	sum, _, _, err := worktree.Diff(context.Background(), w.dir, wt, worktree.DiffSummaryTimeout, false, 0)
	if err != nil {
		sum = rpc.DiffSummary{Error: worktree.ClipText(err.Error(), 400)}
	}
	return &sum
}

// sessionDiff serves session.diff.
func (w *worktrees) sessionDiff(ctx context.Context, peer rpc.Peer, p rpc.SessionDiffParams) (rpc.SessionDiffResult, error) {
	max := p.MaxBytes
	switch {
	case max == 0:
		max = worktree.DefaultDiffBytes
	case max < 1024 || max > worktree.MaxDiffBytes:
		return rpc.SessionDiffResult{}, rpc.InvalidField("max_bytes", "must be between 1024 and %d", worktree.MaxDiffBytes)
	}
	s, err := w.resolveLast(p.Session)
	if err != nil {
		return rpc.SessionDiffResult{}, err
	}
	s.mu.Lock()
	snap := s.snapshotLocked(time.Now())
	var wt rpc.Worktree
	if s.rec.Worktree != nil {
		wt = *s.rec.Worktree
	}
	s.mu.Unlock()
	if wt.Path == "" {
		return rpc.SessionDiffResult{}, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "session", SessionID: snap.ID, Message: "the Session has no worktree (create it with worktree)"}
	}
	if wt.Removed {
		return rpc.SessionDiffResult{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: snap.ID, Message: "the Session's worktree was removed"}
	}
	sum, diff, trunc, err := worktree.Diff(ctx, w.dir, &wt, worktree.DiffTimeout, true, max)
	if err != nil {
		return rpc.SessionDiffResult{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: snap.ID, Message: "git diff failed: " + worktree.ClipText(err.Error(), 400)}
	}
	return rpc.SessionDiffResult{Session: snap, Worktree: wt, Summary: sum, Diff: diff, Truncated: trunc}, nil
}
