// Command delegate hands one task to a coding agent through dlgt's client
// package and prints the agent's final answer: a program outside the dlgt
// module using it as a library.
//
//	delegate [-harness claude] [-cwd DIR] [-wait 10m] PROMPT
//
// It talks to this user's dlgt daemon (DLGT_HOME, else the default state
// directory), starting one with the `dlgt` on PATH when none runs. The exit
// status is 0 when the execution completed, 1 otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/client"
)

func main() {
	harness := flag.String("harness", "claude", "the agent to delegate to")
	cwd := flag.String("cwd", "", "its working directory (default: this one)")
	wait := flag.Duration("wait", 10*time.Minute, "how long to wait for the result")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: delegate [-harness NAME] [-cwd DIR] [-wait D] PROMPT")
		os.Exit(2)
	}
	prompt := strings.Join(flag.Args(), " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *harness, *cwd, prompt, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "delegate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, harness, cwd, prompt string, wait time.Duration) error {
	exe, _ := exec.LookPath("dlgt") // "" only disables autostart's launch
	c, err := client.New(client.Options{DaemonExe: exe})
	if err != nil {
		return err
	}
	defer c.Close()

	// One request id per task: a retry of this create replays its receipt
	// instead of starting a second agent.
	launch, err := c.ResolveLaunch(client.LaunchSpec{
		Harness:   harness,
		Cwd:       cwd,
		Title:     "delegated task",
		RequestID: fmt.Sprintf("delegate-%d", time.Now().UnixNano()),
		Prompt:    prompt,
	})
	if err != nil {
		return err
	}
	receipt, err := c.Launch(ctx, launch)
	if err != nil {
		return err
	}
	w, err := c.WaitResult(ctx, receipt.Session.ID, receipt.Cursor, wait)
	if err != nil {
		return err
	}
	for _, r := range w.Results {
		if r.FinalText != nil {
			fmt.Println(*r.FinalText)
		}
	}
	if w.Status != "completed" {
		return fmt.Errorf("session %s: %s", receipt.Session.ID, w.Status)
	}
	return nil
}
