package daemon

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// Queued sends (session.send queue:true): a prompt held by dlgt while an
// execution is active, run as the next execution once that one ends. dlgt
// does the queueing itself for every harness rather than typing into the
// TUI early (Claude Code would take text typed mid-tool as a steer, Gemini
// CLI queues it natively, Codex steers with Enter): held here, the prompt
// is delivered exactly like a send to an idle Session.
//
// Each queued send is given its execution_seq when it is queued (the
// active execution's, plus its place in the queue), so its receipt names
// the execution it becomes. The invariant that makes this hold: the queue
// always holds LastExecSeq+1, LastExecSeq+2, ... in order, and nothing
// else starts an execution while it is non-empty, because the end of the
// active turn (endTurnLocked) starts the head in the same critical section
// that makes the Session idle. A queued send that cannot run (the Session
// was canceled, stopped, restarted or failed, or a person held the
// terminal when it was due) is not dropped unnoticed: its execution_seq
// gets a retained result saying why, like any execution's.
//
// The queue is stored in the Session record: a daemon that dies with sends
// queued finds them on restart and gives each a result (the Session itself
// is failed then, as every Session left non-terminal is).

// queuedRecord is one queued send as the record stores it.
type queuedRecord struct {
	Seq        uint64 `json:"seq"`
	Prompt     string `json:"prompt"`
	QueuedAtMS int64  `json:"queued_at_ms"`
	// Canceled: a session.cancel came after it was queued; it ends with
	// a canceled result instead of running.
	Canceled bool `json:"canceled,omitempty"`
}

// maxQueuedPromptShown bounds the prompt a Session snapshot shows of each
// queued send.
const maxQueuedPromptShown = 200

// queuedSnapshotLocked is the public view of s's queue. s.mu held.
func (s *session) queuedSnapshotLocked() []rpc.QueuedSend {
	if len(s.rec.Queued) == 0 {
		return nil
	}
	out := make([]rpc.QueuedSend, 0, len(s.rec.Queued))
	for _, q := range s.rec.Queued {
		if q.Canceled {
			continue
		}
		p, cut := q.Prompt, false
		if len(p) > maxQueuedPromptShown {
			n := maxQueuedPromptShown
			for n > 0 && !utf8.RuneStart(p[n]) {
				n--
			}
			p, cut = p[:n], true
		}
		out = append(out, rpc.QueuedSend{ExecutionSeq: q.Seq, Prompt: p, PromptTruncated: cut, QueuedAtMS: q.QueuedAtMS})
	}
	return out
}

// queuedAt reports whether execution seq is queued on s and not canceled.
// s.mu held.
func (s *session) queuedLocked(seq uint64) bool {
	for _, q := range s.rec.Queued {
		if q.Seq == seq && !q.Canceled {
			return true
		}
	}
	return false
}

// enqueue answers session.send queue:true: on an idle Session a plain
// send, on one with an active execution a queued send.
func (rt *runtime) enqueue(ctx context.Context, s *session, prompt string) (*receipts.Stored, error) {
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		if s.rec.State == rpc.StateIdle && len(s.rec.Queued) == 0 {
			s.mu.Unlock()
			st, err := rt.accept(ctx, s, prompt, false)
			if attempt == 0 && errors.Is(err, rpc.ErrSessionBusy) {
				continue // a turn began meanwhile: queue behind it
			}
			return st, err
		}
		defer s.mu.Unlock()
		return rt.enqueueLocked(s, prompt)
	}
}

