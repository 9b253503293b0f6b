// Package mcp is dlgt's MCP server: the daemon's delegation methods as MCP
// tools for a leader agent, served on stdio by `dlgt mcp`.
//
// The tools are delegate (session.create), send (session.send), wait
// (session.fetch until a result), read (session.read), list
// (session.list), cancel (session.cancel) and stop (session.stop); wait,
// read and list are marked read-only. Each is a method of one domain type
// that calls the typed methods of a client.Client, so the server dials,
// autostarts, routes and reaches other machines exactly as the CLI does:
//
//   - delegate resolves its profile, working directory and launch
//     environment with client.ResolveLaunch and creates the Session where
//     that resolved (a profile with a host: on that host, through ssh).
//     The server remembers that host for the Session's id and alias, so
//     the later tools about it reach it there; send with resume carries
//     the launch fields as client.Client.Resume does;
//   - wait is client.Client.WaitResult, whose final_text join is
//     client.JoinChunk (a piece replayed from offset 0 replaces the copy
//     read before instead of doubling it), bounded by Options.WaitMax.
//
// Every answer is a short text for the model (ids, status, the final
// text, what to call next) followed by the JSON document as a second text
// block; errors are tool errors naming the code, the field and what to do
// next, with the CLI's advice rewritten to name the tools. Request ids are
// required (or derived from a key) so that a retried call never runs a
// task twice.
//
// NewServer builds the server for a Client; Serve runs it on a pair of
// streams. The texts that depend on the command line (the registry's
// harness names, the wording of token usage) come through Options.
package mcp
