package client_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Results carries each execution's prompt byte for byte (its trailing
// newline included), also when the final text came in several pieces
// (the prompt rides on the first).
func TestResultsCarryThePrompt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := shortDir(t)
	home := filepath.Join(dir, "state")
	startDaemon(t, home)
	entries := fakeClaudeEnviron(dir)
	c := newClient(t, client.Options{Home: home, NoAutostart: true, Environ: func() []string { return entries }})
	const prompt = "[[long 3000]] keep  this\n"
	l, err := c.ResolveLaunch(client.LaunchSpec{Harness: "claude", Title: "prompt", RequestID: "p1", Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.Launch(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitResult(ctx, rc.Session.ID, rc.Cursor, time.Minute); err != nil {
		t.Fatal(err)
	}
	all, err := c.Results(ctx, rc.Session.ID, 0)
	if err != nil || len(all.Results) != 1 {
		t.Fatalf("results: %+v %v", all, err)
	}
	r := all.Results[0]
	if r.FinalText == nil || len(*r.FinalText) <= 32<<10 {
		t.Fatalf("final text of %d bytes: not chunked over a default page", len(*r.FinalText))
	}
	if r.Prompt == nil || *r.Prompt != prompt || r.PromptTruncated {
		t.Fatalf("prompt %v (truncated %v), want %q", r.Prompt, r.PromptTruncated, prompt)
	}
	read, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: rc.Session.ID})
	if err != nil || read.Result == nil || read.Result.Prompt == nil || *read.Result.Prompt != prompt {
		t.Fatalf("read: %+v %v", read.Result, err)
	}
}
