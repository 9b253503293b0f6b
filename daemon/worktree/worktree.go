package worktree

// Opt-in git worktrees (session.create worktree). The daemon runs git
// itself, with a timeout and bounded output per call: it makes a worktree
// on a new branch from the HEAD of the repository holding cwd, under
// $DLGT_HOME/worktrees (never inside the user's tree), launches the
// harness there, summarizes the changes after each execution, serves the
// full diff (session.diff) and removes the worktree only when asked
// (session.stop remove_worktree).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

const (
	// gitOutputMax bounds what one git call may print (beyond it the
	// output is cut and the call reported truncated).
	gitOutputMax = 4 << 20
	// gitAddTimeout bounds git worktree add (a checkout of the whole tree).
	gitAddTimeout = 2 * time.Minute
	// gitQuickTimeout bounds the small queries (rev-parse, show-ref, ...).
	gitQuickTimeout = 15 * time.Second
	// DiffSummaryTimeout bounds the summary computed when an execution
	// ends (under the Session's lock, so it is kept short).
	DiffSummaryTimeout = 5 * time.Second
	// DiffTimeout bounds session.diff.
	DiffTimeout = 30 * time.Second
	// Session.diff max_bytes: default and bound.
	DefaultDiffBytes = 256 << 10
	MaxDiffBytes     = 4 << 20
	maxBranchBytes   = 200
)

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// gitError is a failed git call: its arguments, exit and stderr tail.
type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	msg := "git " + strings.Join(e.args, " ") + ": " + e.err.Error()
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

// GitEnv is the environment of the daemon's git calls: the daemon's own,
// without the variables that would point git at another repository or
// index, and never prompting.
func GitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"}, extra...)...)
}

// runGit runs git in dir with a timeout; stdout is kept up to max bytes.
func runGit(ctx context.Context, timeout time.Duration, dir string, env []string, max int, args ...string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = GitEnv()
	}
	out := &limitedBuffer{max: max}
	errb := &limitedBuffer{max: 2048}
	cmd.Stdout, cmd.Stderr = out, errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		return out.buf.Bytes(), out.truncated, &gitError{args: args, err: err, stderr: strings.TrimSpace(errb.buf.String())}
	}
	return out.buf.Bytes(), out.truncated, nil
}

func gitLine(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := runGit(ctx, gitQuickTimeout, dir, nil, 64<<10, args...)
	return strings.TrimSpace(string(out)), err
}

// DefaultBranch is the branch a worktree gets when none is named.
func DefaultBranch(alias string) string { return "dlgt/" + alias }

// ValidateBranchSyntax checks a branch name before git sees it.
func ValidateBranchSyntax(b string) error {
	switch {
	case b == "":
		return rpc.InvalidField("worktree.branch", "must not be empty")
	case len(b) > maxBranchBytes:
		return rpc.InvalidField("worktree.branch", "longer than %d bytes", maxBranchBytes)
	case strings.HasPrefix(b, "-"):
		return rpc.InvalidField("worktree.branch", "must not start with -")
	case strings.ContainsFunc(b, unsafeRune):
		return rpc.InvalidField("worktree.branch", "must not contain control characters")
	}
	return nil
}

// unsafeRune reports C0/C1 controls and bidirectional overrides (the
// daemon refuses them in a Session title by the same rule).
func unsafeRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// worktreeDirName is a branch as one path element.
func worktreeDirName(branch string) string {
	return strings.NewReplacer("/", "-", "\\", "-").Replace(branch)
}

// repoDirName names a repository's directory under worktrees/: its base
// name and a hash of its path, so two repositories of one name differ.
func repoDirName(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return filepath.Base(repo) + "-" + hex.EncodeToString(sum[:4])
}

