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
