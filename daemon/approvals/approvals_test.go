package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

func ask(b *Box, keys bool) *Request {
	r := NewPermission("Bash", `{"command":"ls"}`, "PermissionRequest", "l1", keys, "Deny it", 1)
	b.Ask(r)
	return r
}

func closed(r *Request) bool {
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}

func TestOneOpenRequestAndItsSnapshot(t *testing.T) {
	var b Box
	r := ask(&b, false)
	if b.Ask(NewPermission("Edit", "", "PermissionRequest", "l1", false, "", 2)) {
		t.Fatalf("a second request opened while one is")
	}
	if b.Snapshot(false) != nil {
		t.Fatalf("a Session not blocked shows a request")
	}
	p := b.Snapshot(true)
	if p == nil || p.ID != r.ID() || !strings.HasPrefix(p.ID, "prq_") || p.Kind != rpc.PendingPermission || p.Tool != "Bash" || len(p.Options) != 2 {
		t.Fatalf("snapshot = %+v", p)
	}
	p.Options[0].Label = "changed"
	if b.Snapshot(true).Options[0].Label == "changed" {
		t.Fatalf("a snapshot shares the request's options")
	}
	r.Answer([]byte("out"))
	if b.Snapshot(true) != nil || b.Waiting() != nil {
		t.Fatalf("an answered request is still shown")
	}
	if !closed(r) || r.State() != Answered || string(r.Output()) != "out" {
		t.Fatalf("answered: state %s output %q", r.State(), r.Output())
	}
}

func TestCloseRemembersTheLastOnes(t *testing.T) {
	var b Box
	var first *Request
	for i := range MaxPast + 3 {
		r := ask(&b, false)
		if i == 0 {
			first = r
		}
		b.Close(Withdrawn)
		if !closed(r) || r.State() != Withdrawn {
			t.Fatalf("closed request %d: state %s", i, r.State())
		}
		if b.Find(r.ID()) != r {
			t.Fatalf("a just closed request is forgotten")
		}
	}
	if b.Find(first.ID()) != nil {
		t.Fatalf("more than %d closed requests remembered", MaxPast)
	}
	if b.Open() != nil {
		t.Fatalf("a request is open after Close")
	}
	b.Close(Withdrawn) // none open: nothing happens
}

func TestAnsweredStaysAnsweredOnClose(t *testing.T) {
	var b Box
	r := ask(&b, false)
	r.Answer(nil)
	b.Close(Withdrawn)
	if r.State() != Answered {
		t.Fatalf("closing an answered request made it %s", r.State())
	}
}

func TestClaimOnceByTheHookThatAsked(t *testing.T) {
	var b Box
	r := ask(&b, false)
	if r.Claim("l2", "PermissionRequest") || r.Claim("l1", "PreToolUse") {
		t.Fatalf("another hook claimed the request")
	}
	if !r.Claim("l1", "PermissionRequest") {
		t.Fatalf("the asking hook could not claim it")
	}
	if r.Claim("l1", "PermissionRequest") {
		t.Fatalf("claimed twice")
	}
	k := NewPermission("Bash", "", "Notification", "l1", true, "", 1)
	if k.Claim("l1", "Notification") {
		t.Fatalf("a request answered with keys was claimed by a hook")
	}
}

func TestWaitEndsOnAnswerOrContext(t *testing.T) {
	var b Box
	r := ask(&b, false)
	go r.Answer([]byte("x"))
	r.Wait(context.Background(), time.Hour) // returns: the answer closes Done
	if r.State() != Answered {
		t.Fatalf("state %s", r.State())
	}
	r2 := NewPermission("Bash", "", "e", "l", false, "", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2.Wait(ctx, time.Hour) // returns: ctx is done
	if r2.State() != Waiting {
		t.Fatalf("a wait that ended changed the request: %s", r2.State())
	}
}

func TestForAnswerErrors(t *testing.T) {
	code := func(err error) rpc.Code {
		var e *rpc.Error
		if !errors.As(err, &e) {
			return rpc.Code(fmt.Sprintf("untyped %v", err))
		}
		return e.Code
	}
	var b Box
	if _, err := b.ForAnswer("s1", rpc.StateIdle, ""); code(err) != rpc.CodeSessionUnavailable || !strings.Contains(err.Error(), "idle") {
		t.Fatalf("no request: %v", err)
	}
	if _, err := b.ForAnswer("s1", rpc.StateBlocked, ""); code(err) != rpc.CodeSessionUnavailable || !strings.Contains(err.Error(), "attach") {
		t.Fatalf("blocked on what dlgt cannot answer: %v", err)
	}
	if _, err := b.ForAnswer("s1", rpc.StateBlocked, "prq_x"); code(err) != rpc.CodeNotFound {
		t.Fatalf("unknown id: %v", err)
	}
	old := ask(&b, false)
	b.Close(Withdrawn)
	cur := ask(&b, false)
	if _, err := b.ForAnswer("s1", rpc.StateBlocked, old.ID()); code(err) != rpc.CodeSessionUnavailable || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("a withdrawn id: %v", err)
	}
	if _, err := b.ForAnswer("s1", rpc.StateBlocked, "prq_other"); code(err) != rpc.CodeNotFound || !strings.Contains(err.Error(), cur.ID()) {
		t.Fatalf("another id: %v", err)
	}
	if _, err := b.ForAnswer("s1", rpc.StateBusy, ""); code(err) != rpc.CodeSessionUnavailable {
		t.Fatalf("not blocked: %v", err)
	}
	for _, id := range []string{"", cur.ID()} {
		if r, err := b.ForAnswer("s1", rpc.StateBlocked, id); err != nil || r != cur {
			t.Fatalf("ForAnswer(%q) = %v, %v", id, r, err)
		}
	}
}

