package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

func resultDoc(cursor string, hasMore bool, rs ...rpc.Result) *rpc.FetchDocument {
	return &rpc.FetchDocument{SchemaVersion: 1, Reason: rpc.ReasonResult, HasMore: hasMore, Cursor: cursor, Gaps: []rpc.Gap{},
		Sessions: []rpc.FetchSession{{Session: rpc.Session{ID: "claude:1111"}, Events: []rpc.Event{}, Results: rs, Gaps: []rpc.Gap{}}}}
}

func chunk(seq uint64, text string, off int, complete bool) rpc.Result {
	return rpc.Result{ExecutionSeq: seq, Status: rpc.StatusCompleted, FinalText: &text, FinalTextSource: "hook",
		FinalTextOffset: &off, FinalTextComplete: &complete}
}

// session results starts from after_execution, follows the cursor while
// has_more, and joins a chunked final_text.
func TestSessionResultsPages(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.SetPages(rpc.MethodSessionFetch, []any{
		resultDoc("7", true, chunk(2, "two", 0, true), chunk(3, "thr", 0, false)),
		resultDoc("8", false, chunk(3, "ee", 3, true), chunk(4, "four", 0, true)),
	}...)
	e, out, _ := cliEnv(t, d, nil, nil, "")
	code, stdout := runCLI(t, e, out, "session", "results", "rev", "--after", "1")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	var got struct {
		OK      bool         `json:"ok"`
		Session string       `json:"session"`
		Results []rpc.Result `json:"results"`
		Cursor  string       `json:"cursor"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range got.Results {
		texts = append(texts, *r.FinalText)
		if r.FinalTextOffset != nil || r.FinalTextComplete != nil {
			t.Fatalf("chunk fields left on %+v", r)
		}
	}
	if !got.OK || got.Session != "claude:1111" || got.Cursor != "8" || strings.Join(texts, "|") != "two|three|four" {
		t.Fatalf("output %s", stdout)
	}
	ps := d.Params(rpc.MethodSessionFetch)
	if len(ps) != 2 {
		t.Fatalf("%d fetches", len(ps))
	}
	var first, second map[string]any
	json.Unmarshal(ps[0], &first)
	json.Unmarshal(ps[1], &second)
	if first["after_execution"] != 1.0 || first["screen"] != false || first["cursor"] != nil {
		t.Fatalf("first fetch %s", ps[0])
	}
	if second["cursor"] != "7" || second["after_execution"] != nil {
		t.Fatalf("second fetch %s", ps[1])
	}

	d.SetPages(rpc.MethodSessionFetch, []any{resultDoc("9", false, chunk(2, "two", 0, true))}...)
	e, out, _ = cliEnv(t, d, nil, nil, "")
	if code, stdout = runCLI(t, e, out, "session", "results", "rev", "-o", "text"); code != cli.ExitOK ||
		!strings.Contains(stdout, "1 retained result\n") || !strings.Contains(stdout, "result   #2 completed") || !strings.Contains(stdout, "two\n") {
		t.Fatalf("text exit %d:\n%s", code, stdout)
	}
}
