package daemon

import (
	"context"

	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Launch prompts: a harness.LaunchPrompter (Codex) reports a session only
// once a turn starts, so a launch that has a prompt hands it to the
// harness, which submits it itself. The execution is recorded before the
// launch; the provider's ready evidence then moves the Session straight to
// busy, and its UserPromptSubmit confirms the prompt as a typed prompt's
// would. A harness.ArgPrompter (Claude Code, Gemini CLI) takes a new
// Session's first prompt the same way when it fits its command line: the
// readiness wait, the paste, the echo wait and Enter of a typed first
// prompt are saved, and the acceptance evidence is the same turn's own
// UserPromptSubmit/BeforeAgent hook.

// beginLaunchExec records the execution of a launch prompt on a Session
// that is starting or restarting, and mints its receipt cursor (a
// create's starts at the Session's beginning).
func (rt *runtime) beginLaunchExec(s *session, prompt string, fromCreate bool) (*execution, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cursor := rt.receiptCursorLocked(s, fromCreate)
	return s.startExecLocked(prompt), cursor
}

// launchExecFailedLocked gives a launch prompt's execution its result when
// the launch failed.
func (rt *runtime) launchExecFailedLocked(s *session, e *execution, err error) {
	if e != nil && s.exec == e {
		rt.finishExecLocked(s, rpc.StatusFailed, "", rpc.TextSourceMissing, &rpc.ResultError{Code: "launch_failed", Message: err.Error()})
	}
}

// createWithLaunchPrompt launches a new Session with its first prompt. A
// failure before the provider is bound removes every trace, as create.
func (rt *runtime) createWithLaunchPrompt(ctx context.Context, s *session, lp harness.LaunchPrompter, lo launchOpts, prompt string) (*receipts.Stored, error) {
	if err := lp.LaunchPrompt(prompt); err != nil {
		rt.discard(s)
		return nil, rpc.InvalidField("prompt", "%v", err)
	}
	return rt.launchWithPrompt(ctx, s, lo, prompt)
}

// launchWithPrompt launches a new Session with prompt on the harness's
// command line (which it accepted) and waits for its receipt.
func (rt *runtime) launchWithPrompt(ctx context.Context, s *session, lo launchOpts, prompt string) (*receipts.Stored, error) {
	e, cursor := rt.beginLaunchExec(s, prompt, true)
	lo.prompt = prompt
	if _, err := rt.startGeneration(ctx, s, lo); err != nil {
		rt.discard(s)
		return nil, err
	}
	return rt.awaitReceipt(ctx, s, e, cursor), nil
}