// enqueueLocked queues prompt behind s's active execution. s.mu held.
func (rt *runtime) enqueueLocked(s *session, prompt string) (*receipts.Stored, error) {
	switch s.rec.State {
	case rpc.StateBusy, rpc.StateBlocked, rpc.StateCanceling:
	default:
		if err := sendableLocked(s); err != nil {
			return nil, err
		}
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(s.rec.State) + " and cannot queue work"}
	}
	if s.exec == nil {
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(s.rec.State) + " without an active execution"}
	}
	if s.attach != nil {
		return nil, &rpc.Error{Code: rpc.CodeSessionAttached, SessionID: s.rec.ID, Message: "a human holds the attach lease; detach first"}
	}
	if len(s.rec.Queued) >= rpc.MaxQueued {
		return nil, &rpc.Error{Code: rpc.CodeSessionBusy, SessionID: s.rec.ID, Message: "execution " + itoa(s.exec.seq) + " is active and " + itoa(rpc.MaxQueued) + " sends are queued behind it (the most a Session holds); retry after one starts"}
	}
	seq := s.rec.LastExecSeq + uint64(len(s.rec.Queued)) + 1
	// The cursor reads from now on but counts every result before this
	// execution's as delivered: until:"result" from it waits for this
	// one's result, not the active execution's (fetchBound).
	mark := s.markLocked()
	mark.Result, mark.TextOff = seq-1, 0
	q := queuedRecord{Seq: seq, Prompt: prompt, QueuedAtMS: nowMS()}
	s.rec.Queued = append(s.rec.Queued, q)
	if err := rt.persistLocked(s); err != nil {
		s.rec.Queued = s.rec.Queued[:len(s.rec.Queued)-1]
		rt.persistLocked(s)
		rerr := rt.storageError("the Session record", "the prompt was not queued; retry once the state directory is writable", err)
		rerr.SessionID = s.rec.ID
		return nil, rerr
	}
	rt.emitLocked(s, rpc.Event{Type: rpc.EventExecutionQueued, ExecutionSeq: seq})
	cursor := rt.positions.MintSession(s.uid, mark)
	r := rpc.Receipt{
		Session: s.snapshotLocked(time.Now()), ExecutionSeq: seq, Cursor: rpc.FormatPosition(cursor),
		Queued: true,
	}
	queuedReceiptPending(&r, s.exec.seq)
	return &receipts.Stored{SessionUID: s.uid, Receipt: r}, nil
}

// queuedReceiptPending marks r (a queued send's receipt) pending, saying
// what it waits for and how to follow it.
func queuedReceiptPending(r *rpc.Receipt, behind uint64) {
	r.Submission = rpc.SubmissionPending
	r.Hint = "Queued behind execution " + itoa(behind) + ": it runs as execution " + itoa(r.ExecutionSeq) +
		" once that one ends (session.cancel clears the queue). Do not resubmit: fetch from the cursor until result."
	r.Action = &rpc.Action{Method: rpc.MethodSessionFetch, Params: map[string]any{
		"session": r.Session.ID, "cursor": r.Cursor, "until": "result", "wait_ms": 60000,
	}}
}

// replayQueued refreshes the replay of a queued send's receipt: pending
// while it is still queued. s.mu held.
func (s *session) replayQueuedLocked(r *rpc.Receipt) bool {
	if !r.Queued || !s.queuedLocked(r.ExecutionSeq) {
		return false
	}
	behind := s.rec.LastExecSeq
	if s.exec != nil {
		behind = s.exec.seq
	}
	queuedReceiptPending(r, behind)
	return true
}

// fetchBound is the execution an until:"result" fetch from pos waits for:
// bound (the active or latest execution), or, for the cursor of a queued
// send's receipt (its mark counts bound's result as delivered already),
// that queued execution. s.mu held.
func (s *session) fetchBoundLocked(pos *positions.Position, bound uint64) uint64 {
	if pos == nil || pos.Mark.Result < bound {
		return bound
	}
	for _, q := range s.rec.Queued {
		// A canceled one counts too: it gets its result when the
		// running execution ends.
		if q.Seq == pos.Mark.Result+1 {
			return q.Seq
		}
	}
	return bound
}

// cancelQueuedLocked marks every queued send canceled (session.cancel
// clears the queue): each ends with a canceled result when the active
// execution does. s.mu held.
func (rt *runtime) cancelQueuedLocked(s *session) {
	if len(s.rec.Queued) == 0 {
		return
	}
	for i := range s.rec.Queued {
		s.rec.Queued[i].Canceled = true
	}
	rt.persistLocked(s)
	s.notifyLocked()
}

