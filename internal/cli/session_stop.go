package cli

import (
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionStopCommand(e *Env) *cobra.Command {
	var force, removeWorktree bool
	cmd := &cobra.Command{
		Use:   "stop SESSION [--force] [--remove-worktree]",
		Short: "Stop a Session's harness process",
		Long: `Stop a Session's harness process group (session.stop): SIGTERM, then
SIGKILL after 5 s. The Session keeps its id and history; session send with
resume continues it later.

Without --force a stop never interrupts work: a Session with an active
execution is refused with SESSION_BUSY (exit 5; cancel it first, or wait
for its result), and one that is starting, restarting or stopping with
SESSION_UNAVAILABLE. --force stops anyway: the active execution ends
interrupted (error code "stopped") and the process group is killed at once.

A Session made with --worktree keeps its worktree and branch when stopped.
--remove-worktree also removes them (git worktree remove, git branch -D);
it is refused (INVALID_ARGUMENT naming dirty_files, nothing stopped or
removed) while the worktree has uncommitted or untracked files, or while
the branch has commits the repository's HEAD lacks, unless --force.`,
		Example: `  dlgt session stop review
  dlgt session stop review --force
  dlgt session stop fix-flaky --remove-worktree`,
		Args: JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callAndPrint(e, cmd, (*client.Client).SessionStop, rpc.SessionStopParams{Session: args[0], Force: force, RemoveWorktree: removeWorktree}, render.SessionResult)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "stop even while an execution is active (interrupting it) and kill at once; with --remove-worktree, remove a dirty worktree or unmerged branch too")
	cmd.Flags().BoolVar(&removeWorktree, "remove-worktree", false, "also remove the Session's git worktree and its branch (refused when there is uncommitted or unmerged work, unless --force)")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
