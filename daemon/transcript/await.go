package transcript

import (
	"context"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// Turn is what a turn's end waits for in the transcript: its usage
// record, its reply, or both.
type Turn struct {
	// Usage, when set, is the adapter the turn's usage is read with, from
	// UsagePath at UsageFrom for TurnID (Own as ReadTurn's own).
	Usage     harness.UsageSource
	UsagePath string
	UsageFrom int64
	TurnID    string
	Own       bool
	// Reply, when set, is the adapter the turn's reply is read with (the
	// turn-end hook carried no text), from ReplyPath at ReplyFrom: the
	// reply to Prompt.
	Reply     harness.ReplyReader
	ReplyPath string
	ReplyFrom int64
	Prompt    string
}

// The turn-end wait polls every Poll until what it waits for is there,
// for at most one deadline: ReplyMax when the reply is wanted, else
// UsageMax.
//
// Usage: Claude Code may run its Stop hook before it has written the
// turn's last message to the transcript (its writes are queued). Only a
// turn the transcript shows being written and not ended
// (harness.TurnOpen: its prompt line is there, its end is not) is waited
// for; a transcript holding nothing of the turn (none kept, a format the
// adapter does not read, a turn that wrote nothing) or its end does not
// hold the result. The result is what the caller waits for and usage is
// secondary, so its bound is short: the queued write normally lands
// within 200 ms (35–190 ms on a 2-core machine at a load average of 30),
// it once took over 2 s there.
//
// Reply: a harness may write the turn to its transcript after its
// turn-end hook ran: GitHub Copilot CLI 1.0.102 runs agentStop before it
// writes the turn (or, for a new session, creates the file). A hook that
// carries its text (Claude Code's and Codex's last_assistant_message,
// Gemini CLI's AfterAgent read) wants no reply read.
//
// The two used to be two waits in sequence (up to 3 s, then up to 5 s,
// reading the file twice a poll): one loop now reads what is still
// missing and ends when both are there or at the one deadline.
const (
	Poll     = 10 * time.Millisecond
	UsageMax = 3 * time.Second
	ReplyMax = 5 * time.Second
)

// Outcome is what the wait found.
type Outcome struct {
	// Reply is the turn's reply when ReplyFound.
	Reply      string
	ReplyFound bool
	// State is how far the transcript recorded the turn at the last read
	// (TurnUnseen when usage was not waited for); FirstState at the first.
	State, FirstState harness.TurnState
	// Done: everything waited for was there before the deadline.
	Done bool
	// Waited is how long the wait took.
	Waited time.Duration
}

// Await waits, at a turn's end, for the transcript to hold what t asks
// for (see Poll). It returns at once when t asks for nothing.
func Await(ctx context.Context, t Turn) Outcome { return await(ctx, t, realClock{}) }

func await(ctx context.Context, t Turn, c clock) Outcome {
	var o Outcome
	if t.Usage == nil && t.Reply == nil {
		o.Done = true
		return o
	}
	deadline := UsageMax
	if t.Reply != nil {
		deadline = ReplyMax
	}
	start := c.now()
	for first := true; ; first = false {
		if t.Reply != nil && !o.ReplyFound {
			o.Reply, o.ReplyFound = ReadReply(t.Reply, t.ReplyPath, t.ReplyFrom, t.Prompt)
		}
		if t.Usage != nil {
			_, o.State, _ = ReadTurn(t.Usage, t.UsagePath, t.UsageFrom, t.TurnID, t.Own)
			if first {
				o.FirstState = o.State
			}
		}
		o.Waited = c.now().Sub(start)
		if (t.Reply == nil || o.ReplyFound) && o.State != harness.TurnOpen {
			o.Done = true
			return o
		}
		if o.Waited >= deadline || !c.sleep(ctx, Poll) {
			return o
		}
	}
}

// clock is the wait's time: the real one, or a test's.
type clock interface {
	now() time.Time
	// sleep waits d, reporting false when ctx ended first.
	sleep(ctx context.Context, d time.Duration) bool
}

type realClock struct{}

func (realClock) now() time.Time { return time.Now() }

func (realClock) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
