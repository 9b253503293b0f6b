package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// waitFetchBytes is the fetch size WaitResult asks for: the contract's
// ceiling, so a long final_text arrives in as few pieces as possible.
const waitFetchBytes = 256 << 10

// maxFinalText bounds the final_text a join assembles (a result's text is
// at most what the daemon retains; this keeps a malformed stream bounded).
const maxFinalText = 8 << 20

// maxResultPages bounds the fetch loop of Results: retention keeps at
// most 128 results, 4 a page, so a loop this long means a daemon that
// keeps answering has_more without progress.
const maxResultPages = 4096

// JoinChunk adds the fetched result r to rs, joining a final_text the
// daemon chunked (final_text_offset, final_text_complete) into one whole
// result. A piece at offset N continues the text of the same execution at
// byte N: the text is the first N bytes of what was joined so far
// followed by the piece, so a continuation (N = the length so far) is
// appended and a piece replayed from the start (offset 0, after a cursor
// was fetched again) replaces the earlier copy instead of doubling it.
// The other fields (status, error, usage) are the latest piece's. A piece
// of another execution starts a new result. The chunk fields are dropped:
// every result in rs is whole.
func JoinChunk(rs []rpc.Result, r rpc.Result) []rpc.Result {
	off := 0
	if r.FinalTextOffset != nil {
		off = *r.FinalTextOffset
	}
	r.FinalTextOffset, r.FinalTextComplete = nil, nil
	n := len(rs)
	if n == 0 || rs[n-1].ExecutionSeq != r.ExecutionSeq {
		return append(rs, r)
	}
	if off <= 0 {
		rs[n-1] = r // a replayed piece from the start: the newer copy wins
		return rs
	}
	prev := derefOr(rs[n-1].FinalText)
	if off < len(prev) {
		prev = prev[:off] // a replayed later piece
	}
	t := prev
	if len(prev)+len(derefOr(r.FinalText)) <= maxFinalText {
		t += derefOr(r.FinalText)
	}
	r.FinalText = &t // the later piece's other fields are the newer
	if r.Prompt == nil {
		// The prompt comes with the first piece only.
		r.Prompt, r.PromptTruncated = rs[n-1].Prompt, rs[n-1].PromptTruncated
	}
	if r.ToolCalls == nil && !r.ToolCallsTruncated {
		// So do the tool calls.
		r.ToolCalls, r.ToolCallsTruncated = rs[n-1].ToolCalls, rs[n-1].ToolCallsTruncated
	}
	rs[n-1] = r
	return rs
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Wait is what WaitResult observed.
type Wait struct {
	// Session is the Session's latest snapshot.
	Session rpc.Session `json:"session"`
	// Status is the last result's status, "blocked" when the Session
	// waits for a human, or "running" when the wait ended first.
	Status string `json:"status"`
	// Cursor is where to continue: fetch (or wait) from it for anything
	// later. Nothing before it is returned again.
	Cursor string `json:"cursor"`
	// Results are the results fetched, whole (chunks joined), oldest
	// first.
	Results []rpc.Result `json:"results"`
	// Gaps are the retention overruns reported on the way.
	Gaps []rpc.Gap `json:"gaps,omitempty"`
}

// WaitStatusRunning is Wait.Status when the wait ended before a result.
const WaitStatusRunning = "running"

// WaitResult fetches the Session ref from cursor ("" for the current
// execution) with until:"result", following page_full pages, until the
// execution's result arrives, the Session blocks, or wait has passed, and
// returns every result read with its final_text whole (JoinChunk). A
// fetch that fails after results were read ends the wait with them (the
// cursor replays the rest); one that fails before is the error.
func (c *Client) WaitResult(ctx context.Context, ref, cursor string, wait time.Duration) (Wait, error) {
	deadline := time.Now().Add(wait)
	out := Wait{Cursor: cursor}
	var results []rpc.Result
	for {
		p := rpc.SessionFetchParams{Session: ref, Until: "result", Screen: json.RawMessage("false"), MaxBytes: waitFetchBytes}
		if out.Cursor != "" {
			p.Cursor, _ = json.Marshal(out.Cursor)
		}
		if left := time.Until(deadline); left > 0 {
			p.WaitMS = left.Milliseconds()
		}
		doc, err := c.SessionFetch(ctx, p)
		if err != nil {
			if len(results) > 0 {
				break // report what was read; the cursor replays the rest
			}
			return Wait{}, err
		}
		out.Cursor = doc.Cursor
		out.Gaps = append(out.Gaps, doc.Gaps...)
		partial := false
		for _, fs := range doc.Sessions {
			out.Session = fs.Session
			out.Gaps = append(out.Gaps, fs.Gaps...)
			for _, r := range fs.Results {
				if r.FinalTextComplete != nil && !*r.FinalTextComplete {
					partial = true
				}
				results = JoinChunk(results, r)
			}
		}
		switch doc.Reason {
		case rpc.ReasonPageFull:
			if time.Now().Before(deadline) || partial {
				continue // more is waiting at the new cursor
			}
		case rpc.ReasonResult, rpc.ReasonBlocked, rpc.ReasonTimeout, rpc.ReasonGap, rpc.ReasonSnapshot:
		default:
			if time.Now().Before(deadline) && len(results) == 0 {
				continue // a change that is not a result yet
			}
		}
		if doc.Reason == rpc.ReasonBlocked {
			out.Status = rpc.StateBlocked
		}
		break
	}
	out.Results = results
	if out.Results == nil {
		out.Results = []rpc.Result{}
	}
	if out.Status == "" {
		switch {
		case len(out.Results) > 0:
			out.Status = out.Results[len(out.Results)-1].Status
		case out.Session.State == rpc.StateBlocked:
			out.Status = rpc.StateBlocked
		default:
			out.Status = WaitStatusRunning
		}
	}
	return out, nil
}

// SessionResults is every retained result of a Session (Results).
type SessionResults struct {
	Session string       `json:"session"`
	Results []rpc.Result `json:"results"`
	// Cursor is a position after the last result returned, to fetch from
	// for later ones.
	Cursor string `json:"cursor"`
}

// Results pages through the Session's retained results after execution
// after (session.fetch with after_execution, then its cursor while
// has_more), oldest first, each final_text whole (JoinChunk).
func (c *Client) Results(ctx context.Context, ref string, after uint64) (*SessionResults, error) {
	return c.ResultsPaged(ctx, ref, after, 0, false)
}

// ResultsPaged is Results with pages of maxBytes (session.fetch's
// max_bytes; 0 is the daemon's default): a larger page carries a longer
// prompt whole (docs/rpc.md, "Result prompt"). toolCalls asks for each
// result's tool_calls too ("Result tool calls").
func (c *Client) ResultsPaged(ctx context.Context, ref string, after uint64, maxBytes int, toolCalls bool) (*SessionResults, error) {
	out := &SessionResults{Results: []rpc.Result{}}
	p := rpc.SessionFetchParams{Session: ref, Screen: json.RawMessage("false"), AfterExecution: &after, MaxBytes: maxBytes, ToolCalls: toolCalls}
	for page := 0; ; page++ {
		if page == maxResultPages {
			return nil, rpc.Errorf(rpc.CodeInternal, "session results: no end after %d pages", page)
		}
		doc, err := c.SessionFetch(ctx, p)
		if err != nil {
			return nil, err
		}
		if len(doc.Sessions) != 1 {
			return nil, rpc.Errorf(rpc.CodeInternal, "unexpected session.fetch result: %d Sessions", len(doc.Sessions))
		}
		out.Session, out.Cursor = doc.Sessions[0].Session.ID, doc.Cursor
		for _, r := range doc.Sessions[0].Results {
			out.Results = JoinChunk(out.Results, r)
		}
		if !doc.HasMore {
			return out, nil
		}
		cur, _ := json.Marshal(doc.Cursor)
		p = rpc.SessionFetchParams{Session: ref, Screen: json.RawMessage("false"), Cursor: cur, MaxBytes: maxBytes, ToolCalls: toolCalls}
	}
}
