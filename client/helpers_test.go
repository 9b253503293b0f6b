package client_test

import (
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/statedir"
)

// The test binary doubles as the fake Claude Code, the hook forwarder and
// (for autostart) `dlgt daemon` (testkit.Main).
func TestMain(m *testing.M) { testkit.Main(m) }

// fakeClaudeEnviron is a client environment whose claude is the fake
// (testkit.FakeClaudeEnv).
func fakeClaudeEnviron(dir string) []string { return testkit.Environ(testkit.FakeClaudeEnv(dir))() }

// shortDir is a temporary directory with a short path.
func shortDir(t testing.TB) string { return testkit.ShortDir(t) }

// startDaemon runs an in-process daemon of this version on the state
// directory home until the test ends.
func startDaemon(t testing.TB, home string) statedir.Paths { return testkit.StartDaemon(t, home).Paths }

// env is a Getenv of exactly vars.
func env(vars map[string]string) func(string) string { return testkit.Getenv(vars) }

// environ is an Environ of exactly vars.
func environ(vars map[string]string) func() []string { return testkit.Environ(vars) }
