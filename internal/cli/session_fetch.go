package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionFetchCommand(e *Env) *cobra.Command {
	var (
		all      bool
		cursor   string
		wait     time.Duration
		until    string
		screen   string
		maxBytes int
	)
	cmd := &cobra.Command{
		Use:   "fetch (SESSION | --all) [--cursor C] [--wait D] [--until any|result] [--screen N] [--max-bytes N]",
		Short: "Fetch a Session's events, results and screen since a cursor",
		Long: `Fetch a Session's events, results and screen delta since a cursor, waiting
up to --wait (a Go duration such as 30s or 15m) for something to happen.

Without --cursor the response is a bounded baseline with a fresh cursor; pass
the returned cursor to the next fetch. Every observation (snapshot, change,
result, blocked, page_full, gap, timeout) exits 0: branch on "reason".
--screen takes a stable-line count, or true/false. -o text prints each
Session's state, events and results (final_text as it is) and the cursor to
continue with, for a person.`,
		Example: `  dlgt session fetch review --cursor 1842 --wait 15m --until result`,
		Args:    JSONArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p rpc.SessionFetchParams
			switch {
			case all && len(args) > 0:
				return UsageFailure(cmd, Usagef("give SESSION or --all, not both"))
			case !all && len(args) == 0:
				return UsageFailure(cmd, Usagef("give SESSION or --all"))
			case all:
				p.All = true
			default:
				p.Session = args[0]
			}
			if cmd.Flags().Changed("cursor") {
				p.Cursor, _ = json.Marshal(cursor)
			}
			ms, err := durationMS("wait", wait)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			p.WaitMS = ms
			if until != "" && until != "any" && until != "result" {
				return PrintFailure(cmd, Usagef("--until must be any or result"))
			}
			p.Until = until
			if cmd.Flags().Changed("screen") {
				raw, err := screenParam(screen)
				if err != nil {
					return PrintFailure(cmd, err)
				}
				p.Screen = raw
			}
			if maxBytes < 0 {
				return PrintFailure(cmd, Usagef("--max-bytes must not be negative"))
			}
			p.MaxBytes = maxBytes
			text, err := TextOutput(cmd)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			return e.printFetch(cmd, p, text)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "fetch every Session of this daemon")
	f.StringVar(&cursor, "cursor", "", "position returned by the previous fetch or receipt")
	f.DurationVar(&wait, "wait", 0, "how long to wait for a change (e.g. 15m); sent as wait_ms")
	f.StringVar(&until, "until", "", "what completes the wait: any or result")
	f.StringVar(&screen, "screen", "", "stable screen lines to include (a count, or true/false)")
	f.IntVar(&maxBytes, "max-bytes", 0, "bound on the printed response line")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}

// printFetch makes one session.fetch and prints its answer: the JSON line,
// or with text the -o text form. session create --wait ends with it too.
func (e *Env) printFetch(cmd *cobra.Command, p rpc.SessionFetchParams, text bool) error {
	_, raw, err := call(e, cmd.Context(), (*client.Client).SessionFetch, p)
	switch {
	case err != nil:
		return PrintFailure(cmd, err)
	case !text:
		return PrintOK(cmd, raw)
	}
	e.progress.Stop()
	return render.Fetch(cmd.OutOrStdout(), raw, time.Now())
}

// screenParam spells --screen on the wire: a boolean or a line count.
func screenParam(s string) (json.RawMessage, error) {
	switch strings.ToLower(s) {
	case "true":
		return json.RawMessage("true"), nil
	case "false":
		return json.RawMessage("false"), nil
	}
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return nil, Usagef("--screen must be a line count or true/false, not %q", s)
	}
	return json.RawMessage(strconv.FormatUint(n, 10)), nil
}
