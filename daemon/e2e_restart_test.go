package daemon

import (
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The replayed-receipt scenario of issue 14, with every harness of the
// scenario table (the real Claude Code and Codex CLIs, offline against the
// mock model servers, and the fake Claude): create r1, stop the daemon,
// start it again, resume the Session with r2; then a retry of r1 replays
// its receipt, and a fetch from that receipt's cursor returns r1's own
// result first, not r2's.
//
//	go test -race -count=1 -run 'TestE2EReceiptAcrossDaemonRestart' ./daemon/
func TestE2EReceiptAcrossDaemonRestart(t *testing.T) {
	for _, a := range e2eHarnesses {
		t.Run(a.name, func(t *testing.T) {
			e := a.start(t)
			td, cd := startChildFor(t, e)
			cd.dumpOnFailure()
			const p1, p2 = "the first turn, before a daemon restart", "the second turn, after the restart"
			create := rpc.SessionCreateParams{Title: "e2e receipt across a restart", Harness: a.harness, Cwd: t.TempDir(),
				Prompt: p1, RequestID: a.name + "-rr-1", Environment: e.env}
			var r1 rpc.Receipt
			td.accept(t, rpc.MethodSessionCreate, create, &r1)
			id := r1.Session.ID
			if r1.ExecutionSeq != 1 {
				t.Fatalf("create receipt %+v", r1)
			}
			e.expectReply(t, id, r1.Cursor, p1, 1)

			cd.stop()
			noMarkedLeft(t, e.mark, 30*time.Second)
			cd.start()

			var r2 rpc.Receipt
			td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: p2, RequestID: a.name + "-rr-2",
				Resume: true, Environment: e.env}, &r2)
			if r2.Session.ID != id || r2.ExecutionSeq != 2 {
				t.Fatalf("resume receipt %+v", r2)
			}
			e.expectReply(t, id, r2.Cursor, p2, 2)

			var replay rpc.Receipt
			td.mustCall(rpc.MethodSessionCreate, create, &replay)
			if !replay.Replayed || replay.Session.ID != id || replay.ExecutionSeq != 1 || replay.Cursor != r1.Cursor {
				t.Fatalf("replayed receipt %+v, first %+v", replay, r1)
			}
			doc := e.fetchUntilResult(t, id, replay.Cursor, 10*time.Second)
			rs := doc.Sessions[0].Results
			if len(rs) == 0 || rs[0].ExecutionSeq != 1 || fetchdoc.DerefText(&rs[0]) != mockapi.DefaultText(p1) {
				t.Fatalf("fetch from the replayed cursor %s returned %+v, want execution 1's %q", replay.Cursor, rs, mockapi.DefaultText(p1))
			}
			t.Logf("receipt cursor %s after the restart: execution %d %q (resume cursor %s)", replay.Cursor, rs[0].ExecutionSeq, fetchdoc.DerefText(&rs[0]), r2.Cursor)
			cd.stop()
			noMarkedLeft(t, e.mark, 30*time.Second)
		})
	}
}
