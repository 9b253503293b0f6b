// Pending requests: what a blocked Session asks (a tool permission the
// harness reported through a hook that takes a decision), session.respond
// that answers it, and internal.hook.decision through which the waiting
// hook forwarder takes the answer back to the harness.
//
// A request is made only from hook evidence (harness.Evidence.Answerable),
// never from the screen. It is waiting until one of: an answer
// (session.respond), or its withdrawal, when the Session leaves blocked
// for any other reason (a person answered the dialog in the terminal, the
// turn was canceled or ended, the process exited), or a person takes the
// terminal's write lease of a harness that draws its dialog only after the
// hook returned (harness.DialogAfterHook: Codex), so that the dialog is
// drawn for them; while a person holds that lease, such a harness's
// requests are not made pending at all. An answer reaches the
// harness only through the hook that asked, so nothing can allow more than
// that one call, and a Session created with auto_approve never asks. A
// harness no hook can answer (harness.KeyAnswerer: Gemini CLI) is answered
// with its dialog's own keys instead, its request made from the hook that
// says the dialog is up and the keys written once the dialog is drawn;
// there, too, a person taking the write lease takes the request over.

package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Pending request states.
const (
	pendWaiting   = "waiting"
	pendAnswered  = "answered"
	pendWithdrawn = "withdrawn"
)

// Bounds: a deny message, a question's free text, the requests a Session
// remembers after they close (for the typed errors of a late answer), the
// responses remembered for request_id replay, and one decision wait.
const (
	maxRespondMessage = 4096
	maxPastPending    = 16
	maxResponses      = 1024
	maxDecisionWait   = 10 * time.Minute
	// claimGrace is how long after a forwarder learned of its request it
	// has to begin waiting for the answer; one that never does (it died
	// in between) leaves the request withdrawn.
	claimGrace = 15 * time.Second
)

// pendingReq is one request. Its fields are guarded by the session's mu.
type pendingReq struct {
	p       rpc.Pending
	event   string // the hook event that asked
	launch  string
	state   string
	claimed bool // a forwarder delivered it and is to wait for it
	// keys: answered with the dialog's keys (harness.KeyAnswerer), not
	// through a waiting hook; no forwarder claims it.
	keys   bool
	waited bool // that forwarder's decision wait began
	output []byte
	done   chan struct{} // closed when it stops waiting
}

func newPendingID() string {
	var b [9]byte
	rand.Read(b[:])
	return "prq_" + hex.EncodeToString(b[:])
}

// openPendingLocked makes the request ev asks, if the harness takes an
// answer to it and none is open. s.mu held.
func (rt *runtime) openPendingLocked(s *session, launch string, ev harness.Evidence) {
	if !ev.Answerable || s.pending != nil {
		return
	}
	ka, keys := s.h.(harness.KeyAnswerer)
	if _, ok := s.h.(harness.Decider); !ok && !keys {
		return
	}
	if s.attach != nil && personOwnsDialog(s.h) {
		// A person holds the terminal: the harness's own dialog is theirs
		// (it appears once the hook returns with no decision; or keys
		// written for an answer would mix with theirs).
		return
	}
	deny := "Deny it (with an optional message for the model)"
	if keys && ka.DenyEndsTurn() {
		deny = "Deny it: the harness declines the call and ends the turn (no message)"
	}
	s.pending = &pendingReq{
		p: rpc.Pending{
			ID: newPendingID(), Kind: rpc.PendingPermission, Tool: ev.Tool, Input: ev.Input,
			Options:   []rpc.PendingOption{{ID: rpc.DecisionAllow, Label: "Allow this call once"}, {ID: rpc.DecisionDeny, Label: deny}},
			AskedAtMS: nowMS(),
		},
		event: ev.Event, launch: launch, state: pendWaiting, done: make(chan struct{}), keys: keys,
	}
	s.pendGen++
}

// personOwnsDialog reports whether a person holding h's terminal takes a
// pending request over: h draws its dialog only once the hook returned
// (harness.DialogAfterHook), or is answered with the dialog's keys
// (harness.KeyAnswerer), which must not mix with the person's.
func personOwnsDialog(h any) bool {
	_, keys := h.(harness.KeyAnswerer)
	return keys || dialogAfterHook(h)
}

