// Package worktree is the git work behind session.create's worktree
// option: the room for "change how worktrees work".
//
// Make adds a worktree on a new branch from the HEAD of the repository
// holding cwd, under a root the caller gives (the daemon's
// $DLGT_HOME/worktrees, never inside the user's tree), and says where in
// it to launch (cwd's place). Diff summarizes (and with full, returns) a
// worktree's changes against its base commit, untracked files included,
// without touching the worktree's index. CheckRemovable refuses removing
// a worktree with uncommitted or untracked files or unmerged commits
// unless forced; Remove removes it and its branch.
//
// Every git call has a timeout and bounded output. Refusals are typed
// rpc errors and create nothing; a root that cannot be created is a
// DirError, which the daemon answers as a storage error. The package
// knows no Session and no daemon; its tests (worktree_test.go) run git on
// temporary repositories.
package worktree
