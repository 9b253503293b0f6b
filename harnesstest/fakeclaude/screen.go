package fakeclaude

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Screen conventions shared with the real TUI (harness-notes.md): the idle
// input line is "❯" + U+00A0 + draft, reply lines start with "● ".
const (
	promptMark = "❯\u00a0"
	replyMark  = "● "
	clearLine  = "\r\x1b[2K"
)

// screen draws a minimal main-screen TUI: lines scroll up, and the last
// line (the footer) is the input prompt, a spinner or nothing. The output
// is raw (OPOST off), so every line ends with CR LF. Both the main loop and
// the turn goroutine draw, so every write happens under mu as one Write.
type screen struct {
	mu     sync.Mutex
	out    io.Writer
	footer string
}

// println prints lines above the footer and redraws the footer.
func (s *screen) println(lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(clearLine)
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	b.WriteString(clearLine)
	b.WriteString(s.footer)
	s.out.Write(b.Bytes())
}

// setFooter replaces the footer line in place (CR + erase line).
func (s *screen) setFooter(f string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.footer = f
	io.WriteString(s.out, clearLine+f)
}

// footerText is the current footer line.
func (s *screen) footerText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.footer
}

// raw writes bytes as they are (mode switches).
func (s *screen) raw(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.out, p)
}

// logf prints a diagnostic (hook failures) the way the TUI shows them:
// as a line of output, written to stderr, which is the same terminal.
func (s *screen) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s%s\r\n%s", clearLine, strings.ReplaceAll(msg, "\n", "\r\n"), clearLine+s.footer)
}

// promptFooter renders the input line for a draft. Like Claude, a
// multi-line or long paste is shown as a placeholder, not inline.
func promptFooter(draft []byte) string {
	if n := bytes.Count(draft, []byte{'\n'}); n > 0 || len(draft) > 200 {
		return fmt.Sprintf("%s[Pasted text +%d lines]", promptMark, n)
	}
	return promptMark + string(draft)
}

// replyLines formats an assistant message: "● " on the first line, the
// rest indented.
func replyLines(text string) []string {
	lines := strings.Split(text, "\n")
	out := make([]string, len(lines))
	for i, l := range lines {
		if i == 0 {
			out[i] = replyMark + l
		} else {
			out[i] = "  " + l
		}
	}
	return out
}

// firstLine is the first line of s, for one-line summaries.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// makeRaw puts the terminal on fd in raw mode (like cfmakeraw) and returns
// a function restoring the previous settings. It does nothing when fd is
// not a terminal.
func makeRaw(fd int) (restore func()) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	t := *old
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}
