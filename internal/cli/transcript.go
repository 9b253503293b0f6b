package cli

import (
	"encoding/base64"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/rpc"
)

func newTranscriptCommand(e *Env) *cobra.Command {
	var (
		raw   bool
		after int64
		limit int
	)
	cmd := &cobra.Command{
		Use:   "transcript SESSION [--after N] [--limit N]",
		Short: "Write a Session's raw PTY transcript bytes to stdout",
		Long: `Write a Session's raw PTY output bytes to stdout, for explicit diagnosis.

The bytes may contain control sequences, redraw noise and secrets the
provider printed (rendered text is dlgt scrollback). Raw bytes are the only
form, so --raw is optional (accepted as before). Pages are followed
until the end unless --limit bounds the bytes of a single page. stdout
carries only transcript bytes: a failure is printed as the
{"ok":false,"error":{...}} line on stderr, with its exit status.`,
		Example: `  dlgt transcript review > review.raw`,
		Args:    JSONArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			fail := func(err error) error {
				cmd.SetOut(cmd.ErrOrStderr())
				return PrintFailure(cmd, err)
			}
			out := cmd.OutOrStdout()
			if after < 0 || limit < 0 {
				return fail(Usagef("--after and --limit must not be negative"))
			}
			limited := cmd.Flags().Changed("limit")
			c, err := e.Client()
			if err != nil {
				return fail(err)
			}
			for {
				p := rpc.TranscriptReadRawParams{Session: args[0], After: after, LimitBytes: limit}
				page, err := c.TranscriptReadRaw(cmd.Context(), p)
				if err != nil {
					return fail(err)
				}
				data, err := base64.StdEncoding.DecodeString(page.DataBase64)
				if err != nil {
					return fail(rpc.Errorf(rpc.CodeInternal, "transcript page: %v", err))
				}
				if _, err := out.Write(data); err != nil {
					return err
				}
				if limited || !page.HasMore || page.NextAfter <= after {
					return nil
				}
				after = page.NextAfter
			}
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "write the raw bytes (the only form: optional)")
	cmd.Flags().Int64Var(&after, "after", 0, "byte offset to start after")
	cmd.Flags().IntVar(&limit, "limit", 0, "bytes of one page; fetch only that page")
	return cmd
}
