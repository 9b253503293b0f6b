package acp_test

import (
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/rpc"
)

// A prompt sent while one runs, with _meta {"dlgt": {"steer": true}},
// steers the running turn (session.send steer): it answers end_turn at
// once with the steered execution, the running prompt answers that
// turn's text, and the Session made no other execution. Without the
// _meta it is refused; bad _meta is -32602 and changes nothing.
func TestSteerFromEditor(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	e := w.connect(claude())
	init := e.initialize(ctx)
	if m, _ := init.AgentCapabilities.Meta["dlgt"].(map[string]any); m["steer"] != true {
		t.Errorf("agentCapabilities._meta = %v, want dlgt.steer true", init.AgentCapabilities.Meta)
	}
	id := e.newSession(ctx, w.cwd)
	ch := e.promptAsync(ctx, id, "[[tool touch started && sleep 2]] [[reply TURN-DONE]] first")
	e.waitFor("the tool to run", func() bool {
		_, err := os.Stat(filepath.Join(w.cwd, "started"))
		return err == nil
	})
	steer := func(meta map[string]any) (sdk.PromptResponse, error) {
		return e.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("STEER-ME now")}, Meta: meta})
	}
	if _, err := steer(nil); code(err) != -32600 {
		t.Errorf("a second prompt without _meta: %v, want -32600", err)
	}
	for _, bad := range []map[string]any{{"dlgt": "steer"}, {"dlgt": map[string]any{"steer": "yes"}}} {
		if _, err := steer(bad); code(err) != -32602 {
			t.Errorf("_meta %v: %v, want -32602", bad, err)
		}
	}
	r, err := steer(map[string]any{"dlgt": map[string]any{"steer": true}})
	m, _ := r.Meta["dlgt"].(map[string]any)
	if err != nil || r.StopReason != sdk.StopReasonEndTurn || m["steered"] != true || m["execution_seq"] != float64(1) {
		t.Fatalf("steer answered %+v, %v", r, err)
	}
	a := <-ch
	if a.err != nil || a.r.StopReason != sdk.StopReasonEndTurn || e.agentText(id) != "TURN-DONE" {
		t.Errorf("the running prompt answered %+v, %v, text %q", a.r, a.err, e.agentText(id))
	}
	rd, err := w.c.SessionRead(ctx, rpc.SessionReadParams{Session: string(id)})
	if err != nil || rd.Result == nil || rd.Result.ExecutionSeq != 1 {
		t.Fatalf("the steer made another execution: %+v, %v", rd.Result, err)
	}
	evs, err := w.c.EventRead(ctx, rpc.EventReadParams{Session: rd.Session.ID})
	steered := 0
	for _, ev := range evs {
		if ev.Type == rpc.EventExecutionSteered && ev.ExecutionSeq == 1 && ev.Reason == rpc.SteerDelivered {
			steered++
		}
	}
	if err != nil || steered != 1 {
		t.Errorf("%d execution.steered delivered events (%v), want 1", steered, err)
	}
	// Idle again: a prompt asking to steer is a turn of its own.
	r, err = steer(map[string]any{"dlgt": map[string]any{"steer": true}})
	if err != nil || r.StopReason != sdk.StopReasonEndTurn || r.Meta["dlgt"] != nil {
		t.Errorf("a steer prompt on an idle session: %+v, %v", r, err)
	}
}
