package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionReadCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "read SESSION",
		Short: "Print a Session's snapshot and its latest retained result",
		Long: `Print a Session's snapshot and its latest retained result (session.read).

-o text prints them for people in one block: the Session and its state,
the result's status and timing, its error, what it cost (usage: input,
cache and output tokens and model requests, as the harness recorded them),
and its final text as it is.`,
		Example: `  dlgt session read review
  dlgt session read review -o text`,
		Args: jsonArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			params := rpc.SessionReadParams{Session: args[0]}
			if !text {
				return e.callAndPrint(cmd, rpc.MethodSessionRead, params)
			}
			raw, err := e.call(cmd.Context(), rpc.MethodSessionRead, params)
			if err != nil {
				return printFailure(cmd, err)
			}
			var res rpc.SessionReadResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return printFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected session.read result: %v", err))
			}
			writeReadText(cmd.OutOrStdout(), res, time.Now())
			return nil
		},
	}
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}

// writeReadText prints a session.read answer for a person.
func writeReadText(w io.Writer, res rpc.SessionReadResult, now time.Time) {
	s := res.Session
	name := s.ID
	if s.Alias != "" {
		name = s.Alias + " (" + s.ID + ")"
	}
	fmt.Fprintf(w, "session  %s\ntitle    %s\nharness  %s", name, oneLine(s.Title, 120), s.Harness)
	if s.Model != "" {
		fmt.Fprintf(w, ", model %s", s.Model)
	}
	fmt.Fprintf(w, "\nstate    %s (updated %s)\n", s.State, relTime(s.UpdatedAtMS, now))
	r := res.Result
	if r == nil {
		fmt.Fprintln(w, "result   none retained yet")
		return
	}
	fmt.Fprintf(w, "result   #%d %s, finished %s", r.ExecutionSeq, r.Status, relTime(r.CompletedAtMS, now))
	if r.StartedAtMS > 0 && r.CompletedAtMS >= r.StartedAtMS {
		fmt.Fprintf(w, " after %s", (time.Duration(r.CompletedAtMS-r.StartedAtMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	fmt.Fprintln(w)
	if r.Error != nil {
		fmt.Fprintf(w, "error    %s: %s\n", r.Error.Code, oneLine(r.Error.Message, 400))
	}
	fmt.Fprintf(w, "usage    %s\n", usageText(r.Usage))
	writeFinalText(w, r)
}

// writeFinalText prints a result's final text as it is, or says there is
// none.
func writeFinalText(w io.Writer, r *rpc.Result) {
	switch {
	case r.FinalText == nil:
		fmt.Fprintln(w, "final text: none recorded")
	case *r.FinalText == "":
		fmt.Fprintln(w, "final text: empty")
	default:
		fmt.Fprintf(w, "final text (%s):\n", r.FinalTextSource)
		fmt.Fprint(w, *r.FinalText)
		if !strings.HasSuffix(*r.FinalText, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// usageText is a result's usage for a person: "1,234 tokens in 2 requests
// (input 1,000, cache read 0, cache write 0, output 234 of which 100
// reasoning)", or why there is none.
func usageText(raw json.RawMessage) string {
	u, err := rpc.DecodeUsage(raw)
	switch {
	case err != nil:
		return "unreadable (" + err.Error() + ")"
	case u == nil:
		return "not recorded by the harness"
	}
	s := fmt.Sprintf("%s tokens in %d model %s (input %s, cache read %s, cache write %s, output %s",
		thousands(u.TotalTokens), u.Requests, plural(u.Requests, "request", "requests"), thousands(u.InputTokens), thousands(u.CacheReadInputTokens),
		thousands(u.CacheCreationInputTokens), thousands(u.OutputTokens))
	if u.ReasoningOutputTokens > 0 {
		s += " of which " + thousands(u.ReasoningOutputTokens) + " reasoning"
	}
	return s + ")"
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
