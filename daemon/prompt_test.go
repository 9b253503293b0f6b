package daemon

import (
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// TestResultPromptSurvivesRestart: each result carries its execution's
// prompt byte for byte (a trailing newline included) in session.fetch and
// session.read, before and after a daemon restart.
func TestResultPromptSurvivesRestart(t *testing.T) {
	td := startTestDaemon(t)
	const prompt = "remember  me\n\tand this line\n"
	r := td.create(t, "rp-1", prompt)
	td.waitResult(t, r.Session.ID, r.Cursor)
	check := func(when string) {
		t.Helper()
		var doc rpc.FetchDocument
		td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "after_execution": 0, "screen": false}, &doc)
		if len(doc.Sessions) != 1 || len(doc.Sessions[0].Results) != 1 {
			t.Fatalf("%s: fetch = %+v", when, doc.Sessions)
		}
		res := doc.Sessions[0].Results[0]
		if res.Prompt == nil || *res.Prompt != prompt || res.PromptTruncated {
			t.Fatalf("%s: fetched prompt %v (truncated %v), want %q", when, strp(res.Prompt), res.PromptTruncated, prompt)
		}
		var read rpc.SessionReadResult
		td.mustCall(rpc.MethodSessionRead, rpc.SessionReadParams{Session: r.Session.ID}, &read)
		if read.Result == nil || read.Result.Prompt == nil || *read.Result.Prompt != prompt {
			t.Fatalf("%s: session.read result = %+v", when, read.Result)
		}
	}
	check("before the restart")
	td.stop()
	td.start()
	check("after the restart")
}

// TestFetchCutsALongPrompt: a prompt longer than half a fetch's room is
// cut at a UTF-8 boundary and flagged; a fetch with room carries it whole;
// the final text is never displaced by it.
func TestFetchCutsALongPrompt(t *testing.T) {
	td := startTestDaemon(t)
	prompt := strings.Repeat("é long prompt line\n", 2000) // about 40 KB
	r := td.create(t, "rp-long", prompt)
	_, whole := td.waitResult(t, r.Session.ID, r.Cursor)
	if whole.FinalText == nil || *whole.FinalText == "" {
		t.Fatalf("no final text: %+v", whole)
	}
	var small rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "after_execution": 0, "screen": false, "max_bytes": 8192}, &small)
	res := small.Sessions[0].Results[0]
	if res.Prompt == nil || !res.PromptTruncated || len(*res.Prompt) == 0 || len(*res.Prompt) > 4096 || !strings.HasPrefix(prompt, *res.Prompt) {
		t.Fatalf("small fetch: prompt of %d bytes, truncated %v", len(strp(res.Prompt)), res.PromptTruncated)
	}
	if res.FinalText == nil || *res.FinalText != *whole.FinalText {
		t.Fatalf("small fetch: final text %q, want %q", strp(res.FinalText), *whole.FinalText)
	}
	var big rpc.FetchDocument
	td.mustCall(rpc.MethodSessionFetch, map[string]any{"session": r.Session.ID, "after_execution": 0, "screen": false, "max_bytes": 256 << 10}, &big)
	res = big.Sessions[0].Results[0]
	if res.Prompt == nil || res.PromptTruncated || *res.Prompt != prompt {
		t.Fatalf("big fetch: prompt of %d bytes, truncated %v; want all %d", len(strp(res.Prompt)), res.PromptTruncated, len(prompt))
	}
}

func strp(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
