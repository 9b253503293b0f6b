package client

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"unicode"
)

// What a front-end fills in for a person who gave none: every front-end
// (the CLI's session create, the MCP delegate tool, dlgt ui's form) takes
// a Session's title and a request_id from here.

// TitleFrom makes a Session title from a prompt: its first non-empty
// line, control characters as spaces, at most 60 runes (cut with "…").
func TitleFrom(prompt string) string {
	for _, line := range strings.Split(prompt, "\n") {
		var b strings.Builder
		n := 0
		for _, r := range line {
			if n == 60 {
				b.WriteString("…")
				break
			}
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				r = ' '
			}
			b.WriteRune(r)
			n++
		}
		if s := strings.TrimSpace(b.String()); s != "" {
			return s
		}
	}
	return "delegated task"
}

// NewRequestID is a fresh random request_id, prefix-<24 hex digits>, for
// a person who did not choose one: unique, so it never replays another
// acceptance; a retry must repeat it, which is why a front-end that
// makes one shows it.
func NewRequestID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
