package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// These tests drive git on temporary repositories: no daemon.

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(GitEnv(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo is a repository with one commit (README, sub/keep), and a root for
// worktrees.
func repo(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	r := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(r, "sub"), 0o755)
	os.WriteFile(filepath.Join(r, "README"), []byte("readme\n"), 0o644)
	os.WriteFile(filepath.Join(r, "sub", "keep"), []byte("keep\n"), 0o644)
	gitT(t, r, "init", "-q", "-b", "main")
	gitT(t, r, "add", "README", "sub/keep")
	gitT(t, r, "commit", "-q", "-m", "initial")
	return r, filepath.Join(dir, "home", "worktrees")
}

func invalid(t *testing.T, err error, field string) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || re.Field != field {
		t.Fatalf("err = %v, want INVALID_ARGUMENT on %s", err, field)
	}
}

func TestMakeDiffRemove(t *testing.T) {
	r, root := repo(t)
	ctx := context.Background()
	wt, launch, err := Make(ctx, root, filepath.Join(r, "sub"), "dlgt/a")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(wt.Path, root) || launch != filepath.Join(wt.Path, "sub") || wt.Branch != "dlgt/a" || wt.Repo == "" {
		t.Fatalf("worktree %+v, launch %s", wt, launch)
	}
	if wt.BaseCommit != gitT(t, r, "rev-parse", "HEAD") {
		t.Errorf("base %s is not the repository's HEAD", wt.BaseCommit)
	}
	// The same branch again is refused, and nothing is created.
	_, _, err = Make(ctx, root, r, "dlgt/a")
	invalid(t, err, "worktree.branch")

	os.WriteFile(filepath.Join(wt.Path, "README"), []byte("readme\nmore\n"), 0o644)
	os.WriteFile(filepath.Join(wt.Path, "new"), []byte("a\nb\n"), 0o644)
	sum, diff, trunc, err := Diff(ctx, root, wt, DiffTimeout, true, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 2 || sum.Insertions != 3 || sum.Committed || trunc || !strings.Contains(diff, "+more") {
		t.Errorf("summary %+v, truncated %v, diff:\n%s", sum, trunc, diff)
	}
	if st := gitT(t, wt.Path, "status", "--porcelain"); !strings.Contains(st, "?? new") {
		t.Errorf("Diff touched the worktree's index: status %q", st)
	}
	if err := CheckRemovable(ctx, "s", wt, false); err == nil {
		t.Errorf("a dirty worktree is removable without force")
	} else {
		invalid(t, err, "remove_worktree")
	}
	if err := CheckRemovable(ctx, "s", wt, true); err != nil {
		t.Errorf("force refused: %v", err)
	}
	if err := Remove(wt.Repo, wt.Path, wt.Branch); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree directory is still there: %v", err)
	}
	if out := gitT(t, r, "branch", "--list", "dlgt/a"); out != "" {
		t.Errorf("the branch is still there: %q", out)
	}
}

func TestMakeRefusals(t *testing.T) {
	r, root := repo(t)
	ctx := context.Background()
	for _, b := range []string{"", "-x", "a\x01b", strings.Repeat("b", 201)} {
		_, _, err := Make(ctx, root, r, b)
		invalid(t, err, "worktree.branch")
	}
	_, _, err := Make(ctx, root, t.TempDir(), "dlgt/b")
	invalid(t, err, "worktree")
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("a refused Make created %s", root)
	}
	// A root that cannot be made is a DirError (the daemon's storage error).
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	_, _, err = Make(ctx, filepath.Join(file, "worktrees"), r, "dlgt/c")
	var de *DirError
	if !errors.As(err, &de) {
		t.Errorf("err = %v, want a DirError", err)
	}
}

func TestClipText(t *testing.T) {
	if got := ClipText("abcdef", 3); got != "abc…" {
		t.Errorf("ClipText = %q", got)
	}
	if got := ClipText("ab", 3); got != "ab" {
		t.Errorf("ClipText = %q", got)
	}
}
