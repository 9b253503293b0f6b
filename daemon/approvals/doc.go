// Package approvals is the pending requests' bookkeeping: the room for
// "change how approvals are asked, answered, withdrawn or replayed".
//
// A Session asks at most one request at a time (Box.Open); a request is
// waiting until it is answered (Request.Answer, session.respond) or
// withdrawn (Box.Close), and a Box remembers the last MaxPast closed ones
// so a late answer gets a typed error naming what became of it
// (Box.ForAnswer). The forwarder of the hook that asked claims the
// request once (Request.Claim) and waits for its answer (Request.Done,
// bounded by MaxDecisionWait); one that never begins waiting within
// ClaimGrace leaves it to be withdrawn. session.respond's parameters are
// checked before anything is looked up (Validate), and its answers are
// remembered by request_id (Responses, at most MaxResponses; Digest
// tells a replay from another payload).
//
// The package never sees a Session, a harness or the runtime: the daemon
// (pending.go in package daemon) decides when a hook's evidence opens a
// request, which harness answers through its hook and which with its
// dialog's keys, and moves the Session's state; it holds a Box and its
// Requests under the Session's own lock, which guards them. Its tests
// (approvals_test.go) run without a daemon.
package approvals
