package daemon

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A turn's end whose hook carries no final text has it read back from the
// provider transcript (harness.ReplyReader), from where the transcript
// stood when the execution started: the reply after the user message of
// the execution's own prompt, so that a previous turn's reply is never
// taken. A harness may write the turn to its transcript after its
// turn-end hook ran: GitHub Copilot CLI 1.0.102 runs agentStop before it
// writes the turn (or, for a new session, creates the file) — the hook's
// read found nothing on a quiet machine. So the Stop hook is held,
// polling every replySettlePoll, until the transcript records the turn's
// reply, for at most replySettleMax; past it the result goes out with no
// text (text source "missing"). A hook that carries its text
// (Claude Code's and Codex's last_assistant_message, Gemini CLI's
// AfterAgent read) is not held.
const (
	replySettlePoll = 10 * time.Millisecond
	replySettleMax  = 5 * time.Second
)

// replyFromLocked is where e's turn may start in the transcript at path:
// the transcript's size when e started, when it was this one then, else
// its beginning (the prompt match finds the turn). s.mu held.
func replyFromLocked(e *execution, path string) int64 {
	if path != "" && path == e.usagePath {
		return e.usageFrom
	}
	return 0
}

// readReply reads the turn's reply for prompt from the transcript at path,
// from offset from (from its last maxTranscriptScan bytes when the whole
// file is read; from its start when it is now shorter than from: it was
// replaced).
func readReply(r harness.ReplyReader, path string, from int64, prompt string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false
	}
	if fi.Size() < from {
		from = 0
	}
	if from == 0 && fi.Size() > maxTranscriptScan {
		from = fi.Size() - maxTranscriptScan
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return "", false
	}
	return r.LastReply(io.LimitReader(f, maxTranscriptScan), prompt)
}

// awaitReply gives a Stop of generation launchID that carries no text the
// active execution's reply from the transcript, waiting for it to be
// written (see replySettleMax). Called without s.mu.
func (rt *runtime) awaitReply(ctx context.Context, s *session, launchID string, ev *harness.Evidence) {
	r, ok := s.h.(harness.ReplyReader)
	if !ok || ev.FinalText != nil {
		return
	}
	s.mu.Lock()
	g, e := s.gen, s.exec
	if g == nil || g.launchID != launchID || e == nil {
		s.mu.Unlock()
		return
	}
	id, path, prompt := s.rec.ID, ev.Transcript, e.prompt
	if path == "" {
		path = g.transcript
	}
	from := replyFromLocked(e, path)
	s.mu.Unlock()
	if path == "" {
		return
	}
	var text string
	found, waited := pollUntil(ctx, replySettlePoll, replySettleMax, func() bool {
		var ok bool
		text, ok = readReply(r, path, from, prompt)
		return ok
	})
	switch {
	case found:
		ev.FinalText, ev.TextSource = &text, rpc.TextSourceTranscript
		if waited >= replySettlePoll {
			rt.log.Debug("Stop hook held until the transcript recorded the turn's reply", "session", id, "waited", waited.Round(time.Millisecond))
		}
	case ctx.Err() == nil:
		rt.log.Info("the transcript did not record the turn's reply; its result has no text", "session", id, "waited", waited.Round(time.Millisecond))
	}
}