func TestResponsesBounded(t *testing.T) {
	var rs Responses
	for i := range MaxResponses + 1 {
		rs.Put(fmt.Sprint(i), Response{Digest: fmt.Sprint("d", i)})
	}
	if _, ok := rs.Get("0"); ok {
		t.Fatalf("more than %d responses remembered", MaxResponses)
	}
	if r, ok := rs.Get(fmt.Sprint(MaxResponses)); !ok || r.Digest != fmt.Sprint("d", MaxResponses) {
		t.Fatalf("the last response: %+v %v", r, ok)
	}
	rs.Put("1", Response{Digest: "again"}) // a replace does not grow it
	if len(rs.order) != MaxResponses {
		t.Fatalf("%d remembered", len(rs.order))
	}
}

func TestDigestIgnoresRequestID(t *testing.T) {
	p := rpc.SessionRespondParams{Session: "s", Decision: rpc.DecisionAllow, RequestID: "a"}
	q := p
	q.RequestID = "b"
	if Digest(p) != Digest(q) {
		t.Fatalf("the request_id changes the digest")
	}
	q.Decision = rpc.DecisionDeny
	if Digest(p) == Digest(q) {
		t.Fatalf("the decision does not change the digest")
	}
}

func TestValidate(t *testing.T) {
	ok := rpc.SessionRespondParams{Session: "s", Decision: rpc.DecisionDeny, Message: "no", RequestID: "r1"}
	if err := Validate(ok); err != nil {
		t.Fatal(err)
	}
	field := func(p rpc.SessionRespondParams) string {
		var e *rpc.Error
		if err := Validate(p); !errors.As(err, &e) {
			return "none"
		}
		return e.Field
	}
	for _, c := range []struct {
		edit  func(*rpc.SessionRespondParams)
		field string
	}{
		{func(p *rpc.SessionRespondParams) { p.Option = "x" }, "option"},
		{func(p *rpc.SessionRespondParams) { p.Decision = "maybe" }, "decision"},
		{func(p *rpc.SessionRespondParams) { p.Decision = rpc.DecisionAllow }, "message"},
		{func(p *rpc.SessionRespondParams) { p.Message = strings.Repeat("x", MaxRespondMessage+1) }, "message"},
		{func(p *rpc.SessionRespondParams) { p.Message = "a\x00b" }, "message"},
		{func(p *rpc.SessionRespondParams) { p.PendingID = strings.Repeat("x", 65) }, "pending_id"},
	} {
		p := ok
		c.edit(&p)
		if f := field(p); f != c.field {
			t.Errorf("%+v: error on %q, want %q", p, f, c.field)
		}
	}
}

// Every change of the open request counts, and only those: a fetch
// position's mark holds the count, so it must grow with each and never
// repeat.
func TestChangesCountEachChange(t *testing.T) {
	var b Box
	b.Close(Withdrawn) // nothing open: no change
	if n := b.Changes(); n != 0 {
		t.Fatalf("changes with nothing asked = %d", n)
	}
	r := ask(&b, false)
	b.Ask(NewPermission("Edit", "", "PermissionRequest", "l1", false, "", 2)) // refused: no change
	if n := b.Changes(); n != 1 {
		t.Fatalf("changes after one ask = %d, want 1", n)
	}
	b.Answer(r, []byte("out"))
	if n := b.Changes(); n != 2 || r.State() != Answered || string(r.Output()) != "out" {
		t.Fatalf("after the answer: changes %d state %s output %q", n, r.State(), r.Output())
	}
	b.Close(Answered)
	if n := b.Changes(); n != 3 {
		t.Fatalf("changes after the close = %d, want 3", n)
	}
}
