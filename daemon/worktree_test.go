package daemon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/daemon/worktree"
	"github.com/dlgt-dev/dlgt/rpc"
)

// git runs git in dir for a test, failing it on error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(worktree.GitEnv(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newGitRepo is a repository with one commit: README and sub/keep.
func newGitRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	os.WriteFile(filepath.Join(repo, "README"), []byte("readme\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "sub", "keep"), []byte("keep\n"), 0o644)
	gitT(t, repo, "init", "-q", "-b", "main")
	gitT(t, repo, "add", "README", "sub/keep")
	gitT(t, repo, "commit", "-q", "-m", "initial")
	return repo
}

func wantInvalid(t testing.TB, err error, field, substr string) *rpc.Error {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || re.Field != field || !strings.Contains(re.Message, substr) {
		t.Fatalf("err = %v (%+v), want INVALID_ARGUMENT field %s naming %q", err, re, field, substr)
	}
	return re
}

func worktreeCount(t testing.TB, repo string) int {
	t.Helper()
	return strings.Count(gitT(t, repo, "worktree", "list", "--porcelain"), "worktree ")
}

func TestWorktreeSessions(t *testing.T) {
	td := startTestDaemon(t)
	repo := newGitRepo(t)
	env := map[string]string{}
	for k, v := range td.env {
		env[k] = v
	}
	for _, kv := range []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"} {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	create := func(reqID, cwd, prompt string, wt *rpc.WorktreeOption) (rpc.Receipt, error) {
		var r rpc.Receipt
		err := td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
			Title: "worktree test", Harness: "claude", Cwd: cwd, Prompt: prompt,
			RequestID: reqID, Environment: env, Worktree: wt,
		}, &r)
		return r, err
	}

	// A: writes a file from a subdirectory of the repository.
	promptA := "[[tool echo hello > made-by-a.txt]] write a file"
	ra, err := create("wt-a", filepath.Join(repo, "sub"), promptA, &rpc.WorktreeOption{})
	if err != nil {
		t.Fatal(err)
	}
	wa := ra.Session.Worktree
	realRepo, _ := filepath.EvalSymlinks(repo)
	if wa == nil || wa.Branch != "dlgt/"+ra.Session.Alias || wa.Repo != realRepo || wa.BaseCommit != gitT(t, repo, "rev-parse", "HEAD") {
		t.Fatalf("worktree = %+v (alias %s)", wa, ra.Session.Alias)
	}
	if !strings.HasPrefix(wa.Path, filepath.Join(td.paths.Home, "worktrees")+"/") || ra.Session.Cwd != filepath.Join(wa.Path, "sub") {
		t.Fatalf("path %s cwd %s, want under %s/worktrees, cwd in sub", wa.Path, ra.Session.Cwd, td.paths.Home)
	}
	_, res := td.waitResult(t, ra.Session.ID, ra.Cursor)
	if res.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(wa.Path, "sub", "made-by-a.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("file in the worktree: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "sub", "made-by-a.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file is in the user's checkout: %v", err)
	}
	if d := res.Diff; d == nil || d.Files != 1 || d.Insertions != 1 || d.Deletions != 0 || d.Committed || d.Error != "" {
		t.Fatalf("result diff = %+v", d)
	}
	var rd rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: ra.Session.ID}, &rd)
	if rd.Result == nil || rd.Result.Diff == nil || rd.Result.Diff.Files != 1 || rd.Session.Worktree == nil {
		t.Fatalf("session.read = %+v", rd)
	}
	var diff rpc.SessionDiffResult
	td.mustCall(rpc.MethodSessionDiff, rpc.SessionDiffParams{Session: ra.Session.ID}, &diff)
	if !strings.Contains(diff.Diff, "+++ b/sub/made-by-a.txt") || !strings.Contains(diff.Diff, "+hello") || diff.Truncated || diff.Summary.Files != 1 {
		t.Fatalf("session.diff = %+v", diff)
	}

	// A replay is the same Session and makes no second worktree.
	n := worktreeCount(t, repo)
	again, err := create("wt-a", filepath.Join(repo, "sub"), promptA, &rpc.WorktreeOption{})
	if err != nil || !again.Replayed || again.Session.ID != ra.Session.ID || worktreeCount(t, repo) != n {
		t.Fatalf("replay = %+v, %v; worktrees %d -> %d", again, err, n, worktreeCount(t, repo))
	}
	// The worktree option is part of the payload identity.
	_, err = create("wt-a", filepath.Join(repo, "sub"), promptA, &rpc.WorktreeOption{Branch: "other"})
	wantInvalid(t, err, "request_id", "")

	// B, at the same time as A: its own branch; it writes and commits.
	rb, err := create("wt-b", repo, "[[tool echo b > b.txt && git add b.txt && git commit -qm b]] commit a file", &rpc.WorktreeOption{Branch: "feature/b"})
	if err != nil {
		t.Fatal(err)
	}
	wb := rb.Session.Worktree
	if wb == nil || wb.Branch != "feature/b" || wb.Path == wa.Path {
		t.Fatalf("B's worktree = %+v, A's %+v", wb, wa)
	}
	_, res = td.waitResult(t, rb.Session.ID, rb.Cursor)
	if d := res.Diff; d == nil || d.Files != 1 || d.Insertions != 1 || !d.Committed {
		t.Fatalf("B's diff = %+v", d)
	}
	if _, err := os.Stat(filepath.Join(repo, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("B's file is in the user's checkout: %v", err)
	}

	// Refusals change nothing.
	n = worktreeCount(t, repo)
	_, err = create("wt-c", repo, "hi", &rpc.WorktreeOption{Branch: "feature/b"})
	wantInvalid(t, err, "worktree.branch", "already exists")
	wantInvalid(t, err, "worktree.branch", "--worktree=BRANCH")
	_, err = create("wt-d", t.TempDir(), "hi", &rpc.WorktreeOption{})
	wantInvalid(t, err, "worktree", "not inside a git repository")
	_, err = create("wt-e", repo, "hi", &rpc.WorktreeOption{Branch: "bad..name"})
	wantInvalid(t, err, "worktree.branch", "not a valid branch name")
	if worktreeCount(t, repo) != n {
		t.Fatalf("a refused create made a worktree")
	}
	var list rpc.SessionListResult
	td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("sessions = %d, want 2", len(list.Sessions))
	}

	// Stop keeps both worktrees and branches.
	for _, id := range []string{ra.Session.ID, rb.Session.ID} {
		td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: id}, nil)
	}
	for _, w := range []*rpc.Worktree{wa, wb} {
		if _, err := os.Stat(w.Path); err != nil {
			t.Fatalf("stop removed %s: %v", w.Path, err)
		}
		gitT(t, repo, "show-ref", "--verify", "refs/heads/"+w.Branch)
	}

	// The daemon keeps track of them across a restart.
	td.stop()
	td.start()
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: ra.Session.ID}, &rd)
	if rd.Session.Worktree == nil || *rd.Session.Worktree != *wa {
		t.Fatalf("after restart: %+v", rd.Session.Worktree)
	}

	// A resume relaunches in the same worktree.
	var rr rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: ra.Session.ID, Prompt: "[[tool echo again > again.txt]] again", RequestID: "wt-a-2", Resume: true, Environment: env}, &rr)
	_, res = td.waitResult(t, ra.Session.ID, rr.Cursor)
	if _, err := os.Stat(filepath.Join(wa.Path, "sub", "again.txt")); err != nil || res.Diff == nil || res.Diff.Files != 2 {
		t.Fatalf("after resume: %v, diff %+v", err, res.Diff)
	}
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: ra.Session.ID}, nil)

	// Removal refuses a dirty worktree (A: untracked files) and one
	// whose branch has unmerged commits (B), and changes nothing.
	err = td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: ra.Session.ID, RemoveWorktree: true}, nil)
	wantInvalid(t, err, "remove_worktree", "--remove-worktree --force")
	if re := wantInvalid(t, err, "remove_worktree", "2 uncommitted or untracked"); re.DirtyFiles != 2 {
		t.Fatalf("dirty_files = %d", re.DirtyFiles)
	}
	err = td.call(rpc.MethodSessionStop, rpc.SessionStopParams{Session: rb.Session.ID, RemoveWorktree: true}, nil)
	wantInvalid(t, err, "remove_worktree", "not in")
	wantInvalid(t, err, "remove_worktree", "--remove-worktree --force")
	if _, err := os.Stat(wa.Path); err != nil {
		t.Fatal(err)
	}
	// Clean once the leader merged B's branch: removed with its branch.
	gitT(t, repo, "merge", "-q", "--ff-only", "feature/b")
	var sr rpc.SessionResult
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: rb.Session.ID, RemoveWorktree: true}, &sr)
	if _, err := os.Stat(wb.Path); !os.IsNotExist(err) || sr.Session.Worktree == nil || !sr.Session.Worktree.Removed {
		t.Fatalf("B not removed: %v %+v", err, sr.Session.Worktree)
	}
	if out, _ := exec.Command("git", "-C", repo, "branch", "--list", "feature/b").Output(); len(out) != 0 {
		t.Fatalf("branch kept: %s", out)
	}
	// Force removes the dirty one.
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: ra.Session.ID, RemoveWorktree: true, Force: true}, &sr)
	if _, err := os.Stat(wa.Path); !os.IsNotExist(err) {
		t.Fatalf("A not removed: %v", err)
	}
	if worktreeCount(t, repo) != 1 {
		t.Fatalf("worktrees left: %s", gitT(t, repo, "worktree", "list"))
	}
	// A removed worktree's Session cannot be relaunched.
	err = td.call(rpc.MethodSessionRestart, rpc.SessionRestartParams{Session: ra.Session.ID}, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeSessionUnavailable {
		t.Fatalf("restart after removal: %v", err)
	}
}

