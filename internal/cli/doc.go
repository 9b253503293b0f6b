// Package cli is the dlgt command line's core and its socket-only
// commands: the ones that only talk to the daemon through the client and
// print. Both binaries link it: cmd/dlgt adds its other commands to the
// tree (NewRoot's Extend), cmd/dlgtc runs these alone (RunOwn) and hands
// any other command line to the full dlgt.
//
// # What it owns, by file
//
//   - root.go: the process's Env, the tree (NewRoot, Own), exit statuses
//     and the one JSON failure shape; client.go: the command's client
//     (package client: dialing, autostart, --host); remote.go: commands
//     that run on another machine through ssh.
//   - output.go, textout.go: the JSON line and -o text (the texts
//     themselves are package internal/render's); cmdutil.go: usage
//     errors, the typed call-and-print body, the launch flags.
//   - version.go, profiles.go, harnesses.go, models.go, events.go,
//     notify.go, scrollback.go, transcript.go, session_*.go: one file per
//     command; harness_registry.go: the registry every harness list comes
//     from.
//
// # What it must not link
//
// dlgtc exists to start fast: nothing here imports the daemon, mcp, acp,
// internal/ui or their libraries (the MCP and ACP SDKs, bubbletea and the
// terminal UI packages, bbolt, the PTY and terminal emulator).
// cmd/dlgtc's TestDependenciesSmall keeps it so.
package cli
