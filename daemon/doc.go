// Package daemon is the dlgt daemon: it owns the state directory, the
// versioned Unix socket, the bbolt store and every Session's harness
// process, and serves the RPC v1 methods over the socket. Run blocks until
// its context is canceled, which is the stop signal.
//
// It is the composition root: nothing but cmd/ imports it (a test keeps
// that so), and the parts that need no runtime are packages of their own,
// which it wires (the features that act on a Session under its locks stay
// here, as types that see the runtime through a narrow interface: the
// fetcher, terminals, worktrees, hookIntake):
//
//   - daemon/fetchdoc: the session.fetch document (request, watermarks
//     and gaps, deltas, all:true pages, fitting into max_bytes);
//   - daemon/positions: fetch positions (minting, retention, storage);
//   - daemon/receipts: the acceptance idempotency table (request_id);
//   - daemon/worktree: the git work behind the worktree option;
//   - daemon/spares: the warm-spare pool (session.warm: claim, refill,
//     bounds, expiry, stop) behind a launcher the daemon gives it;
//   - daemon/approvals: pending requests' bookkeeping (one open per
//     Session, answered or withdrawn, the last ones remembered, the
//     forwarder's claim and wait, session.respond's checks and replay);
//   - daemon/sockets: binding the Unix socket paths safely, and binding
//     them again when deleted under a running daemon;
//   - daemon/hookhttp: the HTTP hook intake (DLGT_HOOKS=http): the
//     loopback server, its peer and token checks;
//   - daemon/toolcalls: the bounded in-memory log of tool.call events and
//     their merge with lifecycle events;
//   - daemon/versions: the installed harness versions for harness.list,
//     cached per binary;
//   - daemon/parking: where long polls wait, sharing one evaluation per
//     position, bounds and change (and all:true's per change);
//   - daemon/scrollback: scrollback.read's paging (cursors, page sizes,
//     the live grid before the history);
//   - daemon/catalog: the harnesses the daemon has: harness.list,
//     model.list, an adapter by name;
//   - daemon/delivery: typing a prompt's keystrokes into a harness's
//     terminal, each write held for the evidence its adapter awaits in
//     the output (paste mode, the echo, quiet), with its fallbacks;
//   - daemon/transcript: reading a provider transcript through one
//     bounded opener: a turn's reply and usage, the one turn-end wait for
//     both, a steer's proof, the tail of appended lines.
//
// The state directory's paths and checks, and the Version and Commit, are
// package statedir's; the wire shapes, public and internal, are rpc's.
//
// # What it owns, by file
//
// Every non-test file of the package, one line each (TestDocMapsEveryFile
// keeps the list whole):
//
//   - accept.go: acceptances (session.create, session.send): validation, the receipt, the launch or delivery.
//   - api.go: the wire layer: the dispatch table, each method decoded through its rpc descriptor.
//   - attach.go: the interactive attach lease (internal.terminal.*) and its output stream, served by the terminals type over a narrow terminalHost.
//   - control.go: resume, stop, restart and cancel of a Session.
//   - daemon.go: Run: startup, the sockets (package sockets), the hook-only server, shutdown.
//   - deliver.go: a generation as package delivery's target (its grid, output watch, write, execution).
//   - doc.go: this map.
//   - evidence.go: harness hooks taken in by the hookIntake type (internal.hook, the HTTP intake), and what their evidence does to a Session (applyEvidence).
//   - fetch.go: session.fetch's entry points (a cursor, a cursorless baseline, after_execution) on the fetcher, which sees the runtime as a narrow fetchHost.
//   - fetch_all.go: all:true fetches: which Sessions, what to take of them, waiting.
//   - fetch_longpoll.go: long polls: parking a fetch until a change, until:result.
//   - fetch_marks.go: a Session's watermark (its record of events retention dropped is fetchdoc.EventLoss).
//   - fetch_park.go: the keys long polls share an evaluation under (package parking); the positions table beside those shares.
//   - fetch_state.go: taking a fetch's snapshot: a Session under its locks, then the store in one read.
//   - harness_unknown.go: the stand-in adapter of a stored Session whose harness this build lacks.
//   - interrupt_proof.go: proving a Claude Code interrupt when no hook reports it.
//   - launch.go: starting a harness generation under a PTY and waiting for it to be ready.
//   - launch_prompt.go: launches that carry their prompt (harness.LaunchPrompter, Codex).
//   - lifecycle.go: the Session lifecycle: the only file that writes a Session's state.
//   - pending.go: pending requests (approvals): when a hook opens one, session.respond and internal.hook.decision over package approvals.
//   - queue.go: queued sends (session.send queue): held per Session, stored with it, run as the next execution once the running one ends.
//   - reads.go: session.read, session.list, events, scrollback (paged by package scrollback) and the raw transcript.
//   - reply.go: the turn-end wait (package transcript) for a turn's reply and usage record, for a harness that writes them after its turn-end hook.
//   - runtime.go: the runtime (Sessions by uid, id and alias), recovery at start.
//   - session.go: the Session, its generations and executions, and its persisted record.
//   - signin.go: a harness's sign-in check before a launch or a warm spare (harness.SignInChecker).
//   - spares.go: warm spares (session.warm): the launcher package spares' pool runs, a spare's Session object, a claimed spare becoming a Session.
//   - steer.go: steering a running execution (session.send steer); the proof in the CLI's own record is package transcript's WatchFor.
//   - storage.go: writes that wait for a full disk; one transaction per state change.
//   - toolevents.go: tool.call events from the harnesses' tool hooks into package toolcalls' log, served by event.read and event.subscribe.
//   - transcript_tail.go: following a provider transcript during and after a turn (its lines read by transcript.Tail).
//   - usage.go: where an execution's turn is in the provider transcript, and its token usage (read by package transcript).
//   - worktree.go: wiring package worktree: where worktrees go, session.diff, a result's diff summary.
//
// # What it must not touch
//
// It reaches bbolt and the raw logs only through package store, harness
// processes only through pty, terminal rendering only through vt, and a
// harness's CLI only through its harness.Harness adapter (a test in
// package harness keeps that so); it never imports cmd/dlgt or the test
// doubles under harnesstest (tests may). Wire shapes belong to
// package rpc: nothing here invents a public field that rpc/types.go does
// not declare, and the internal methods' descriptors and shapes are
// rpc/internal.go's (a test in package rpc keeps that so).
package daemon