// A create whose harness fails to start leaves no Session, and takes the
// worktree and branch it made with it.
func TestWorktreeFailedLaunchRemovesIt(t *testing.T) {
	repo := newGitRepo(t)
	env := fakeClaudeEnv(t)
	bad := filepath.Join(t.TempDir(), "claude")
	os.WriteFile(bad, []byte("#!/bin/sh\nexit 3\n"), 0o755)
	env["DLGT_CLAUDE_BIN"] = bad
	td := startTestDaemonWith(t, env)
	err := td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "doomed", Harness: "claude", Cwd: repo, Prompt: "hi", RequestID: "wt-fail",
		Environment: env, Worktree: &rpc.WorktreeOption{Branch: "doomed"}, StartupTimeoutMS: 20000,
	}, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.SessionID != "" {
		t.Fatalf("create: %v", err)
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Fatalf("worktrees after a failed launch: %s", gitT(t, repo, "worktree", "list"))
	}
	if out := gitT(t, repo, "branch", "--list", "doomed"); out != "" {
		t.Fatalf("branch kept: %q", out)
	}
	dirs, _ := filepath.Glob(filepath.Join(td.paths.Home, "worktrees", "*", "*"))
	if len(dirs) != 0 {
		t.Fatalf("left behind: %v", dirs)
	}
}

