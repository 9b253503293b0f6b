// Package vt renders a harness's terminal output. It turns the byte stream of
// one process generation into stable rows (lines that scrolled off the top of
// the main screen, immutable once emitted) and a live grid rendered on demand.
package vt
