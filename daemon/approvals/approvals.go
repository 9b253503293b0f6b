package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A request's states.
const (
	Waiting   = "waiting"
	Answered  = "answered"
	Withdrawn = "withdrawn"
)

// Bounds: a deny message, the requests a Box remembers after they close
// (for the typed errors of a late answer), the responses remembered for
// request_id replay, and one decision wait.
const (
	MaxRespondMessage = 4096
	MaxPast           = 16
	MaxResponses      = 1024
	MaxDecisionWait   = 10 * time.Minute
	// ClaimGrace is how long after a forwarder learned of its request it
	// has to begin waiting for the answer; one that never does (it died
	// in between) leaves the request to be withdrawn.
	ClaimGrace = 15 * time.Second
)

// Request is one pending request. Its fields are guarded by the lock that
// guards the Box holding it (the Session's).
type Request struct {
	p       rpc.Pending
	event   string // the hook event that asked
	launch  string
	state   string
	claimed bool // a forwarder delivered it and is to wait for it
	// keys: answered with the dialog's keys, not through a waiting hook;
	// no forwarder claims it.
	keys   bool
	waited bool // that forwarder's decision wait began
	output []byte
	done   chan struct{} // closed when it stops waiting
}

func newID() string {
	var b [9]byte
	rand.Read(b[:])
	return "prq_" + hex.EncodeToString(b[:])
}

// NewPermission makes a waiting permission request for tool's call with
// input, asked by the hook event of the launch launch. keys: it is
// answered with the dialog's keys; deny labels the deny option.
func NewPermission(tool, input, event, launch string, keys bool, deny string, askedAtMS int64) *Request {
	return &Request{
		p: rpc.Pending{
			ID: newID(), Kind: rpc.PendingPermission, Tool: tool, Input: input,
			Options:   []rpc.PendingOption{{ID: rpc.DecisionAllow, Label: "Allow this call once"}, {ID: rpc.DecisionDeny, Label: deny}},
			AskedAtMS: askedAtMS,
		},
		event: event, launch: launch, state: Waiting, done: make(chan struct{}), keys: keys,
	}
}

// ID is the request's id; State its state.
func (r *Request) ID() string    { return r.p.ID }
func (r *Request) State() string { return r.state }

// Launch is the launch whose hook asked; Event that hook's event.
func (r *Request) Launch() string { return r.launch }
func (r *Request) Event() string  { return r.event }

// Keys reports whether the request is answered with the dialog's keys.
func (r *Request) Keys() bool { return r.keys }

// Done is closed once the request stops waiting (answered or withdrawn).
func (r *Request) Done() <-chan struct{} { return r.done }

// Output is the hook's answer (Answer's output).
func (r *Request) Output() []byte { return r.output }

// Claim marks the request claimed by the forwarder of launch's event
// hook, once: false when it is not that hook's, is answered with keys,
// was claimed already or is no longer waiting.
func (r *Request) Claim(launch, event string) bool {
	if r.claimed || r.keys || r.launch != launch || r.event != event || r.state != Waiting {
		return false
	}
	r.claimed = true
	return true
}

// BeginWait records that the claiming forwarder began waiting for the
// answer; Waited reports it.
func (r *Request) BeginWait()   { r.waited = true }
func (r *Request) Waited() bool { return r.waited }

// Answer marks the request answered; output is what its hook returns
// (nil for one answered with keys).
func (r *Request) Answer(output []byte) {
	r.output = output
	r.state = Answered
	close(r.done)
}