// Two creates from one repository at the same time both get a worktree,
// on separate branches and directories.
func TestWorktreeConcurrentCreates(t *testing.T) {
	td := startTestDaemon(t)
	repo := newGitRepo(t)
	type out struct {
		r   rpc.Receipt
		err error
	}
	res := make(chan out, 4)
	for i := 0; i < 4; i++ {
		go func(i int) {
			var r rpc.Receipt
			err := td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: "concurrent", Harness: "claude", Cwd: repo, Prompt: "hi",
				RequestID: "wt-conc-" + strconv.Itoa(i), Environment: td.env, Worktree: &rpc.WorktreeOption{},
			}, &r)
			res <- out{r, err}
		}(i)
	}
	branches, paths := map[string]bool{}, map[string]bool{}
	for i := 0; i < 4; i++ {
		o := <-res
		if o.err != nil || o.r.Session.Worktree == nil {
			t.Fatalf("create: %v %+v", o.err, o.r)
		}
		branches[o.r.Session.Worktree.Branch], paths[o.r.Session.Worktree.Path] = true, true
	}
	if len(branches) != 4 || len(paths) != 4 || worktreeCount(t, repo) != 5 {
		t.Fatalf("branches %v paths %v; %s", branches, paths, gitT(t, repo, "worktree", "list"))
	}
}

