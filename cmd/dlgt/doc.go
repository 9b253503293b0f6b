// Command dlgt runs the dlgt daemon and is its command-line client: it lets
// one coding agent delegate work to another (Claude Code, Codex) running
// under a PTY that the daemon hosts.
//
// # What it owns, by file
//
//   - main.go: the process entry (the hook fast path first) and the
//     commands only the full binary has (extend); the command tree's core
//     and the socket-only commands (session create, send, fetch, list, ...,
//     events, version) are package internal/cli's, which cmd/dlgtc links
//     too.
//   - daemon_cmd.go, rpc_cmd.go, hook.go, doctor.go, attach.go (session
//     attach), ui.go, completion.go: one file per command.
//   - mcp.go: `dlgt mcp`, package mcp's server on stdio over a
//     client.Client; mcp_config.go, mcp_install.go: the commands that
//     configure a leader harness for it (the file edits are package
//     internal/setup's); acp.go: `dlgt acp`; skill*.go and skill/:
//     the agent-facing guide and its installation.
//
// # What it must not touch
//
// It is a client: everything a command learns about Sessions comes over
// the socket through package rpc, as any other client's would. Package
// daemon is used for its paths, version and state-directory checks (and
// package harness for doctor's binary checks), and
// run in process only by `dlgt daemon`. It never reads the store, the raw
// logs or a harness's files directly, and never imports the test doubles
// under harnesstest.
package main
