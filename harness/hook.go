package harness

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dlgt-dev/dlgt/hookfwd"
)

// MaxHookPayload bounds one hook's stdin; provider payloads are small, so
// anything larger is refused rather than buffered.
const MaxHookPayload = hookfwd.MaxPayload

// ForwardHook sends a hook's stdin JSON to the daemon keyed by the launch
// id and returns, as `dlgt hook` and dlgt-hook do (hookfwd). It
// prints nothing, because some harnesses treat hook stdout as model
// context. ctx's deadline, when sooner than hookfwd.Timeout, bounds it.
func ForwardHook(ctx context.Context, socket, launchID, event string, stdin io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(stdin, MaxHookPayload+1))
	if err != nil {
		return fmt.Errorf("reading hook input: %w", err)
	}
	if len(data) > MaxHookPayload {
		return fmt.Errorf("hook input exceeds %d bytes", MaxHookPayload)
	}
	timeout := hookfwd.Timeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	return hookfwd.Forward(socket, launchID, event, data, timeout)
}

// HookArgv is the argv prefix the daemon injects for a launch; the
// harness appends the event name.
func HookArgv(prefix []string, socket, launchID string) []string {
	return append(append([]string{}, prefix...), "--socket", socket, "--launch", launchID)
}
