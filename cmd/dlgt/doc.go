// Command dlgt runs the dlgt daemon and is its command-line client: it lets
// one coding agent delegate work to another (Claude Code, Codex) running
// under a PTY that the daemon hosts.
//
// # What it owns, by file
//
//   - main.go, root.go: the process entry (the hook fast path first), the
//     command tree, exit statuses and the one JSON failure shape;
//     client.go: finding, dialing and auto-starting this version's daemon;
//     remote.go: the same protocol to another machine through ssh.
//   - session_*.go, events*.go, scrollback.go, transcript.go, models.go,
//     harnesses.go, doctor.go, attach.go: one file per command; output.go
//     and textout.go: the JSON output and the -o text flag (the texts
//     themselves are package internal/render's).
//   - mcp.go: `dlgt mcp`, package mcp's server on stdio over a
//     client.Client; mcp_config.go, mcp_install.go: the commands that
//     configure a leader harness for it (the file edits are package
//     internal/setup's); skill*.go and skill/:
//     the agent-facing guide and its installation; profiles.go: the
//     client-side launch profiles.
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
