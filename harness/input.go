package harness

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Await is evidence in the harness's own output that the daemon waits for
// before a write, in place of a fixed pause. Every condition set must hold
// at once; Timeout is the fallback for a TUI that never shows it: past it
// the write is made anyway and the daemon logs that it fell back.
type Await struct {
	// PasteMode: the process has turned bracketed paste on (DECSET 2004,
	// "ESC [ ? 2004 h") and not off again. A TUI does that once its input
	// handling is set up, so it is the evidence that keys are read.
	PasteMode bool
	// Echo: output arrived after the previous write, and the live grid
	// shows one of these strings on the cursor's row or the row above it
	// (the input box: the cursor sits at the end of the draft). Empty
	// strings are ignored.
	Echo []string
	// Shown: the live grid shows one of these strings on any row, whether
	// or not output arrived since the previous write (a TUI's idle input
	// box, drawn some time after the harness reported itself ready).
	// Empty strings are ignored.
	Shown []string
	// Quiet: once the rest holds, the output has been quiet this long, so
	// the frame showing the echo is complete.
	Quiet time.Duration
	// Settle: once the rest holds, the write waits until this long has
	// passed since the echo was seen (since the wait began, without one),
	// for a TUI that treats the key differently for a while after a paste
	// whatever its screen shows (Gemini CLI: geminiPasteGuard).
	Settle time.Duration
	// Timeout bounds the wait from the moment the write is due.
	Timeout time.Duration
	// Lost and Repaste are for a TUI that can drop a paste (Gemini CLI
	// while a resume redraws): when Echo is still unseen at Timeout, the
	// daemon waits for the TUI to draw again and settle; if it then shows
	// one of Lost (its empty input box) and still no echo, the paste was
	// dropped, and the input is written again from its first keystroke,
	// at most Repaste times. Otherwise the write goes ahead as before.
	Lost    []string
	Repaste int
}

// Delivery timing, measured on the pinned CLIs: Claude Code 2.1.332 turns
// bracketed paste on ~100 ms before its SessionStart hook arrives and
// shows a paste 30–100 ms after it is written (the first paste of a
// process is the slowest, and one typed while its Stop hook still runs
// shows once the hook returned; both took over 500 ms under -race on 2
// busy cores); Codex shows one within ~5 ms, a 100 KB paste included.
// The fallbacks are generous: they only bound a TUI that never shows the
// evidence, and Enter after the fallback still follows the paste (both
// TUIs read input in order; the old fixed settle was 250 ms).
const (
	pasteModeTimeout = 2 * time.Second
	echoQuiet        = 2 * time.Millisecond
	echoTimeoutBase  = time.Second
	echoTimeoutPerKB = 3 * time.Millisecond
)

// pasteSubmit is the input that replaces the draft with prompt and
// submits it, for a TUI that reads bracketed paste: once bracketed paste
// is on, Ctrl-U (clear the draft) and the prompt as one bracketed paste;
// then, once the TUI shows the paste (its text at the cursor, or one of
// placeholders, the label a TUI shows for a long paste), Enter as its own
// write. Enter sent before the paste is taken is lost or becomes part of
// the draft.
func pasteSubmit(prompt string, placeholders ...string) []Keystroke {
	paste := make([]byte, 0, len(prompt)+len(pasteStart)+len(pasteEnd))
	paste = append(append(append(paste, pasteStart...), prompt...), pasteEnd...)
	echo := append([]string{EchoToken(prompt)}, placeholders...)
	return []Keystroke{
		{Data: []byte{0x15}, Await: &Await{PasteMode: true, Timeout: pasteModeTimeout}},
		{Data: paste},
		{Data: []byte{'\r'}, Await: &Await{
			Echo: echo, Quiet: echoQuiet,
			Timeout: echoTimeoutBase + time.Duration(len(prompt)/1024)*echoTimeoutPerKB,
		}},
	}
}

// maxEchoToken bounds the piece of a prompt looked for on the screen.
const maxEchoToken = 16

// EchoToken is the piece of prompt a TUI showing it in its input box
// displays right before the cursor: the last word of its last non-blank
// line that is printable ASCII (what a terminal grid reproduces exactly),
// clipped to its last maxEchoToken bytes so that wrapping rarely splits
// it. "" when no word qualifies (the caller then relies on placeholders
// or the fallback).
func EchoToken(prompt string) string {
	text := strings.TrimRight(prompt, " \t\r\n")
	if i := strings.LastIndexAny(text, "\r\n"); i >= 0 {
		text = text[i+1:]
	}
	words := strings.Fields(text)
	for i := len(words) - 1; i >= 0; i-- {
		w := words[i]
		if !printableASCII(w) {
			continue
		}
		if len(w) > maxEchoToken {
			w = w[len(w)-maxEchoToken:]
		}
		return w
	}
	return ""
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return s != "" && utf8.ValidString(s)
}
