package client_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/statedir"
)

// Start a Session of Claude Code, wait for its result and print its final
// text. (Here the daemon runs in this process on a temporary state
// directory, and its claude is a fake that replies what [[reply …]] says.)
func Example() {
	home, environ, stop := exampleDaemon()
	defer stop()
	ctx := context.Background()

	c, err := client.New(client.Options{
		Home:    home,
		Getenv:  func(string) string { return "" }, // no DLGT_* from this process
		Environ: environ,                           // the launch environment
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	launch, err := c.ResolveLaunch(client.LaunchSpec{
		Harness:   "claude",
		Title:     "greeting",
		RequestID: "example-1", // chosen once, reused on every retry
		Prompt:    "[[reply Hello from the other agent.]] Say hello.",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	receipt, err := c.Launch(ctx, launch)
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := c.WaitResult(ctx, receipt.Session.ID, receipt.Cursor, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Status)
	fmt.Println(*w.Results[0].FinalText)
	// Output:
	// completed
	// Hello from the other agent.
}

// exampleDaemon starts an in-process daemon whose claude is the fake, on
// a temporary state directory; stop ends it and removes the directory.
func exampleDaemon() (home string, environ func() []string, stop func()) {
	dir, err := os.MkdirTemp("", "dlc")
	if err != nil {
		panic(err)
	}
	home = dir + "/state"
	p, err := statedir.ResolvePaths(func(k string) string {
		if k == "DLGT_HOME" {
			return home
		}
		return ""
	}, statedir.Version)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() { done <- testkit.RunDaemon(ctx, p, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		panic(err)
	}
	entries := fakeClaudeEnviron(dir)
	return home, func() []string { return entries }, func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
}