// dialogAfterHook reports whether h draws its approval dialog only after
// the hook that asked has returned (harness.DialogAfterHook).
func dialogAfterHook(h any) bool {
	a, ok := h.(harness.DialogAfterHook)
	return ok && a.DialogAfterHook()
}

// holdPendingLocked reports whether s's open request stays open as s moves
// to state to: on session.cancel for a harness whose dialog waits for the
// hook (harness.DialogAfterHook: Codex). While its hook waits, Codex takes
// Esc as the interrupt at once (and ends the hook); a withdrawal first
// would make it draw its overlay, and Esc landing as the overlay appears
// was dropped (the cancel timed out under load). No answer is taken while
// canceling (session.respond needs a blocked Session); the turn's end, or
// the hook ending, withdraws the request. s.mu held.
func holdPendingLocked(s *session, to lifecycleState) bool {
	return to == stCanceling && s.pending != nil && dialogAfterHook(s.h)
}

// withdrawForPersonLocked hands the open request to a person who just took
// the terminal's write lease, where the harness shows no dialog while its
// hook waits (Codex): the request is withdrawn, the forwarder returns with
// no decision and the harness draws its dialog for the person. The Session
// stays blocked. A request held while canceling (holdPendingLocked) stays
// held. s.mu held.
func (rt *runtime) withdrawForPersonLocked(s *session) {
	if s.pending == nil || s.pending.state != pendWaiting || s.rec.State != rpc.StateBlocked || !personOwnsDialog(s.h) {
		return
	}
	id := s.pending.p.ID
	s.closePendingLocked(pendWithdrawn)
	s.notifyLocked()
	rt.log.Info("pending request withdrawn: a person attached to answer it in the terminal", "session", s.rec.ID, "pending", id)
}

// closePendingLocked ends the open request, if any, as state (answered or
// withdrawn) and remembers it. s.mu held.
func (s *session) closePendingLocked(state string) {
	p := s.pending
	if p == nil {
		return
	}
	s.pending = nil
	s.pendGen++
	if p.state == pendWaiting {
		p.state = state
		close(p.done)
	}
	s.pastPending = append(s.pastPending, p)
	if len(s.pastPending) > maxPastPending {
		s.pastPending = s.pastPending[len(s.pastPending)-maxPastPending:]
	}
}

// pendingSnapshotLocked is the open request as the Session snapshot shows
// it: only while the Session is blocked and nobody answered it.
func (s *session) pendingSnapshotLocked() *rpc.Pending {
	if s.pending == nil || s.pending.state != pendWaiting || s.rec.State != rpc.StateBlocked {
		return nil
	}
	p := s.pending.p
	p.Options = append([]rpc.PendingOption(nil), p.Options...)
	return &p
}

// claimPending reports the id of the request launch's event hook just
// opened, once: the forwarder that delivered it waits for its answer.
func (rt *runtime) claimPending(launch, event string) string {
	rt.mu.Lock()
	s := rt.byLaunch[launch]
	rt.mu.Unlock()
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	if p == nil || p.claimed || p.keys || p.launch != launch || p.event != event || p.state != pendWaiting {
		return ""
	}
	p.claimed = true
	time.AfterFunc(claimGrace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.pending == p && p.state == pendWaiting && !p.waited {
			s.closePendingLocked(pendWithdrawn)
			s.notifyLocked()
			rt.log.Info("pending request withdrawn: its hook never waited for the answer", "session", s.rec.ID, "pending", p.p.ID)
		}
	})
	return p.p.ID
}

