package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionDiffCommand(e *Env) *cobra.Command {
	var maxBytes int
	cmd := &cobra.Command{
		Use:   "diff SESSION [--max-bytes N] [-o raw|text|json]",
		Short: "Print what a worktree Session changed: its diff against the base commit",
		Long: `Print the diff of a Session made with --worktree against the commit its
worktree started from (session.diff): committed, staged and unstaged
changes and untracked files (as added), as one unified diff.

-o raw (the default) prints the diff itself, ready for git apply or a
pager; -o text prints the stat (files changed, insertions, deletions,
whether the Session committed); -o json the whole session.diff document.
The diff is cut at a line boundary after --max-bytes (default 256 KiB, at
most 4 MiB); a cut diff is said on stderr (raw) or in "truncated".`,
		Example: `  dlgt session diff fix-flaky | less
  dlgt session diff fix-flaky -o text`,
		Args: JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := rpc.SessionDiffParams{Session: args[0], MaxBytes: maxBytes}
			switch out, _ := cmd.Flags().GetString("output"); out {
			case "json", "text":
				return callAndPrint(e, cmd, (*client.Client).SessionDiff, params, render.SessionDiff)
			case "", "raw":
			default:
				return UsageFailure(cmd, Usagef("--output must be raw, text or json, not %q", out))
			}
			res, _, err := call(e, cmd.Context(), (*client.Client).SessionDiff, params)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			io.WriteString(cmd.OutOrStdout(), res.Diff)
			if res.Truncated {
				cmd.PrintErrf("dlgt: the diff was cut at %d bytes; raise --max-bytes (at most 4 MiB) or run git diff %s in %s\n", len(res.Diff), res.Worktree.BaseCommit, res.Worktree.Path)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&maxBytes, "max-bytes", 0, "cut the diff after this many bytes (default 256 KiB, at most 4 MiB)")
	cmd.Flags().StringP("output", "o", "raw", "output format: raw (the diff, the default), text (the stat) or json")
	AddPretty(cmd)
	return cmd
}
