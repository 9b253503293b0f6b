// Package positions mints, retains and stores session.fetch positions:
// the numbers a cursor carries. It is the room for "change how cursors
// work" (their retention, deduplication, numbering across restarts).
//
// A Position is an immutable watermark vector (a fetchdoc.Mark, or a
// fetchdoc.AllMark for the all:true scope, AllScope) under a number that
// is unique in its scope. A Table numbers each scope on its own, returns
// the held number when a fetch reaches a vector it already holds, keeps
// the most recently touched PerSession (PerAll) per scope and Total in
// all, and links each position to the first position an advancing fetch
// from it minted (Successor), so a replay returns the same window.
//
// What it stores (docs/rpc.md, "Positions across daemon restarts"):
// numbers are reserved durably in blocks of ReserveBlock before any is
// handed out, so no number names two windows, crash included; positions
// are written in batches FlushDelay after the first unsaved one; Load
// resumes after every reservation and deletes the positions of scopes
// that no longer exist.
//
// The daemon owns the scopes (a Session's uid) and decides what a
// position's vector is (package fetchdoc); this package only holds them.
// Its tests (positions_test.go) run a Table alone, with no daemon.
package positions