// Remove removes a worktree and its branch, forced: for a
// create that failed, and for a removal already checked.
func Remove(repo, path, branch string) error {
	ctx := context.Background()
	var errs []error
	if _, err := os.Stat(path); err == nil {
		if _, _, err := runGit(ctx, gitAddTimeout, repo, nil, 64<<10, "worktree", "remove", "--force", "--force", path); err != nil {
			errs = append(errs, err)
		}
	}
	runGit(ctx, gitQuickTimeout, repo, nil, 64<<10, "worktree", "prune")
	if _, err := gitLine(ctx, repo, "show-ref", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		if _, _, err := runGit(ctx, gitQuickTimeout, repo, nil, 64<<10, "branch", "-D", "--", branch); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// dirtyFiles counts a worktree's uncommitted and untracked files.
func dirtyFiles(ctx context.Context, path string) (int, error) {
	out, trunc, err := runGit(ctx, gitQuickTimeout, path, nil, gitOutputMax, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) >= 3 && rec[2] == ' ' {
			n++
		}
	}
	if trunc {
		n++ // at least one more
	}
	return n, nil
}

// unmergedCommits reports whether branch has commits the repository's
// HEAD does not contain (work a branch deletion would lose).
func unmergedCommits(ctx context.Context, repo, branch string) (int, error) {
	out, err := gitLine(ctx, repo, "rev-list", "--count", "refs/heads/"+branch, "--not", "HEAD")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// Diff diffs a worktree's working tree (untracked files included,
// as added) against its base commit. It never touches the worktree's
// index: untracked files are marked intent-to-add in a copy of it. With
// full, the unified diff is returned too, cut at a line boundary to max
// bytes.
func Diff(ctx context.Context, root string, wt *rpc.Worktree, timeout time.Duration, full bool, max int) (rpc.DiffSummary, string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var sum rpc.DiffSummary
	if fi, err := os.Stat(wt.Path); err != nil || !fi.IsDir() {
		return sum, "", false, fmt.Errorf("the worktree %s is gone", wt.Path)
	}
	idx, err := gitLine(ctx, wt.Path, "rev-parse", "--git-path", "index")
	if err != nil {
		return sum, "", false, err
	}
	if !filepath.IsAbs(idx) {
		idx = filepath.Join(wt.Path, idx)
	}
	tmp, err := os.CreateTemp(root, ".index-*")
	if err != nil {
		return sum, "", false, err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	data, rerr := os.ReadFile(idx)
	if rerr == nil {
		_, rerr = tmp.Write(data)
	}
	tmp.Close()
	if rerr != nil || len(data) == 0 {
		os.Remove(tmpName) // git wants a missing index, not an empty file
	}
	env := GitEnv("GIT_INDEX_FILE=" + tmpName)
	if _, _, err := runGit(ctx, timeout, wt.Path, env, 64<<10, "add", "--intent-to-add", "--all"); err != nil {
		return sum, "", false, err
	}
	out, _, err := runGit(ctx, timeout, wt.Path, env, gitOutputMax, "diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", wt.BaseCommit)
	if err != nil {
		return sum, "", false, err
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		f := strings.SplitN(string(rec), "\t", 3)
		if len(f) < 3 {
			continue
		}
		sum.Files++
		ins, _ := strconv.Atoi(f[0]) // "-" for a binary file
		del, _ := strconv.Atoi(f[1])
		sum.Insertions += ins
		sum.Deletions += del
	}
	head, err := gitLine(ctx, wt.Path, "rev-parse", "HEAD")
	if err != nil {
		return sum, "", false, err
	}
	sum.Committed = head != wt.BaseCommit
	if !full {
		return sum, "", false, nil
	}
	diff, trunc, err := runGit(ctx, timeout, wt.Path, env, max+1, "diff", "--no-color", "--no-renames", "--no-ext-diff", wt.BaseCommit)
	if err != nil {
		return sum, "", false, err
	}
	if trunc || len(diff) > max {
		trunc = true
		diff = diff[:max]
		if i := bytes.LastIndexByte(diff, '\n'); i >= 0 {
			diff = diff[:i+1]
		}
	}
	return sum, string(diff), trunc, nil
}

// CheckRemovable refuses removing a worktree with uncommitted or
// untracked files, or whose branch has commits the repository's HEAD
// lacks, unless force.
func CheckRemovable(ctx context.Context, id string, wt *rpc.Worktree, force bool) error {
	if force {
		return nil
	}
	if _, err := os.Stat(wt.Path); err == nil {
		n, err := dirtyFiles(ctx, wt.Path)
		if err != nil {
			return &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: id, Message: "cannot tell whether the worktree is clean: " + ClipText(err.Error(), 300)}
		}
		if n > 0 {
			return &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "remove_worktree", SessionID: id, DirtyFiles: n,
				Message: fmt.Sprintf("the worktree %s has %d uncommitted or untracked file(s); commit or discard them, or remove anyway with force (dlgt session stop --remove-worktree --force), which deletes them", wt.Path, n)}
		}
	}
	if n, err := unmergedCommits(ctx, wt.Repo, wt.Branch); err == nil && n > 0 {
		return &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "remove_worktree", SessionID: id,
			Message: fmt.Sprintf("branch %s has %d commit(s) not in %s's HEAD; merge them, or remove anyway with force (dlgt session stop --remove-worktree --force; the branch is deleted)", wt.Branch, n, wt.Repo)}
	}
	return nil
}

