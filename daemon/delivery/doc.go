// Package delivery writes a prompt's keystrokes into a harness's
// terminal, each write held for the evidence the harness adapter awaits
// (harness.Await) in the TUI's own output: the room for "change how a
// prompt is typed into a harness and how delivery knows it was taken".
//
// A Watch follows what a generation printed (bracketed paste mode across
// chunk boundaries, when the last chunk came, a wake-up on the next); the
// daemon's pump feeds it. A Target is one generation as the daemon hands
// it over: the watch, the live grid, the write, the process's exit, the
// active execution's confirmation. Deliver writes keys with their waits
// (paste mode, the input box shown, the echo at the cursor, quiet output,
// a settle time), types a paste the TUI dropped again (Await.Repaste) and
// an unconfirmed key again (Keystroke.Retry); each wait has a fallback
// timeout, logged when taken.
//
// It sees no Session, no lock and no runtime, only the Target's
// functions. Its tests play a TUI on a vt grid, no daemon, no process.
package delivery
