// Package fetchdoc builds session.fetch documents: the room for "change
// how fetch pages work". Everything here is a pure function of a snapshot
// and a validated request; it locks nothing, owns no Session and knows no
// daemon.
//
// # What it owns, by file
//
//   - req.go: the request (Parse validates rpc.SessionFetchParams into a
//     Req) and the contract's bounds (MaxEvents, HardBytes, AllPage, ...).
//   - mark.go: the watermarks (Mark for one Session, AllMark for all:true,
//     AllKey their canonical key) and the gap rule (Gaps of a Mark given
//     what retention kept).
//   - state.go: State, one Session as one evaluation sees it, and the
//     store reads that fill it (ReadDelta, ReadBaseline, ReadLatest) from
//     a store.Reader the caller opened.
//   - delta.go: one Session's document: a delta from a Mark (DeltaOf) or a
//     baseline after a gap (BaselineOf).
//   - allpage.go: the all:true pages: the cursorless enumeration
//     (EnumPage) and the delta over every Session (AllDeltaOf).
//   - size.go: fitting a document into max_bytes (Fit) and chunking a long
//     final_text (WithChunk, ChunkSizer).
//
// # The contract with its caller
//
// The daemon takes the snapshot (a State under the Session's locks, then
// the store in one read transaction), mints and stores positions, parks
// long polls and wakes them; this package decides what the document holds.
// Given the same State, Req and marks it returns the same document, so its
// tests (pure_test.go) build States by hand, with no daemon, store or
// Session. It imports rpc and store's row and record types only; it never
// imports the daemon.
package fetchdoc
