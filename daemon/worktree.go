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

// worktreesDir is where worktrees are made: $DLGT_HOME/worktrees.
func (rt *runtime) worktreesDir() string { return filepath.Join(rt.paths.Home, "worktrees") }

// makeWorktree is worktree.Make under the state directory.
func (rt *runtime) makeWorktree(ctx context.Context, cwd, branch string) (*rpc.Worktree, string, error) {
	wt, launch, err := worktree.Make(ctx, rt.worktreesDir(), cwd, branch)
	if de := (*worktree.DirError)(nil); errors.As(err, &de) {
		return nil, "", rt.storageError("the worktree directory", "nothing was created", de.Err)
	}
	return wt, launch, err
}

// diffSummaryLocked is the summary a worktree Session's result carries.
// s.mu held; bounded by worktree.DiffSummaryTimeout.
func (rt *runtime) diffSummaryLocked(s *session) *rpc.DiffSummary {
	wt := s.rec.Worktree
	if wt == nil || wt.Removed {
		return nil
	}
	sum, _, _, err := worktree.Diff(context.Background(), rt.worktreesDir(), wt, worktree.DiffSummaryTimeout, false, 0)
	if err != nil {
		sum = rpc.DiffSummary{Error: worktree.ClipText(err.Error(), 400)}
	}
	return &sum
}

// sessionDiff serves session.diff.
func (rt *runtime) sessionDiff(ctx context.Context, peer rpc.Peer, p rpc.SessionDiffParams) (rpc.SessionDiffResult, error) {
	max := p.MaxBytes
	switch {
	case max == 0:
		max = worktree.DefaultDiffBytes
	case max < 1024 || max > worktree.MaxDiffBytes:
		return rpc.SessionDiffResult{}, rpc.InvalidField("max_bytes", "must be between 1024 and %d", worktree.MaxDiffBytes)
	}
	s, err := rt.resolveLast(p.Session)
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
	sum, diff, trunc, err := worktree.Diff(ctx, rt.worktreesDir(), &wt, worktree.DiffTimeout, true, max)
	if err != nil {
		return rpc.SessionDiffResult{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: snap.ID, Message: "git diff failed: " + worktree.ClipText(err.Error(), 400)}
	}
	return rpc.SessionDiffResult{Session: snap, Worktree: wt, Summary: sum, Diff: diff, Truncated: trunc}, nil
}
