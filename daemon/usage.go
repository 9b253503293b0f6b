package daemon

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// An execution's usage is read from the Session's own provider transcript
// when it ends (harness.UsageSource): from where the transcript stood when
// the execution started, the lines of the execution's provider turn. A
// result's usage is null when the harness keeps no usage, the transcript
// is unknown, or it records nothing for the turn.

// Claude Code may run its Stop hook before it has written the turn's last
// message to the transcript (its writes are queued). Before a Stop is
// applied the daemon reads the transcript once: only when it shows this
// very turn being written and not ended (harness.TurnOpen: its prompt line
// is there, its end is not) does it wait, polling every usageSettlePoll
// and at most usageSettleMax, for the end. A transcript holding nothing of
// the turn (none kept, a format the adapter does not read, a turn that
// wrote nothing) or its end does not hold the result: it goes out at once
// with the usage the transcript holds, null when none. The result is what
// the caller waits for and usage is secondary, so the bound is short: the
// queued write normally lands within 200 ms (35–190 ms on a 2-core machine
// at a load average of 30), it once took over 2 s there, and a turn whose
// end never comes (the prompt written, the end in a form the adapter does
// not read) costs its result at most usageSettleMax. It used to be 5 s for
// any turn not recorded as ended, which held every result of a turn the
// transcript did not record for the full 5 s.
const (
	usageSettlePoll = 10 * time.Millisecond
	usageSettleMax  = 3 * time.Second
)

// markUsageStartLocked notes the transcript's size as e starts, when the
// generation already named its transcript (for its usage, and where its
// reply is read from: reply.go). s.mu held.
func (s *session) markUsageStartLocked(e *execution) {
	if s.gen == nil || s.gen.transcript == "" {
		return
	}
	_, usage := s.h.(harness.UsageSource)
	_, reply := s.h.(harness.ReplyReader)
	if !usage && !reply {
		return
	}
	e.usagePath = s.gen.transcript
	if fi, err := os.Stat(e.usagePath); err == nil {
		e.usageFrom = fi.Size()
	}
}

// usageRangeLocked is where e's turn is in the transcript path: from
// offset from, with the provider's turn id turn. own: from is where the
// transcript stood when e started, so e's turn is the first one there.
// Without that start position (the transcript was named during the turn,
// as Codex does for a new thread's first turn) the whole transcript is
// read, which needs the turn id to find the turn. s.mu held.
func usageRangeLocked(e *execution, path, turn string) (from int64, own, ok bool) {
	switch {
	case path == "":
		return 0, false, false
	case path == e.usagePath:
		return e.usageFrom, true, true
	default:
		return 0, false, turn != ""
	}
}

// readExecUsage is readTurnUsage for an execution's range (usageRangeLocked).
// When the range starts at the execution's own start and holds nothing of
// turn, the turn it does hold is the execution's: the id was another
// turn's. Claude Code runs UserPromptSubmit for a prompt it took while its
// previous turn was ending with that turn's prompt_id; the daemon leaves
// such an id to the turn's end when it names the turn that just ended
// (applyEvidence), and this covers one it could not tell: the FollowUp
// steps of TestE2EDeliveryEvidence/claude and /claude-warm, sent as the
// previous result arrived, once had usage null in CI.
func readExecUsage(src harness.UsageSource, path string, from int64, turn string, own bool) (*rpc.Usage, harness.TurnState, string) {
	u, st, stop := readTurnUsage(src, path, from, turn)
	if st == harness.TurnUnseen && own && turn != "" {
		return readTurnUsage(src, path, from, "")
	}
	return u, st, stop
}

// readTurnUsage reads the turn's usage from path at offset from, how far
// the transcript has recorded the turn, and the turn's stop reason where
// the harness's transcript keeps one (harness.StopReasonSource).
func readTurnUsage(src harness.UsageSource, path string, from int64, turn string) (*rpc.Usage, harness.TurnState, string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, harness.TurnUnseen, ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < from {
		return nil, harness.TurnUnseen, "" // replaced since: the turn's lines are not there
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, harness.TurnUnseen, ""
	}
	r := io.LimitReader(f, maxTranscriptScan)
	if ss, ok := src.(harness.StopReasonSource); ok {
		return ss.TurnEnd(r, turn)
	}
	u, st := src.TurnUsage(r, turn)
	return u, st, ""
}

// turnBeingWritten reports whether a Stop waits for the transcript: only
// while it shows the turn open (its prompt written, its end not); st is
// the turn's state in it (readExecUsage).
func turnBeingWritten(src harness.UsageSource, path string, from int64, turn string, own bool) (wait bool, st harness.TurnState) {
	_, st, _ = readExecUsage(src, path, from, turn, own)
	return st == harness.TurnOpen, st
}

// execTurnLocked is e's usage as a result's usage value (nil, JSON null,
// when there is none) and its stop reason ("" when none). s.mu held.
func (s *session) execTurnLocked(e *execution) (json.RawMessage, string) {
	src, ok := s.h.(harness.UsageSource)
	if !ok || s.gen == nil {
		return nil, ""
	}
	from, own, ok := usageRangeLocked(e, s.gen.transcript, e.turnID)
	if !ok {
		return nil, ""
	}
	u, _, stop := readExecUsage(src, s.gen.transcript, from, e.turnID, own)
	if u == nil {
		return nil, stop
	}
	return u.JSON(), stop
}

// awaitTurnRecorded holds a Stop hook of generation launchID while the
// transcript shows the active execution's turn written but not ended (see
// usageSettleMax). Called without s.mu.
func (rt *runtime) awaitTurnRecorded(ctx context.Context, s *session, launchID string, ev harness.Evidence) {
	src, ok := s.h.(harness.UsageSource)
	if !ok {
		return
	}
	s.mu.Lock()
	g, e := s.gen, s.exec
	if g == nil || g.launchID != launchID || e == nil {
		s.mu.Unlock()
		return
	}
	id, path, turn := s.rec.ID, g.transcript, e.turnID
	if path == "" {
		path = ev.Transcript
	}
	if turn == "" {
		turn = ev.TurnID
	}
	from, own, ok := usageRangeLocked(e, path, turn)
	s.mu.Unlock()
	if !ok {
		return
	}
	first := true
	recorded, waited := pollUntil(ctx, usageSettlePoll, usageSettleMax, func() bool {
		wait, st := turnBeingWritten(src, path, from, turn, own)
		if first && st == harness.TurnUnseen {
			rt.log.Debug("the transcript holds nothing of the turn; its result is not held for usage", "session", id)
		}
		first = false
		return !wait
	})
	switch {
	case recorded && waited >= usageSettlePoll:
		rt.log.Debug("Stop hook held until the transcript recorded the turn", "session", id, "waited", waited.Round(time.Millisecond))
	case !recorded && ctx.Err() == nil:
		rt.log.Info("the transcript did not record the turn's end; its usage may be incomplete", "session", id)
	}
}

// pollUntil calls done every poll until it reports true, for at most max
// or until ctx ends, and reports whether it did and how long that took.
func pollUntil(ctx context.Context, poll, max time.Duration, done func() bool) (bool, time.Duration) {
	start := time.Now()
	t := time.NewTimer(poll)
	defer t.Stop()
	for {
		if done() {
			return true, time.Since(start)
		}
		if time.Since(start) >= max {
			return false, time.Since(start)
		}
		t.Reset(poll)
		select {
		case <-ctx.Done():
			return false, time.Since(start)
		case <-t.C:
		}
	}
}
