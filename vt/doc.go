// Package vt renders a harness's terminal output. It turns the byte stream of
// one process generation into stable rows (lines that scrolled off the top of
// the main screen, immutable once emitted) and a live grid rendered on demand.
//
// A Screen wraps one terminal emulator. The emulator is dlgt's own small
// text-only VT (term): it tracks characters, not colours, which is all the
// rows need, and it runs the common case (printable ASCII runs, SGR, CR/LF)
// several times faster than tmux. github.com/hinshun/vt10x sits behind the
// same internal interface in the tests as the reference it is diffed
// against; NOTES.md records the measurements behind that choice.
//
// Semantics, in short:
//   - A row becomes stable when it scrolls off the top of the main screen:
//     LF/IND/NEL or autowrap at the bottom margin, or SU, with a scroll region
//     whose top margin is the first row (xterm's rule; Codex inserts history
//     this way). Regions with a lower top margin, DL, clears (ED 0/1/2), the
//     alternate screen and RIS never produce stable rows. Shrinking the row
//     count below the cursor pushes the top rows out as stable rows.
//   - A screen epoch ends on RIS (ESC c), erase-scrollback (CSI 3 J) and a
//     Resize that changes the column count; process restart is the daemon's
//     (a new Screen). Alt-screen switches and clears only change the grid.
//   - After a reset or a size change, rows that scroll off repeating the
//     end of the history row for row are an inline TUI's reprint (Codex
//     prints its whole transcript again after CSI 3 J; Claude Code reprints
//     the tail that fits) and are not emitted again (reprint.go). So are
//     rows repeating it after a cursor-up of a whole screen to the top row
//     (Claude Code repainting a frame taller than the screen). A reprint
//     that leaves out rows of history or holds a few rows it lacks (Gemini
//     CLI) still counts once it has matched 64 words.
//   - Rows are plain text with trailing blanks trimmed. Wide characters take
//     two cells and render once; combining marks stay with their base
//     character; invalid UTF-8 becomes U+FFFD.
//   - Terminal queries (CPR, DSR, DA1, DA2, DECRQM, XTWINOPS 18, OSC 10/11)
//     are answered through Callbacks.Reply so probing TUIs do not stall.
//
// Concurrency: a Screen is safe for concurrent use; all methods serialise on
// one internal sync.Mutex. Callbacks run synchronously inside Write or Resize
// with that mutex held, so they must not call back into the same Screen.
package vt
