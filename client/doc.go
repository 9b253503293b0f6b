// Package client is the one client of the dlgt daemon, used by every
// front-end (the CLI, the MCP server, and any Go program): a Client with a
// typed method per RPC method, over one dial policy.
//
// # Dial policy
//
// A Client is built from Options and dials a fresh connection per call,
// so calls may run concurrently. The destination is, in order:
//
//   - another machine when Options.Host (else DLGT_HOST) names one: ssh
//     runs `dlgt rpc --stdio --remote` there, whose hello line is checked
//     (same RPC schema) before the first request; connections of one
//     Client share one ssh master;
//   - for a call about a provider-qualified Session id (claude:…,
//     codex:…) that this version's daemon does not hold, the daemon of
//     another version under the same state directory that does (owner
//     routing); a pinned socket (DLGT_SOCKET) is never routed;
//   - this version's daemon ($DLGT_HOME/run/<version>/dlgt.sock), started
//     in the background when none answers, unless autostart is off
//     (NoAutostart, DLGT_NO_AUTOSTART) or the socket is pinned. The state
//     directories are checked first: an unusable one is RPC_UNAVAILABLE
//     naming it, and nothing is started.
//
// Every transport failure is an *rpc.Error with code RPC_UNAVAILABLE
// saying what was tried and what to do.
//
// # Typed methods
//
// Each public method of the v1 contract has a method here, taking and
// returning the rpc package's shapes through its descriptor (rpc.Method),
// so the client and the daemon agree on them at compile time.
// EventSubscribe is an iterator. ProfileList is answered from the
// client-side profiles file, as the contract says. DaemonStatus and
// DaemonStop are the internal control methods; ProbeDaemon diagnoses
// what answers on this machine's socket. Call makes any method's call by
// name and keeps the answer as the daemon sent it, for a front-end that
// prints it (dlgt's JSON output).
//
// # Above the methods
//
// WaitResult fetches from a cursor until an execution's result and joins
// its chunked final_text (JoinChunk, the one implementation of the
// contract's chunk rule); Results pages through every retained result.
// ResolveLaunch is the one launch resolution: profile, working directory,
// launch environment and host; Launch and Resume send it where it
// resolved.
package client
