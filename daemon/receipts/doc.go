// Package receipts is the acceptance idempotency table: the room for
// "change how a retried create or send is recognised".
//
// An acceptance (session.create, session.send) carrying a request_id
// reserves it (Table.Reserve) under the digest of its payload (Digest:
// the method and every parameter but the few a retry may change). While
// it runs, a duplicate waits for it; a success is stored (Table.Finish)
// and every later retry with the same payload replays the receipt, one
// with another payload is refused (ErrDifferentPayload); a failure
// stores nothing, so the id may be used again. A provisional receipt is
// stored as soon as the execution is recorded (Table.Provisional, reached
// through the acceptance's context, WithAcceptance), so a retry after a
// crash replays it instead of running the prompt twice, unless the
// daemon says the execution was never recorded (Table.Recorded).
//
// The daemon supplies the store, Recorded and PositionOf (the stored form
// of a receipt's cursor, written in the receipt's own transaction); this
// package never sees a Session. Its tests (receipts_test.go) run a Table on
// a store of its own, with no daemon.
package receipts
