package client_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Every typed method against a real daemon whose claude is the fake: a
// Session is created, waited for, followed up, read, listed, scrolled,
// its events read and followed, canceled, restarted and stopped.
func TestTypedMethodsAgainstADaemon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := shortDir(t)
	home := filepath.Join(dir, "state")
	startDaemon(t, home)
	entries := fakeClaudeEnviron(dir)
	c := newClient(t, client.Options{Home: home, NoAutostart: true, Environ: func() []string { return entries }})

	l, err := c.ResolveLaunch(client.LaunchSpec{Harness: "claude", Title: "typed", Alias: "typed", RequestID: "t1", Prompt: "[[reply first answer]] go"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Params.Environment["DLGT_CLAUDE_BIN"] == "" || l.Host != "" {
		t.Fatalf("launch: %+v", l)
	}
	rc, err := c.Launch(ctx, l)
	if err != nil || rc.Session.ID == "" || rc.Cursor == "" || rc.ExecutionSeq != 1 {
		t.Fatalf("create: %+v %v", rc, err)
	}
	id := rc.Session.ID
	w, err := c.WaitResult(ctx, id, rc.Cursor, time.Minute)
	if err != nil || w.Status != rpc.StatusCompleted || len(w.Results) != 1 || *w.Results[0].FinalText != "first answer" {
		t.Fatalf("wait: %+v %v", w, err)
	}
	// The same request id replays the receipt.
	again, err := c.Launch(ctx, l)
	if err != nil || !again.Replayed || again.Session.ID != id {
		t.Fatalf("replayed create: %+v %v", again, err)
	}

	// A follow-up whose final_text is long: WaitResult joins its pieces.
	long := strings.Repeat("0123456789abcdef", 40<<10/16) // 40 KiB, over a 32 KiB page
	rs, err := c.SessionSend(ctx, rpc.SessionSendParams{Session: "typed", RequestID: "t2", Prompt: "[[reply " + long + "]] again"})
	if err != nil || rs.ExecutionSeq != 2 {
		t.Fatalf("send: %+v %v", rs, err)
	}
	w, err = c.WaitResult(ctx, "typed", rs.Cursor, time.Minute)
	if err != nil || len(w.Results) != 1 || w.Results[0].ExecutionSeq != 2 || *w.Results[0].FinalText != long || w.Results[0].FinalTextOffset != nil {
		t.Fatalf("wait 2: status %s, %d results, %v", w.Status, len(w.Results), err)
	}
	// A small page chunks it; Results joins it back.
	all, err := c.Results(ctx, id, 0)
	if err != nil || len(all.Results) != 2 || *all.Results[0].FinalText != "first answer" || *all.Results[1].FinalText != long || all.Session != id {
		t.Fatalf("results: %v", err)
	}
	doc, err := c.SessionFetch(ctx, rpc.SessionFetchParams{Session: id, Cursor: []byte(`"` + rs.Cursor + `"`), MaxBytes: 4096, Screen: []byte("false")})
	if err != nil || len(doc.Sessions) != 1 {
		t.Fatalf("small fetch: %v", err)
	}

	read, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: id})
	if err != nil || read.Session.ID != id || read.Result == nil || read.Result.ExecutionSeq != 2 {
		t.Fatalf("read: %+v %v", read, err)
	}
	list, err := c.SessionList(ctx, rpc.SessionListParams{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != id {
		t.Fatalf("list: %+v %v", list, err)
	}
	page, err := c.ScrollbackRead(ctx, rpc.ScrollbackReadParams{Session: id, Lines: 50})
	if err != nil || page.SessionID != id || !strings.Contains(strings.Join(page.Lines, ""), "0123456789abcdef") {
		t.Fatalf("scrollback: %d lines, %v", len(page.Lines), err)
	}
	raw, err := c.TranscriptReadRaw(ctx, rpc.TranscriptReadRawParams{Session: id})
	if err != nil || raw.ByteLen == 0 {
		t.Fatalf("transcript: %+v %v", raw, err)
	}
	if data, err := base64.StdEncoding.DecodeString(raw.DataBase64); err != nil || len(data) != raw.ByteLen {
		t.Fatalf("transcript data: %d bytes, %v", len(data), err)
	}
	models, err := c.ModelList(ctx, rpc.ModelListParams{Harness: "claude"})
	if err != nil || models.Harness != "claude" || len(models.Models) == 0 {
		t.Fatalf("models: %+v %v", models, err)
	}
	hs, err := c.HarnessList(ctx, rpc.HarnessListParams{Harness: "claude"})
	if err != nil || len(hs.Harnesses) != 1 || hs.Harnesses[0].Name != "claude" || hs.Environment != rpc.HarnessEnvCaller {
		t.Fatalf("harnesses: %+v %v", hs, err)
	}
	if _, err := c.ModelList(ctx, rpc.ModelListParams{Harness: "nope"}); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Fatalf("models of nope: %v", err)
	}
	evs, err := c.EventRead(ctx, rpc.EventReadParams{Session: id})
	if err != nil || len(evs) == 0 || evs[0].Type != rpc.EventSessionCreated {
		t.Fatalf("events: %+v %v", evs, err)
	}

	// Follow the events from the start: the recorded ones arrive; the
	// sequence ends cleanly (no error) when ctx is canceled.
	zero := uint64(0)
	sctx, scancel := context.WithCancel(ctx)
	var got []rpc.Event
	for ev, err := range c.EventSubscribe(sctx, rpc.EventReadParams{Session: id, After: &zero}) {
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		got = append(got, ev)
		if len(got) == len(evs) {
			scancel()
		}
	}
	scancel()
	if len(got) != len(evs) || got[len(got)-1].Seq != evs[len(evs)-1].Seq {
		t.Fatalf("followed %d events, want %d", len(got), len(evs))
	}
	// Breaking out ends it too; a bad Session is its one error.
	for range c.EventSubscribe(ctx, rpc.EventReadParams{Session: id, After: &zero}) {
		break
	}
	var errs []error
	for _, err := range c.EventSubscribe(ctx, rpc.EventReadParams{Session: "nobody"}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], rpc.ErrNotFound) {
		t.Fatalf("subscribe to nobody: %v", errs)
	}

	cr, err := c.SessionCancel(ctx, rpc.SessionCancelParams{Session: id})
	if err != nil || cr.Session.ID != id {
		t.Fatalf("cancel idle: %+v %v", cr, err)
	}
	rr, err := c.SessionRestart(ctx, rpc.SessionRestartParams{Session: id, Environment: c.LaunchEnvironment()})
	if err != nil || rr.Session.ID != id || rr.Cursor == "" {
		t.Fatalf("restart: %+v %v", rr, err)
	}
	sr, err := c.SessionStop(ctx, rpc.SessionStopParams{Session: id, Force: true})
	if err != nil || sr.Session.ID != id {
		t.Fatalf("stop: %+v %v", sr, err)
	}
	st, _, err := c.DaemonStatus(ctx)
	if err != nil || st == nil || st.Sessions != 1 {
		t.Fatalf("status: %+v %v", st, err)
	}
	// profile.list is the client's own answer, from the profiles file.
	os.WriteFile(filepath.Join(home, "profiles.toml"), []byte("[profiles.review]\nharness = \"claude\"\n[profiles.review.environment]\nSECRET = \"s3cret\"\n"), 0o600)
	pl, err := c.ProfileList(ctx, rpc.ProfileListParams{})
	if err != nil || len(pl.Profiles) != 1 || pl.Profiles[0].Name != "review" || strings.Join(pl.Profiles[0].EnvironmentKeys, ",") != "SECRET" {
		t.Fatalf("profiles: %+v %v", pl, err)
	}
}
