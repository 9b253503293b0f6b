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

// maxResultPages bounds the fetch loop of session results: retention keeps
// at most 128 results, 4 a page, so a loop this long means a daemon that
// keeps answering has_more without progress.
const maxResultPages = 4096

func newSessionResultsCommand(e *env) *cobra.Command {
	var after uint64
	cmd := &cobra.Command{
		Use:   "results SESSION [--after N]",
		Short: "Print every retained result of a Session, oldest first",
		Long: `Print every result the daemon retains for a Session (the newest 128, or
16 MiB of them), oldest first, including those of earlier daemon lifetimes:
session.fetch with after_execution, then its cursor while has_more, with each
chunked final_text joined. --after N starts after execution N.

JSON prints {"ok":true,"session":ID,"results":[...],"cursor":C}: C is a
position after the last result returned, to fetch from for later ones.
-o text prints each result for a person.`,
		Example: `  dlgt session results review
  dlgt session results review --after 3 -o text`,
		Args: jsonArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			out, err := e.allResults(cmd, args[0], after)
			if err != nil {
				return printFailure(cmd, err)
			}
			if text {
				writeResultsText(cmd.OutOrStdout(), out, time.Now())
				return nil
			}
			return printOK(cmd, out)
		},
	}
	cmd.Flags().Uint64Var(&after, "after", 0, "start after this execution_seq")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}

// sessionResults is the output of dlgt session results.
type sessionResults struct {
	Session string       `json:"session"`
	Results []rpc.Result `json:"results"`
	Cursor  string       `json:"cursor"`
}

// allResults pages through a Session's retained results after execution
// after, joining chunked final_text.
func (e *env) allResults(cmd *cobra.Command, ref string, after uint64) (*sessionResults, error) {
	out := &sessionResults{Results: []rpc.Result{}}
	p := rpc.SessionFetchParams{Session: ref, Screen: json.RawMessage("false"), AfterExecution: &after}
	for page := 0; ; page++ {
		if page == maxResultPages {
			return nil, rpc.Errorf(rpc.CodeInternal, "session results: no end after %d pages", page)
		}
		raw, err := e.call(cmd.Context(), rpc.MethodSessionFetch, p)
		if err != nil {
			return nil, err
		}
		var doc rpc.FetchDocument
		if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Sessions) != 1 {
			return nil, rpc.Errorf(rpc.CodeInternal, "unexpected session.fetch result: %v", err)
		}
		out.Session, out.Cursor = doc.Sessions[0].Session.ID, doc.Cursor
		for _, r := range doc.Sessions[0].Results {
			out.Results = joinChunk(out.Results, r)
		}
		if !doc.HasMore {
			return out, nil
		}
		cur, _ := json.Marshal(doc.Cursor)
		p = rpc.SessionFetchParams{Session: ref, Screen: json.RawMessage("false"), Cursor: cur}
	}
}

// joinChunk adds r to rs: a piece continuing the last result's final_text
// is appended to it. The chunk fields are dropped: every result is whole.
func joinChunk(rs []rpc.Result, r rpc.Result) []rpc.Result {
	off := 0
	if r.FinalTextOffset != nil {
		off = *r.FinalTextOffset
	}
	r.FinalTextOffset, r.FinalTextComplete = nil, nil
	if n := len(rs); off > 0 && n > 0 && rs[n-1].ExecutionSeq == r.ExecutionSeq {
		prev := &rs[n-1]
		t := derefOr(prev.FinalText) + derefOr(r.FinalText)
		prev.FinalText = &t
		return rs
	}
	if n := len(rs); n > 0 && rs[n-1].ExecutionSeq == r.ExecutionSeq {
		rs[n-1] = r // a replayed piece from the start: the newer copy wins
		return rs
	}
	return append(rs, r)
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// writeResultsText prints each result for a person.
func writeResultsText(w io.Writer, out *sessionResults, now time.Time) {
	fmt.Fprintf(w, "session  %s: %d retained %s\n", out.Session, len(out.Results), plural(len(out.Results), "result", "results"))
	for _, r := range out.Results {
		fmt.Fprintf(w, "\nresult   #%d %s, finished %s\n", r.ExecutionSeq, r.Status, relTime(r.CompletedAtMS, now))
		if r.Error != nil {
			fmt.Fprintf(w, "error    %s: %s\n", r.Error.Code, oneLine(r.Error.Message, 400))
		}
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
}