// dispatchQueuedLocked runs the head of s's queue now that s is idle (its
// turn just ended): canceled ones get their results, then the first one
// left starts as the next execution and its prompt is delivered (in the
// background: s.mu is held). s.mu held.
func (rt *runtime) dispatchQueuedLocked(s *session) {
	for len(s.rec.Queued) > 0 && s.rec.State == rpc.StateIdle && s.exec == nil {
		q := s.rec.Queued[0]
		if q.Canceled {
			rt.endQueuedLocked(s, rpc.StatusCanceled, "canceled", "session.cancel cleared the queue before this send ran")
			continue
		}
		if s.attach != nil {
			rt.endQueuedLocked(s, rpc.StatusCanceled, "attached", "a human held the Session's terminal (attach) when this queued send was due; it was not typed")
			continue
		}
		if s.rec.LastExecSeq+1 != q.Seq {
			rt.log.Error("a queued send's execution_seq is out of order (a dlgt bug); it is given a failed result", "session", s.rec.ID, "seq", q.Seq, "last", s.rec.LastExecSeq)
			rt.endQueuedLocked(s, rpc.StatusFailed, "internal", "the queued send could not run as its execution_seq")
			continue
		}
		s.rec.Queued = s.rec.Queued[1:]
		e := s.startExecLocked(q.Prompt)
		if err := rt.acceptExecLocked(s, e, func() {}); err != nil {
			// Its record could not be stored: it and those behind it
			// fail (their results are stored once the state directory
			// takes writes again), so no plain send can take their seqs.
			s.rec.Queued = append([]queuedRecord{q}, s.rec.Queued...)
			rt.log.Error("starting a queued send", "session", s.rec.ID, "seq", q.Seq, "err", err)
			for len(s.rec.Queued) > 0 {
				rt.endQueuedLocked(s, rpc.StatusFailed, "storage", "the queued send could not be started: its record could not be stored")
			}
			return
		}
		g := s.gen
		if g == nil {
			return
		}
		rt.goTracked(func() {
			if err := s.deliver(context.Background(), rt.log, g, s.h.Submit(q.Prompt)); err != nil {
				rt.log.Warn("queued prompt delivery failed", "session", s.rec.ID, "err", err)
			}
		})
		return
	}
}

// dropQueuedLocked ends every queued send of s, which is stopping,
// restarting or failed with no active execution, with an interrupted
// result naming why. s.mu held.
func (rt *runtime) dropQueuedLocked(s *session, why string) {
	if s.exec != nil {
		return // its end comes first; the queue follows it
	}
	for len(s.rec.Queued) > 0 {
		status, code, msg := rpc.StatusInterrupted, "queue_dropped", "the Session became "+why+" before this queued send ran"
		if s.rec.Queued[0].Canceled {
			status, code, msg = rpc.StatusCanceled, "canceled", "session.cancel cleared the queue before this send ran"
		}
		rt.endQueuedLocked(s, status, code, msg)
	}
}

// endQueuedLocked retains a result for the queue's head, which never ran,
// and takes it off the queue. s.mu held.
func (rt *runtime) endQueuedLocked(s *session, status, code, msg string) {
	q := s.rec.Queued[0]
	s.rec.Queued = s.rec.Queued[1:]
	p := q.Prompt
	now := nowMS()
	res := &rpc.Result{
		ExecutionSeq: q.Seq, Status: status, FinalTextSource: rpc.TextSourceMissing,
		Error: &rpc.ResultError{Code: code, Message: msg}, StartedAtMS: q.QueuedAtMS, CompletedAtMS: now,
		Usage: (*rpc.Usage)(nil).JSON(), Prompt: &p,
	}
	data, _ := rpc.Marshal(res)
	rt.storeLocked(s, "result", func(w store.Writer) error { return w.PutResult(s.uid, q.Seq, data) })
	if q.Seq > s.rec.LastExecSeq {
		s.rec.LastExecSeq = q.Seq
	}
	rt.persistLocked(s)
	rt.changedLocked(s)
}
