package daemon

import (
	"context"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/transcript"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A turn's end whose hook carries no final text has it read back from the
// provider transcript (harness.ReplyReader), from where the transcript
// stood when the execution started: the reply after the user message of
// the execution's own prompt, so that a previous turn's reply is never
// taken. Its usage is read from the same transcript (usage.go). Both may
// land after the turn-end hook ran, so the Stop hook is held in one
// bounded wait (transcript.Await) until the transcript has both, for at
// most one deadline; past it the result goes out with what is there (no
// text: text source "missing").

// replyFromLocked is where e's turn may start in the transcript at path:
// the transcript's size when e started, when it was this one then, else
// its beginning (the prompt match finds the turn). s.mu held.
func replyFromLocked(e *execution, path string) int64 {
	if path != "" && path == e.usagePath {
		return e.usageFrom
	}
	return 0
}

// awaitTurnEnd holds a Stop of generation launchID until the transcript
// records the active execution's turn: its end, when the transcript shows
// it being written, and its reply, when ev carries no text (then ev gets
// it). Called without s.mu.
func (hk *hookIntake) awaitTurnEnd(ctx context.Context, s *session, launchID string, ev *harness.Evidence) {
	s.mu.Lock()
	g, e := s.gen, s.exec
	if g == nil || g.launchID != launchID || e == nil {
		s.mu.Unlock()
		return
	}
	id := s.rec.ID
	var t transcript.Turn
	if src, ok := s.h.(harness.UsageSource); ok {
		path, turn := g.transcript, e.turnID
		if path == "" {
			path = ev.Transcript
		}
		if turn == "" {
			turn = ev.TurnID
		}
		if from, own, ok := usageRangeLocked(e, path, turn); ok {
			t.Usage, t.UsagePath, t.UsageFrom, t.TurnID, t.Own = src, path, from, turn, own
		}
	}
	if r, ok := s.h.(harness.ReplyReader); ok && ev.Kind == harness.KindStop && ev.FinalText == nil {
		path := ev.Transcript
		if path == "" {
			path = g.transcript
		}
		if path != "" {
			t.Reply, t.ReplyPath, t.ReplyFrom, t.Prompt = r, path, replyFromLocked(e, path), e.prompt
		}
	}
	s.mu.Unlock()
	o := transcript.Await(ctx, t)
	if o.ReplyFound {
		ev.FinalText, ev.TextSource = &o.Reply, rpc.TextSourceTranscript
	}
	waited := o.Waited.Round(time.Millisecond)
	switch {
	case t.Usage != nil && o.FirstState == harness.TurnUnseen && t.Reply == nil:
		hk.log.Debug("the transcript holds nothing of the turn; its result is not held for usage", "session", id)
	case o.Done && o.Waited >= transcript.Poll:
		hk.log.Debug("Stop hook held until the transcript recorded the turn", "session", id, "waited", waited)
	case o.Done || ctx.Err() != nil:
	case t.Reply != nil && !o.ReplyFound:
		hk.log.Info("the transcript did not record the turn's reply; its result has no text", "session", id, "waited", waited)
	default:
		hk.log.Info("the transcript did not record the turn's end; its usage may be incomplete", "session", id, "waited", waited)
	}
}
