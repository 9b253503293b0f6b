// Package harnesstest is the root of the test doubles for the harness
// layer: the fake Claude Code TUI (fakeclaude), the loopback mock model
// servers (mockapi, with its mockserver command and the capture tool),
// and where the tests find the pinned harness CLIs (pinned).
//
// It owns nothing the product runs. No package outside harnesstest
// may import it or its subpackages except from _test.go files, and the dlgt
// binaries (./cmd/dlgt, ./cmd/dlgtc) must not depend on it; TestProductDoesNotImport
// enforces both.
package harnesstest
