// Package store owns dlgt's persistent state: the single bbolt file under the
// state directory (sessions, results, receipts, events, stable rows, fetch
// positions and their reserved numbers) and the append-only raw PTY logs
// beside it. It is the only package that imports bbolt.
//
// # Concurrency contract
//
// Every exported method of DB, RowLog and RawLog is safe for concurrent use
// by multiple goroutines. bbolt allows one writer at a time, so write methods
// (PutSession, PutResult, PutReceipt, AppendEvent, DeleteSession,
// SavePositions, ReservePositions, DeletePositions and the row flusher's
// commits) serialize with each other; readers (Get*, List*,
// ReadEvents, RowLog.Read/ReadBefore) run in parallel with them and see only
// committed data. Each reader method is a read transaction of its own; View
// gives a Reader that answers several of them (events, results, rows of any
// session) from one read transaction, one consistent state, and ReadTxns
// counts the read transactions begun.
//
// Stable rows take a different path: RowLog.Append only assigns ids and
// buffers rows in memory under a per-session mutex; one background flusher
// per DB commits the rows of all sessions in a single transaction (after
// Options.FlushInterval, or at once when Options.FlushRows/FlushBytes pending
// rows accumulate, or on RowLog.Flush/DB.Close). Rows become visible to
// RowLog.Read and RowLog.Committed only after that commit, so nothing a reader
// saw can be lost by a crash. Pending memory is bounded by
// Options.MaxPendingBytes: when it is reached Append blocks until the flusher
// catches up (backpressure). If a commit fails (e.g. ENOSPC) the rows stay
// pending and are retried; Flush and LastFlushError report the error.
//
// Callbacks run with store machinery held and must not re-enter it:
//   - the AppendEvent build function runs inside the bbolt write transaction;
//     it must not call any DB or RowLog method;
//   - the commit hook (SetCommitHook) runs on the flusher goroutine outside the
//     transaction and without store locks; it may call Read, ReadBefore,
//     Committed and First, but not Append, Flush, DeleteSession or Close.
//
// Close must not race with new work: rows appended during or after Close are
// discarded and other methods return ErrClosed.
//
// All returned byte slices are copies owned by the caller; slices passed in
// are not retained after the call returns.
package store
