package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/rpc"
)

// delegate with a profile that names a host creates the Session on that
// host, as `dlgt session create --profile` does: through ssh, with the
// profile's environment alone and no local directory; nothing reaches
// this machine's daemon. The later tools about that Session (by id or
// alias) reach it there.
func TestDelegateProfileHost(t *testing.T) {
	local, far := testkit.NewFakeDaemon(t), testkit.NewFakeDaemon(t)
	sess := rpc.Session{ID: "claude:far", Alias: "faraway", Harness: "claude", State: "busy"}
	far.Set(rpc.MethodSessionCreate, rpc.Receipt{Session: sess, ExecutionSeq: 1, Cursor: "1", Submission: "confirmed"})
	far.Set(rpc.MethodSessionRead, rpc.SessionReadResult{Session: sess})
	far.Set(rpc.MethodSessionFetch, rpc.FetchDocument{Reason: rpc.ReasonResult, Cursor: "2", Sessions: []rpc.FetchSession{{Session: sess,
		Results: []rpc.Result{{ExecutionSeq: 1, Status: rpc.StatusCompleted, FinalText: strp("done far away")}}}}})
	ssh, argsFile := relaySSH(t, far)
	profiles := filepath.Join(t.TempDir(), "profiles.toml")
	os.WriteFile(profiles, []byte("[profiles.far]\nharness = \"claude\"\nhost = \"dev@buildbox:2222\"\n[profiles.far.environment]\nFAR = \"1\"\n"), 0o600)
	cs := testServer(t, local, map[string]string{"DLGT_PROFILES": profiles, "DLGT_SSH_COMMAND": ssh}, []string{"A=1", "PATH=" + os.Getenv("PATH")}, 5*time.Second)

	text, _, isErr := callTool(t, cs, "delegate", map[string]any{"profile": "far", "prompt": "do it far away", "request_id": "r-far"})
	if isErr || !strings.Contains(text, "Session claude:far") {
		t.Errorf("delegate: error %v\n%s", isErr, text)
	}
	if n := len(local.Params(rpc.MethodSessionCreate)); n != 0 {
		t.Errorf("%d creates reached this machine's daemon", n)
	}
	creates := far.Params(rpc.MethodSessionCreate)
	if len(creates) != 1 {
		t.Fatalf("%d creates reached the host's daemon, want 1", len(creates))
	}
	var p rpc.SessionCreateParams
	json.Unmarshal(creates[0], &p)
	if p.Harness != "claude" || p.RequestID != "r-far" || p.Cwd != "" || len(p.Environment) != 1 || p.Environment["FAR"] != "1" {
		t.Errorf("create params on the host %s", creates[0])
	}
	if args, _ := os.ReadFile(argsFile); !strings.Contains(string(args), "\n-p\n2222\ndev@buildbox\n") {
		t.Errorf("ssh ran with:\n%s", args)
	}

	text, _, isErr = callTool(t, cs, "wait", map[string]any{"session": "claude:far", "cursor": "1"})
	if isErr || !strings.Contains(text, "Final text:\ndone far away\n") {
		t.Errorf("wait on the host: error %v\n%s", isErr, text)
	}
	if text, _, isErr = callTool(t, cs, "read", map[string]any{"session": "faraway"}); isErr {
		t.Errorf("read by alias on the host: %s", text)
	}
	if n := local.Count(); n != 0 {
		t.Errorf("%d requests reached this machine's daemon", n)
	}
}

// A fetch that replays a chunk of final_text from offset 0 (the same
// cursor read again) does not double the text: wait returns it once,
// byte-exact, as `dlgt session wait` does (client.JoinChunk).
func TestWaitReplayedChunk(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	sess := rpc.Session{ID: "claude:01", Harness: "claude", Title: "t", State: "idle"}
	off0, off1 := 0, len("héllo")
	piece := func(text string, off *int, complete bool) rpc.Result {
		return rpc.Result{ExecutionSeq: 2, Status: "completed", FinalText: strp(text), FinalTextOffset: off, FinalTextComplete: boolp(complete)}
	}
	d.SetPages(rpc.MethodSessionFetch, []any{
		rpc.FetchDocument{Reason: rpc.ReasonPageFull, HasMore: true, Cursor: "11", Sessions: []rpc.FetchSession{{Session: sess, Results: []rpc.Result{piece("héllo", &off0, false)}}}},
		rpc.FetchDocument{Reason: rpc.ReasonPageFull, HasMore: true, Cursor: "11", Sessions: []rpc.FetchSession{{Session: sess, Results: []rpc.Result{piece("héllo", &off0, false)}}}},
		rpc.FetchDocument{Reason: rpc.ReasonResult, Cursor: "12", Sessions: []rpc.FetchSession{{Session: sess, Results: []rpc.Result{piece(" wörld", &off1, true)}}}},
	}...)
	cs := testServer(t, d, nil, nil, 5*time.Second)
	text, st, isErr := callTool(t, cs, "wait", map[string]any{"session": "claude:01", "cursor": "10"})
	if isErr {
		t.Fatalf("wait: %s", text)
	}
	want := "héllo wörld"
	res := st["results"].([]any)
	if len(res) != 1 || res[0].(map[string]any)["final_text"] != want {
		t.Errorf("results %v, want one with final_text %q", res, want)
	}
	if !strings.Contains(text, "Final text:\n"+want+"\n") || strings.Count(text, "héllo") != 1 {
		t.Errorf("wait text:\n%s", text)
	}
}
