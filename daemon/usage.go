package daemon

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"dlgt/harness"
	"dlgt/rpc"
)

// An execution's usage is read from the Session's own provider transcript
// when it ends (harness.UsageSource): from where the transcript stood when
// the execution started, the lines of the execution's provider turn. A
// result's usage is null when the harness keeps no usage, the transcript
// is unknown, or it records nothing for the turn.

// Claude Code may run its Stop hook before it has written the turn's last
// message to the transcript (its writes are queued). Before a Stop is
// applied the daemon waits, polling every usageSettlePoll and at most
// usageSettleMax, for the transcript to record the turn's end; past that
// the result takes what the transcript holds. The wait is normally a few
// milliseconds; 2 s was once too short on a loaded 2-core machine (a
// real-CLI follow-up's usage came back null), hence 5 s.
const (
	usageSettlePoll = 10 * time.Millisecond
	usageSettleMax  = 5 * time.Second
)

// markUsageStartLocked notes the transcript's size as e starts, when the
// generation already named its transcript. s.mu held.
func (s *session) markUsageStartLocked(e *execution) {
	if s.gen == nil || s.gen.transcript == "" {
		return
	}
	if _, ok := s.h.(harness.UsageSource); !ok {
		return
	}
	e.usagePath = s.gen.transcript
	if fi, err := os.Stat(e.usagePath); err == nil {
		e.usageFrom = fi.Size()
	}
}

// usageRangeLocked is where e's turn is in the transcript path: from
// offset from, with the provider's turn id turn. Without a start position
// (the transcript was named during the turn, as Codex does for a new
// thread's first turn) the whole transcript is read, which needs the turn
// id to find the turn. s.mu held.
func usageRangeLocked(e *execution, path, turn string) (from int64, ok bool) {
	switch {
	case path == "":
		return 0, false
	case path == e.usagePath:
		return e.usageFrom, true
	default:
		return 0, turn != ""
	}
}

// readTurnUsage reads the turn's usage from path at offset from.
func readTurnUsage(src harness.UsageSource, path string, from int64, turn string) (*rpc.Usage, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < from {
		return nil, false // replaced since: the turn's lines are not there
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, false
	}
	return src.TurnUsage(io.LimitReader(f, maxTranscriptScan), turn)
}

// execUsageLocked is e's usage as a result's usage value; nil (JSON null)
// when there is none. s.mu held.
func (rt *runtime) execUsageLocked(s *session, e *execution) json.RawMessage {
	src, ok := s.h.(harness.UsageSource)
	if !ok || s.gen == nil {
		return nil
	}
	from, ok := usageRangeLocked(e, s.gen.transcript, e.turnID)
	if !ok {
		return nil
	}
	u, _ := readTurnUsage(src, s.gen.transcript, from, e.turnID)
	if u == nil {
		return nil
	}
	return u.JSON()
}

// awaitTurnRecorded holds a Stop hook of generation launchID until the
// transcript records the end of the active execution's turn (see
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
	from, ok := usageRangeLocked(e, path, turn)
	s.mu.Unlock()
	if !ok {
		return
	}
	if _, err := os.Stat(path); err != nil {
		return // no transcript to wait for
	}
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		if _, done := readTurnUsage(src, path, from, turn); done {
			if waited := time.Since(start); waited >= usageSettlePoll {
				rt.log.Debug("Stop hook held until the transcript recorded the turn", "session", id, "waited", waited.Round(time.Millisecond))
			}
			return
		}
		if time.Since(start) >= usageSettleMax {
			rt.log.Info("the transcript did not record the turn's end; its usage may be incomplete", "session", id)
			return
		}
		t.Reset(usageSettlePoll)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
