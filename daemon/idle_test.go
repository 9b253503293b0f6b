package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// An idle Session's transcript is not polled; a line the harness wrote
// between turns (here an interrupt marker naming no turn, which would end
// any turn it is taken for) is not taken for evidence of the next turn,
// which completes.
func TestIdleTranscriptLineNotTakenForNextTurn(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "idle-tr-1", "first")
	if _, res := td.waitResult(t, r.Session.ID, r.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("first result = %+v", res)
	}
	uuid := strings.TrimPrefix(r.Session.ID, "claude:")
	paths, _ := filepath.Glob(filepath.Join(td.env["HOME"], ".claude", "projects", "*", uuid+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcript of %s: %v", uuid, paths)
	}
	// Past the polls that follow a turn, so the tail sleeps (the outcome
	// must be the same either way).
	time.Sleep(2 * transcriptIdlePoll)
	f, err := os.OpenFile(paths[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}` + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var r2 rpc.Receipt
	td.mustCall(rpc.MethodSessionSend, rpc.SessionSendParams{Session: r.Session.ID, Prompt: "second", RequestID: "idle-tr-2"}, &r2)
	_, res := td.waitResult(t, r.Session.ID, r2.Cursor)
	if res.Status != rpc.StatusCompleted || res.ExecutionSeq != 2 || res.FinalText == nil || *res.FinalText != "MOCK-REPLY: second" {
		t.Fatalf("second result = %+v", res)
	}
}

func TestTranscriptTailSkipBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte("old-1\nold-2\npart"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := &transcriptTail{path: path}
	tail.skipBefore(path+".other", 12) // another transcript: nothing skipped
	if tail.offset != 0 {
		t.Fatalf("offset %d after another path's start", tail.offset)
	}
	tail.skipBefore(path, 12) // the execution started with 12 bytes there
	tail.skipBefore(path, 6)  // behind the offset: no effect
	if tail.offset != 12 {
		t.Fatalf("offset %d, want 12", tail.offset)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("ial\nnew\n")
	f.Close()
	got := tail.read()
	if len(got) != 2 || string(got[0]) != "partial" || string(got[1]) != "new" {
		t.Fatalf("lines %q", got)
	}
}
