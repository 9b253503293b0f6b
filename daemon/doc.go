// Package daemon is the dlgt daemon: it owns the state directory, the
// versioned Unix socket, the bbolt store and every Session's harness
// process, and serves the RPC v1 methods over the socket. Run blocks until
// its context is canceled, which is the stop signal.
//
// # What it owns, by file
//
//   - the state directory's paths and checks, and the Version and Commit,
//     are package statedir's (the client takes them from there too).
//   - runtime.go: the runtime (Sessions by uid, id and alias), recovery at
//     start; session.go the Session and its execution.
//   - api.go: the wire layer: the dispatch table, every method routed
//     through its typed descriptor (rpc.Public and rpc.Internal), which decodes
//     the params before the typed domain function runs.
//   - accept.go, launch.go, launch_prompt.go, deliver.go: acceptances
//     (create, send) and the harness launches and prompt delivery behind
//     them; receipts.go the idempotency table.
//   - evidence.go: harness hooks (internal.hook) and what they do to a
//     Session; control.go: resume, stop, restart, cancel.
//   - positions.go: fetch positions, their durable numbering and storage
//     (the same window in every daemon lifetime); storage.go: writes that
//     wait for a full disk, and one transaction per state change.
//   - fetch.go and fetch_*.go: session.fetch, by responsibility (see
//     fetch.go): the document rules are pure functions of a snapshot that
//     fetch_state.go takes (the only fetch code that locks a Session or
//     reads the store for a document); reads.go: session.read/list, events, scrollback, raw
//     transcript; attach.go: the interactive attach lease.
//
// # What it must not touch
//
// It reaches bbolt and the raw logs only through package store, harness
// processes only through pty, terminal rendering only through vt, and a
// harness's CLI only through its harness.Harness adapter; it never imports
// cmd/dlgt or the test doubles under harnesstest (tests may).
// Wire shapes belong to package rpc: nothing here invents a public field
// that rpc/types.go does not declare, and the internal methods'
// descriptors and shapes are rpc/internal.go's.
package daemon
