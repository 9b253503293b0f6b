package harness

import (
	"bytes"
	"strings"
	"testing"
)

func TestEchoToken(t *testing.T) {
	for _, c := range []struct{ prompt, want string }{
		{"hello there small prompt", "prompt"},
		{"trailing blanks  \n\n\t", "blanks"},
		{"first line\nsecond line ends here.", "here."},
		{"a very-long-identifier-that-wraps-somewhere", "t-wraps-somewhere"[1:]},
		{"ascii then ünïcödé", "then"},
		{"ünïcödé only", "only"},
		{"日本語", ""},
		{"", ""},
		{"   \n  ", ""},
	} {
		if got := EchoToken(c.prompt); got != c.want {
			t.Errorf("EchoToken(%q) = %q, want %q", c.prompt, got, c.want)
		}
		if got := EchoToken(c.prompt); len(got) > maxEchoToken {
			t.Errorf("EchoToken(%q) = %q is longer than %d", c.prompt, got, maxEchoToken)
		}
	}
}

// Both adapters submit alike: Ctrl-U once bracketed paste is on, the
// prompt as one exact bracketed paste, Enter once the paste shows.
func TestSubmitAwaitsEvidence(t *testing.T) {
	prompt := "line one\nline two ends with WORD"
	for _, h := range []Harness{Claude{}, Codex{}} {
		keys := h.Submit(prompt)
		if len(keys) != 3 {
			t.Fatalf("%s: %d keystrokes, want 3", h.Name(), len(keys))
		}
		clear, paste, enter := keys[0], keys[1], keys[2]
		if !bytes.Equal(clear.Data, []byte{0x15}) || clear.Await == nil || !clear.Await.PasteMode || clear.Await.Timeout <= 0 {
			t.Errorf("%s: first keystroke %+v, want Ctrl-U awaiting bracketed paste with a fallback", h.Name(), clear)
		}
		if want := "\x1b[200~" + prompt + "\x1b[201~"; string(paste.Data) != want || paste.Await != nil {
			t.Errorf("%s: paste %q (await %+v), want %q at once", h.Name(), paste.Data, paste.Await, want)
		}
		a := enter.Await
		if string(enter.Data) != "\r" || a == nil || a.Timeout <= 0 || a.Quiet <= 0 {
			t.Fatalf("%s: last keystroke %+v, want Enter awaiting the echo", h.Name(), enter)
		}
		if len(a.Echo) != 2 || a.Echo[0] != "WORD" || !strings.HasPrefix(a.Echo[1], "[Pasted ") {
			t.Errorf("%s: echo %q, want the prompt's last word and the paste placeholder", h.Name(), a.Echo)
		}
		// The fallback grows with the paste.
		if big := h.Submit(strings.Repeat("x", 100<<10))[2].Await.Timeout; big <= a.Timeout {
			t.Errorf("%s: fallback for 100 KiB %v, not above %v", h.Name(), big, a.Timeout)
		}
	}
}