// hookDecision is internal.hook.decision: it waits up to WaitMS for the
// request's answer. An answer moves the Session back to busy (the harness
// has it now); no answer leaves everything as it is.
func (rt *runtime) hookDecision(ctx context.Context, peer rpc.Peer, p rpc.HookDecisionParams) (rpc.HookDecision, error) {
	wait := time.Duration(p.WaitMS) * time.Millisecond
	if wait < 0 || wait > maxDecisionWait {
		return rpc.HookDecision{}, rpc.InvalidField("wait_ms", "must be between 0 and %d", maxDecisionWait.Milliseconds())
	}
	rt.mu.Lock()
	s := rt.byLaunch[p.LaunchID]
	rt.mu.Unlock()
	if s == nil {
		return rpc.HookDecision{State: pendWithdrawn}, nil
	}
	s.mu.Lock()
	req := s.findPendingLocked(p.PendingID)
	if req != nil {
		req.waited = true
	}
	s.mu.Unlock()
	if req == nil || req.launch != p.LaunchID {
		return rpc.HookDecision{State: pendWithdrawn}, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-req.done:
	case <-t.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.state == pendWaiting && s.pending == req {
		// The forwarder stops waiting (its bound, or it is gone: the
		// harness killed it at its timeout, or canceled the tool): an
		// answer could no longer reach the harness, so the request is
		// withdrawn and the Session stays blocked for a person, as
		// before dlgt could answer.
		s.closePendingLocked(pendWithdrawn)
		s.notifyLocked()
		rt.log.Info("pending request withdrawn: its hook stopped waiting", "session", s.rec.ID, "pending", req.p.ID)
	}
	switch req.state {
	case pendAnswered:
		if e := s.exec; e != nil && ctx.Err() == nil && s.rec.State == rpc.StateBlocked && s.gen != nil && s.gen.launchID == p.LaunchID {
			rt.transitionLocked(s, stBusy, rpc.Event{Type: rpc.EventSessionResumed, ExecutionSeq: e.seq})
		}
		return rpc.HookDecision{State: pendAnswered, Output: string(req.output)}, nil
	}
	return rpc.HookDecision{State: pendWithdrawn}, nil
}

func (s *session) findPendingLocked(id string) *pendingReq {
	if s.pending != nil && s.pending.p.ID == id {
		return s.pending
	}
	for _, p := range s.pastPending {
		if p.p.ID == id {
			return p
		}
	}
	return nil
}

// responses remembers session.respond answers by request_id.
type responses struct {
	mu    sync.Mutex
	byID  map[string]respondRecord
	order []string
}

type respondRecord struct {
	digest string
	res    rpc.SessionRespondResult
}

func (r *responses) get(id string) (respondRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.byID[id]
	return rec, ok
}

func (r *responses) put(id string, rec respondRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]respondRecord{}
	}
	if _, ok := r.byID[id]; !ok {
		r.order = append(r.order, id)
	}
	r.byID[id] = rec
	for len(r.order) > maxResponses {
		delete(r.byID, r.order[0])
		r.order = r.order[1:]
	}
}

// respondDigest identifies a response's payload for replay: every field
// but request_id.
func respondDigest(p rpc.SessionRespondParams) string {
	p.RequestID = ""
	b, _ := json.Marshal(p)
	return string(b)
}

// validateRespond checks the params' shape before anything is looked up.
func validateRespond(p rpc.SessionRespondParams) error {
	if err := receipts.ValidateRequestID(p.RequestID); err != nil {
		return err
	}
	switch {
	case p.Option != "" || p.Text != "":
		return &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "option", Message: "option and text answer a question; this daemon's pending requests are permissions: use decision allow or deny"}
	case p.Decision != rpc.DecisionAllow && p.Decision != rpc.DecisionDeny:
		return rpc.InvalidField("decision", "must be allow or deny")
	case p.Message != "" && p.Decision != rpc.DecisionDeny:
		return rpc.InvalidField("message", "is given only with decision deny")
	case len(p.Message) > maxRespondMessage:
		return rpc.InvalidField("message", "longer than %d bytes", maxRespondMessage)
	case strings.ContainsRune(p.Message, 0):
		return rpc.InvalidField("message", "contains a NUL byte")
	case len(p.PendingID) > 64:
		return rpc.InvalidField("pending_id", "longer than 64 bytes")
	}
	return nil
}