// Wait waits up to wait for the request to stop waiting, or for ctx.
// It takes no lock: the caller re-reads the state under its own.
func (r *Request) Wait(ctx context.Context, wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Box is one Session's open request and the last ones closed. Its
// owner's lock guards it.
type Box struct {
	open *Request
	past []*Request
	// changes counts what changed the open request (asked, answered,
	// closed). It only grows, so a fetch position's mark that holds it
	// never repeats an earlier one (equal marks share a position, and a
	// repeat made two positions each other's successor: a fetch loop
	// that never reached the result).
	changes uint64
}

// Changes counts the open request's changes so far (see Box.changes).
func (b *Box) Changes() uint64 { return b.changes }

// Answer answers r, the open request, with output (see Request.Answer).
func (b *Box) Answer(r *Request, output []byte) {
	r.Answer(output)
	b.changes++
}

// Open is the open request (nil when none); it may be answered already.
func (b *Box) Open() *Request { return b.open }

// Ask makes r the open request; false when one is open.
func (b *Box) Ask(r *Request) bool {
	if b.open != nil {
		return false
	}
	b.open = r
	b.changes++
	return true
}

// Close ends the open request, if any, as state (Answered or Withdrawn)
// and remembers it.
func (b *Box) Close(state string) {
	r := b.open
	if r == nil {
		return
	}
	b.open = nil
	b.changes++
	if r.state == Waiting {
		r.state = state
		close(r.done)
	}
	b.past = append(b.past, r)
	if len(b.past) > MaxPast {
		b.past = b.past[len(b.past)-MaxPast:]
	}
}

// Waiting is the open request if it waits for an answer, else nil.
func (b *Box) Waiting() *Request {
	if b.open == nil || b.open.state != Waiting {
		return nil
	}
	return b.open
}

// Snapshot is the open request as a Session snapshot shows it: only
// while the Session is blocked and nobody answered it.
func (b *Box) Snapshot(blocked bool) *rpc.Pending {
	r := b.Waiting()
	if r == nil || !blocked {
		return nil
	}
	p := r.p
	p.Options = append([]rpc.PendingOption(nil), p.Options...)
	return &p
}

// Find is the open or a remembered request by id, or nil.
func (b *Box) Find(id string) *Request {
	if b.open != nil && b.open.p.ID == id {
		return b.open
	}
	for _, r := range b.past {
		if r.p.ID == id {
			return r
		}
	}
	return nil
}

// ForAnswer is the request an answer naming pendingID ("" for the open
// one) answers, for the Session sessionID in state, or the typed error
// that says why there is none.
func (b *Box) ForAnswer(sessionID, state, pendingID string) (*Request, error) {
	cur := b.Waiting()
	switch {
	case pendingID != "" && (cur == nil || cur.p.ID != pendingID):
		if old := b.Find(pendingID); old != nil {
			return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: sessionID,
				Message: "pending request " + pendingID + " was already " + old.state + "; read the Session for what it asks now"}
		}
		if cur == nil {
			return nil, &rpc.Error{Code: rpc.CodeNotFound, SessionID: sessionID,
				Message: "the Session has no pending request " + pendingID}
		}
		return nil, &rpc.Error{Code: rpc.CodeNotFound, SessionID: sessionID,
			Message: "pending request " + pendingID + " is not the Session's; it waits on " + cur.p.ID}
	case cur == nil || state != rpc.StateBlocked:
		msg := "the Session is " + state + " and has no pending request"
		if state == rpc.StateBlocked {
			msg = "the Session is blocked on a request dlgt cannot answer for its harness; attach to answer it in the terminal"
		}
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: sessionID, Message: msg}
	}
	return cur, nil
}

// Responses remembers session.respond answers by request_id, the last
// MaxResponses of them. Safe for concurrent use.
type Responses struct {
	mu    sync.Mutex
	byID  map[string]Response
	order []string
}

// Response is one remembered answer: its payload's Digest and result.
type Response struct {
	Digest string
	Result rpc.SessionRespondResult
}

// Get is the answer remembered for the request id.
func (r *Responses) Get(id string) (Response, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.byID[id]
	return rec, ok
}

// Put remembers the answer for the request id, forgetting the oldest
// beyond MaxResponses.
func (r *Responses) Put(id string, rec Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]Response{}
	}
	if _, ok := r.byID[id]; !ok {
		r.order = append(r.order, id)
	}
	r.byID[id] = rec
	for len(r.order) > MaxResponses {
		delete(r.byID, r.order[0])
		r.order = r.order[1:]
	}
}

// Digest identifies a response's payload for replay: every field but
// request_id.
func Digest(p rpc.SessionRespondParams) string {
	p.RequestID = ""
	b, _ := json.Marshal(p)
	return string(b)
}

// Validate checks session.respond's params' shape before anything is
// looked up.
func Validate(p rpc.SessionRespondParams) error {
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
	case len(p.Message) > MaxRespondMessage:
		return rpc.InvalidField("message", "longer than %d bytes", MaxRespondMessage)
	case strings.ContainsRune(p.Message, 0):
		return rpc.InvalidField("message", "contains a NUL byte")
	case len(p.PendingID) > 64:
		return rpc.InvalidField("pending_id", "longer than 64 bytes")
	}
	return nil
}