// session.diff cuts a long diff at a line boundary within max_bytes and
// says so; a max_bytes out of bounds and a Session without a worktree
// are INVALID_ARGUMENT.
func TestWorktreeDiffBounded(t *testing.T) {
	td := startTestDaemon(t)
	repo := newGitRepo(t)
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "big", Harness: "claude", Cwd: repo, Prompt: "[[tool seq 1 3000 > big.txt]] write", RequestID: "wt-big",
		Environment: td.env, Worktree: &rpc.WorktreeOption{},
	}, &r)
	_, res := td.waitResult(t, r.Session.ID, r.Cursor)
	if res.Diff == nil || res.Diff.Insertions != 3000 {
		t.Fatalf("diff summary %+v", res.Diff)
	}
	var d rpc.SessionDiffResult
	td.mustCall(rpc.MethodSessionDiff, rpc.SessionDiffParams{Session: r.Session.ID, MaxBytes: 1024}, &d)
	if !d.Truncated || len(d.Diff) > 1024 || len(d.Diff) < 900 || !strings.HasSuffix(d.Diff, "\n") || d.Summary.Insertions != 3000 {
		t.Fatalf("bounded diff: truncated %v, %d bytes, summary %+v", d.Truncated, len(d.Diff), d.Summary)
	}
	err := td.call(rpc.MethodSessionDiff, rpc.SessionDiffParams{Session: r.Session.ID, MaxBytes: 10}, nil)
	wantInvalid(t, err, "max_bytes", "between")
	plain := td.create(t, "wt-plain", "hi")
	err = td.call(rpc.MethodSessionDiff, rpc.SessionDiffParams{Session: plain.Session.ID}, nil)
	wantInvalid(t, err, "session", "no worktree")
}

// Stop, review, remove by alias: once its Session stopped, an alias still
// names it for the calls that read it or clean up after it (session.read,
// session.diff, session.stop with remove_worktree, scrollback), while a
// send by it stays NOT_FOUND and an active Session taking the alias wins.
func TestWorktreeCleanupByAliasAfterStop(t *testing.T) {
	td := startTestDaemon(t)
	repo := newGitRepo(t)
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "alias cleanup", Alias: "wt1", Harness: "claude", Cwd: repo, Prompt: "[[tool echo x > x.txt]] write",
		RequestID: "wt-alias-1", Environment: td.env, Worktree: &rpc.WorktreeOption{},
	}, &r)
	td.waitResult(t, r.Session.ID, r.Cursor)
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: "wt1"}, nil)

	var rd rpc.SessionReadResult
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "wt1"}, &rd)
	if rd.Session.ID != r.Session.ID || rd.Session.State != rpc.StateStopped {
		t.Fatalf("read by alias after stop = %+v", rd.Session)
	}
	var diff rpc.SessionDiffResult
	td.mustCall(rpc.MethodSessionDiff, rpc.SessionDiffParams{Session: "@wt1"}, &diff)
	if diff.Session.ID != r.Session.ID || !strings.Contains(diff.Diff, "+x") {
		t.Fatalf("diff by alias after stop = %+v", diff)
	}
	var page rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: "wt1"}, &page)
	err := td.call(rpc.MethodSessionSend, rpc.SessionSendParams{Session: "wt1", Prompt: "more", RequestID: "wt-alias-2"}, nil)
	if !errors.Is(err, rpc.ErrNotFound) || !strings.Contains(err.Error(), r.Session.ID) {
		t.Fatalf("send by a stopped Session's alias: %v", err)
	}
	var sr rpc.SessionResult
	td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: "wt1", RemoveWorktree: true, Force: true}, &sr)
	if sr.Session.ID != r.Session.ID || sr.Session.Worktree == nil || !sr.Session.Worktree.Removed {
		t.Fatalf("stop --remove-worktree by alias = %+v", sr.Session)
	}

	// A new Session taking the alias is what it names now.
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "alias reuse", Alias: "wt1", Harness: "claude", Cwd: t.TempDir(), Prompt: "hi",
		RequestID: "wt-alias-3", Environment: td.env,
	}, &r2)
	td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: "wt1"}, &rd)
	if rd.Session.ID != r2.Session.ID || rd.Session.ID == r.Session.ID {
		t.Fatalf("read by a reused alias = %s, want the active %s", rd.Session.ID, r2.Session.ID)
	}
}