// sessionRespond is session.respond.
func (rt *runtime) sessionRespond(ctx context.Context, peer rpc.Peer, p rpc.SessionRespondParams) (rpc.SessionRespondResult, error) {
	if err := validateRespond(p); err != nil {
		return rpc.SessionRespondResult{}, err
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return rpc.SessionRespondResult{}, err
	}
	digest := s.uid + "\x00" + respondDigest(p)
	rt.respondMu.Lock()
	if rec, ok := rt.responses.get(p.RequestID); ok {
		rt.respondMu.Unlock()
		if rec.digest != digest {
			return rpc.SessionRespondResult{}, receipts.ErrDifferentPayload
		}
		res := rec.res
		res.Session = s.snapshot()
		res.Replayed = true
		return res, nil
	}
	s.mu.Lock()
	res, keys, g, err := rt.answerLocked(s, p, digest)
	id := s.rec.ID
	s.mu.Unlock()
	rt.respondMu.Unlock()
	if err != nil || keys == nil {
		return res, err
	}
	// The dialog's keys (harness.KeyAnswerer), once it is drawn; the
	// harness's own evidence then moves the Session (its tool running, or
	// the turn's end).
	// Written even if the caller goes away meanwhile: the answer was taken.
	if err := rt.deliver(context.WithoutCancel(ctx), s, g, keys); err != nil {
		rt.log.Warn("the answer's keys were not all written", "session", id, "pending", res.PendingID, "err", err)
	}
	s.mu.Lock()
	res.Session = s.snapshotLocked(time.Now())
	s.mu.Unlock()
	return res, nil
}

// answerLocked answers s's open request with p: through the waiting hook
// (harness.Decider), or, for a harness answered with its dialog's keys
// (harness.KeyAnswerer), by returning those keys and the generation to
// write them to. rt.respondMu and s.mu held.
func (rt *runtime) answerLocked(s *session, p rpc.SessionRespondParams, digest string) (rpc.SessionRespondResult, []harness.Keystroke, *generation, error) {
	cur := s.pending
	if cur != nil && cur.state != pendWaiting {
		cur = nil
	}
	switch {
	case p.PendingID != "" && (cur == nil || cur.p.ID != p.PendingID):
		if old := s.findPendingLocked(p.PendingID); old != nil {
			return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID,
				Message: "pending request " + p.PendingID + " was already " + old.state + "; read the Session for what it asks now"}
		}
		if cur == nil {
			return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeNotFound, SessionID: s.rec.ID,
				Message: "the Session has no pending request " + p.PendingID}
		}
		return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeNotFound, SessionID: s.rec.ID,
			Message: "pending request " + p.PendingID + " is not the Session's; it waits on " + cur.p.ID}
	case cur == nil || s.rec.State != rpc.StateBlocked:
		msg := "the Session is " + string(s.rec.State) + " and has no pending request"
		if s.rec.State == rpc.StateBlocked {
			msg = "the Session is blocked on a request dlgt cannot answer for its harness; attach to answer it in the terminal"
		}
		return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: msg}
	}
	var (
		keys []harness.Keystroke
		g    *generation
	)
	if cur.keys {
		// openPendingLocked made cur for a KeyAnswerer.
		var err error
		keys, err = s.h.(harness.KeyAnswerer).AnswerKeys(p.Decision, p.Message)
		if err != nil {
			return rpc.SessionRespondResult{}, nil, nil, err
		}
		if g = s.gen; g == nil || g.launchID != cur.launch || g.proc == nil {
			return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the harness process that asked is gone"}
		}
		if e := s.exec; e != nil && p.Decision == rpc.DecisionDeny {
			e.denied = true
		}
	} else {
		d := s.h.(harness.Decider) // openPendingLocked made cur only for a Decider
		out, ok := d.DecisionOutput(cur.event, p.Decision, p.Message)
		if !ok {
			return rpc.SessionRespondResult{}, nil, nil, &rpc.Error{Code: rpc.CodeInternal, SessionID: s.rec.ID, Message: "the harness takes no decision for " + cur.event}
		}
		cur.output = out
	}
	cur.state = pendAnswered
	s.pendGen++
	close(cur.done)
	rt.log.Info("pending request answered", "session", s.rec.ID, "pending", cur.p.ID, "decision", p.Decision, "keys", cur.keys)
	res := rpc.SessionRespondResult{PendingID: cur.p.ID, Decision: p.Decision}
	rt.responses.put(p.RequestID, respondRecord{digest: digest, res: res})
	s.notifyLocked()
	res.Session = s.snapshotLocked(time.Now())
	return res, keys, g, nil
}