// Make makes the worktree a create asked for: it checks that cwd
// is in a git repository with a commit and that branch is a valid new
// branch name, then adds the worktree under root (the state directory's worktrees/). It
// returns the worktree and the directory to launch in (cwd's place in
// the worktree). On any refusal nothing is created.
func Make(ctx context.Context, root, cwd, branch string) (*rpc.Worktree, string, error) {
	if err := ValidateBranchSyntax(branch); err != nil {
		return nil, "", err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, "", rpc.InvalidField("worktree", "git is not installed on the daemon's PATH")
	}
	repo, err := gitLine(ctx, cwd, "rev-parse", "--show-toplevel")
	if err != nil || repo == "" {
		return nil, "", rpc.InvalidField("worktree", "%s is not inside a git repository (a worktree needs one)", ClipText(cwd, 80))
	}
	base, err := gitLine(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil || base == "" {
		return nil, "", rpc.InvalidField("worktree", "the repository %s has no commit yet (a worktree starts from HEAD)", ClipText(repo, 80))
	}
	if _, err := gitLine(ctx, repo, "check-ref-format", "--branch", branch); err != nil {
		return nil, "", rpc.InvalidField("worktree.branch", "%q is not a valid branch name", ClipText(branch, 80))
	}
	if _, err := gitLine(ctx, repo, "show-ref", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return nil, "", rpc.InvalidField("worktree.branch", "branch %q already exists in %s; name another (worktree.branch: dlgt session create --worktree=BRANCH) or delete it", ClipText(branch, 80), ClipText(repo, 80))
	}
	dir := filepath.Join(root, repoDirName(repo))
	path := filepath.Join(dir, worktreeDirName(branch))
	if _, err := os.Lstat(path); err == nil {
		return nil, "", rpc.InvalidField("worktree.branch", "%s already exists (a worktree of another branch of that name); name another branch (worktree.branch: dlgt session create --worktree=BRANCH)", ClipText(path, 80))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", &DirError{Err: err}
	}
	if _, _, err := runGit(ctx, gitAddTimeout, repo, nil, 64<<10, "worktree", "add", "--quiet", "-b", branch, path, base); err != nil {
		// git cleans up a failed add; a branch it made first goes too.
		Remove(repo, path, branch)
		return nil, "", &rpc.Error{Code: rpc.CodeLaunchFailed, Field: "worktree", Message: "git worktree add failed: " + ClipText(err.Error(), 400)}
	}
	launch := path
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		if rel, err := filepath.Rel(repo, real); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			if fi, err := os.Stat(filepath.Join(path, rel)); err == nil && fi.IsDir() {
				launch = filepath.Join(path, rel)
			}
		}
	}
	return &rpc.Worktree{Path: path, Branch: branch, BaseCommit: base, Repo: repo}, launch, nil
}

// DirError is Make failing to create its directory under root: the
// daemon answers it as a storage error (a full disk waits).
type DirError struct{ Err error }

func (e *DirError) Error() string { return "creating the worktree directory: " + e.Err.Error() }
func (e *DirError) Unwrap() error { return e.Err }
