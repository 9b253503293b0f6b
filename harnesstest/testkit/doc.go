// Package testkit is the one kit the front-ends' tests share: the roles
// a test binary doubles as (Main), an in-process daemon on a temporary
// home with the fake Claude Code as its harness (StartDaemon,
// FakeClaudeEnv), and an rpc fake that serves canned results and records
// requests (FakeDaemon). Like every package under harnesstest,
// only _test.go files may import it.
package testkit
