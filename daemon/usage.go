package daemon

import (
	"encoding/json"
	"os"

	"github.com/dlgt-dev/dlgt/daemon/transcript"
	"github.com/dlgt-dev/dlgt/harness"
)

// An execution's usage is read from the Session's own provider transcript
// when it ends (harness.UsageSource): from where the transcript stood when
// the execution started, the lines of the execution's provider turn. A
// result's usage is null when the harness keeps no usage, the transcript
// is unknown, or it records nothing for the turn. A Stop hook is held
// while the transcript shows the turn written but not ended, in the one
// turn-end wait (reply.go, transcript.Await); the reading itself is
// transcript.ReadTurn's.

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
	u, _, stop := transcript.ReadTurn(src, s.gen.transcript, from, e.turnID, own)
	if u == nil {
		return nil, stop
	}
	return u.JSON(), stop
}
