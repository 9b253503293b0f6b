// Package harness defines the contract between the dlgt daemon and a coding
// agent CLI (Claude Code, Codex): how to launch it, how to deliver a prompt,
// cancel, resume and stop it, and how its structured hooks map to lifecycle
// evidence.
package harness
