package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"dlgt/rpc"
)

// MaxHookPayload bounds one hook's stdin; provider payloads are small, so
// anything larger is refused rather than buffered.
const MaxHookPayload = 4 << 20

// hookTimeout bounds the whole forward, so a stuck daemon never stalls
// the harness for long.
const hookTimeout = 10 * time.Second

// ForwardHook is the body of the hidden `dlgt hook` command that injected
// harness hooks run: it sends the hook's stdin JSON to the daemon keyed by
// the launch id and returns. It prints nothing, because some harnesses
// treat hook stdout as model context.
func ForwardHook(ctx context.Context, socket, launchID, event string, stdin io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(stdin, MaxHookPayload+1))
	if err != nil {
		return fmt.Errorf("reading hook input: %w", err)
	}
	if len(data) > MaxHookPayload {
		return fmt.Errorf("hook input exceeds %d bytes", MaxHookPayload)
	}
	if !json.Valid(data) {
		return errors.New("hook input is not JSON")
	}
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, rpc.MethodHookDeliver, rpc.HookParams{LaunchID: launchID, Event: event, Payload: data}, nil)
}

// HookArgv is the argv prefix the daemon injects for a launch; the
// harness appends the event name.
func HookArgv(prefix []string, socket, launchID string) []string {
	return append(append([]string{}, prefix...), "--socket", socket, "--launch", launchID)
}
