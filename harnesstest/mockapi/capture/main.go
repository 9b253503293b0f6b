// Command capture records the raw terminal output of a real coding-agent TUI
// (Claude Code or Codex) driven against a mockapi server, for the vt package's
// tests.
//
// It starts the TUI under a PTY of the requested size with a private,
// pre-seeded home, answers the terminal queries the TUI sends (cursor
// position, device attributes, colours, keyboard protocol), pastes two
// prompts with bracketed paste, waits for each reply, exits the TUI the way
// a user would, and writes every byte the TUI wrote to the PTY to -out.
//
// Regenerate the checked-in captures from the module root with:
//
//	.ci/install-harnesses
//	go run ./harnesstest/mockapi/capture -harness claude
//	go run ./harnesstest/mockapi/capture -harness codex
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/harnesstest/pinned"
)

// The conversation typed into each TUI. The first reply mixes wide (CJK)
// characters with ASCII; the second is long enough to scroll.
const (
	prompt1 = "Say hello in a few languages"
	reply1  = "Hello! 你好，世界！こんにちは、世界。안녕하세요.\n" +
		"Wide characters take two cells: 漢字 かな カナ 한글.\n" +
		"END-OF-REPLY-1"
	prompt2 = "Count to thirty, one number per line"
	apiKey  = "sk-ant-mock-key"
)

var reply2 = mockapi.Lines("Line", 30) + "\nEND-OF-REPLY-2"

func main() {
	log.SetFlags(0)
	log.SetPrefix("capture: ")
	harness := flag.String("harness", "", "claude or codex")
	bin := flag.String("bin", "", "native CLI binary (default: $DLGT_CLAUDE_BIN / $DLGT_CODEX_BIN, else .cache/harnesses)")
	out := flag.String("out", "", "output file (default: vt/testdata/captures/<harness>-<cols>x<rows>.bin)")
	cols := flag.Int("cols", 120, "terminal columns")
	rows := flag.Int("rows", 40, "terminal rows")
	verbose := flag.Bool("v", false, "log the interaction to stderr")
	flag.Parse()

	root, err := pinned.ModuleRoot()
	if err != nil {
		log.Fatal(err)
	}
	if *harness != "claude" && *harness != "codex" {
		log.Fatal("-harness must be claude or codex")
	}
	if *bin == "" {
		if *bin, err = pinned.Path(*harness); err != nil {
			log.Fatal(err)
		}
	}
	if *out == "" {
		*out = filepath.Join(root, "vt", "testdata", "captures", fmt.Sprintf("%s-%dx%d.bin", *harness, *cols, *rows))
	}

	c := &capture{harness: *harness, bin: *bin, cols: *cols, rows: *rows, verbose: *verbose}
	data, err := c.run()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %d bytes to %s", len(data), *out)
}

type capture struct {
	harness    string
	bin        string
	cols, rows int
	verbose    bool

	ptmx *os.File
	vt   vt10x.Terminal

	mu      sync.Mutex
	raw     bytes.Buffer // every byte the TUI wrote
	lastOut time.Time
}

func (c *capture) logf(format string, args ...any) {
	if c.verbose {
		log.Printf(format, args...)
	}
}

// run drives one session and returns the captured bytes.
func (c *capture) run() ([]byte, error) {
	if _, err := os.Stat(c.bin); err != nil {
		return nil, fmt.Errorf("%s binary: %w (run .ci/install-harnesses)", c.harness, err)
	}
	// A fixed, short scratch path keeps the paths drawn on screen stable
	// between regenerations.
	base := filepath.Join(os.TempDir(), "dlgt-capture-"+c.harness)
	if err := os.RemoveAll(base); err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	home, cwd := filepath.Join(base, "home"), filepath.Join(base, "project")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}

	script := mockapi.Script{
		mockapi.Prefix(prompt1, mockapi.Reply{Text: reply1}),
		mockapi.Prefix(prompt2, mockapi.Reply{Text: reply2}),
	}
	var (
		srv  *mockapi.Server
		args []string
		env  = []string{
			"HOME=" + home,
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"TERM=xterm-256color",
			"COLORTERM=truecolor",
			"LANG=C.UTF-8",
			"USER=user",
			"SHELL=/bin/bash",
		}
	)
	switch c.harness {
	case "claude":
		srv = mockapi.NewAnthropic(nil, script)
		if err := seedClaude(home, cwd); err != nil {
			return nil, err
		}
		env = append(env,
			"ANTHROPIC_BASE_URL="+srv.URL(),
			"ANTHROPIC_API_KEY="+apiKey,
		)
		env = append(env, mockapi.ClaudeOfflineEnv()...)
	case "codex":
		srv = mockapi.NewResponses(nil, script)
		codexHome := filepath.Join(home, ".codex")
		if err := seedCodex(codexHome, cwd, srv.URL()); err != nil {
			return nil, err
		}
		env = append(env, "CODEX_HOME="+codexHome, "MOCK_API_KEY=mock-key")
		args = []string{"--no-daemon"}
	}
	defer srv.Close()

	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = cwd, env
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(c.cols), Rows: uint16(c.rows)})
	if err != nil {
		return nil, err
	}
	defer ptmx.Close()
	c.ptmx = ptmx
	// vt10x tracks the screen so that cursor position reports are true and
	// so that we can wait for text to appear; it writes its CPR answers
	// straight back to the TUI.
	c.vt = vt10x.New(vt10x.WithSize(c.cols, c.rows), vt10x.WithWriter(replier{c}))

	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		c.read()
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	idle := "❯"
	if c.harness == "codex" {
		idle = "›"
	}
	if err := c.waitScreen(idle, 30*time.Second); err != nil {
		return nil, fmt.Errorf("waiting for the idle prompt: %w\n%s", err, c.vt.String())
	}
	c.settle(time.Second, 5*time.Second)

	for i, p := range []struct{ prompt, marker string }{{prompt1, "END-OF-REPLY-1"}, {prompt2, "END-OF-REPLY-2"}} {
		c.logf("prompt %d: %q", i+1, p.prompt)
		c.write("\x1b[200~" + p.prompt + "\x1b[201~")
		time.Sleep(300 * time.Millisecond)
		c.write("\r")
		if err := c.waitScreen(p.marker, 30*time.Second); err != nil {
			return nil, fmt.Errorf("waiting for reply %d: %w\n%s", i+1, err, c.vt.String())
		}
		c.settle(1500*time.Millisecond, 10*time.Second)
		c.logf("screen after reply %d:\n%s", i+1, c.vt.String())
	}

	switch c.harness {
	case "claude":
		c.write("/exit")
		time.Sleep(500 * time.Millisecond)
		c.write("\r")
	case "codex":
		c.write("\x03")
		time.Sleep(500 * time.Millisecond)
		c.write("\x03")
	}
	select {
	case err := <-exited:
		c.logf("exited: %v", err)
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("%s did not exit\n%s", c.harness, c.vt.String())
	}
	// The PTY reports EOF (EIO) once the last writer is gone.
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
	}

	for _, r := range srv.Requests() {
		c.logf("request %s kind=%s status=%d prompt=%q", r.Path, r.Kind, r.Status, r.Prompt)
	}
	if got := srv.Prompts(); len(got) != 2 || got[0] != prompt1 || got[1] != prompt2 {
		return nil, fmt.Errorf("mock saw prompts %q", got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.raw.Bytes()), nil
}

// read copies the TUI's output into raw and the emulator, answering queries.
func (c *capture) read() {
	buf := make([]byte, 32<<10)
	var tail []byte // unterminated escape sequence carried between reads
	for {
		n, err := c.ptmx.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			c.mu.Lock()
			c.raw.Write(chunk)
			c.lastOut = time.Now()
			c.mu.Unlock()
			tail = c.feed(tail, chunk)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.logf("read: %v", err)
			}
			return
		}
	}
}

// query is a terminal query vt10x does not answer, and our answer.
type query struct {
	re     *regexp.Regexp
	answer func(m [][]byte) string
}

var queries = []query{
	// Primary device attributes: a VT220 with ANSI colour.
	{regexp.MustCompile(`\x1b\[0?c`), func([][]byte) string { return "\x1b[?62;22c" }},
	// Secondary device attributes.
	{regexp.MustCompile(`\x1b\[>0?c`), func([][]byte) string { return "\x1b[>1;10;0c" }},
	// Kitty keyboard protocol flags: none.
	{regexp.MustCompile(`\x1b\[\?u`), func([][]byte) string { return "\x1b[?0u" }},
	// XTVERSION.
	{regexp.MustCompile(`\x1b\[>0?q`), func([][]byte) string { return "\x1bP>|dlgt-capture\x1b\\" }},
	// DECRQM for a private mode: "not recognized".
	{regexp.MustCompile(`\x1b\[\?(\d+)\$p`), func(m [][]byte) string { return "\x1b[?" + string(m[1]) + ";0$y" }},
	// Foreground, background and cursor colour: white on black.
	{regexp.MustCompile(`\x1b\](1[0-2]);\?(\x07|\x1b\\)`), func(m [][]byte) string {
		rgb := "rgb:ffff/ffff/ffff"
		if string(m[1]) == "11" {
			rgb = "rgb:0000/0000/0000"
		}
		return "\x1b]" + string(m[1]) + ";" + rgb + string(m[2])
	}},
	// Text area size in characters.
	{regexp.MustCompile(`\x1b\[18t`), nil},
}

// feed passes chunk to the emulator, answering each query right after the
// bytes that precede it so that answers keep the order of the questions.
// tail holds the unfinished escape sequence the previous chunk ended with; the
// new tail is returned.
func (c *capture) feed(tail, chunk []byte) []byte {
	scan := append(append([]byte(nil), tail...), chunk...)
	type hit struct {
		end    int
		answer string
	}
	var hits []hit
	for _, q := range queries {
		for _, loc := range q.re.FindAllSubmatchIndex(scan, -1) {
			if loc[1] <= len(tail) {
				continue // answered with the previous chunk
			}
			var answer string
			if q.answer == nil {
				answer = fmt.Sprintf("\x1b[8;%d;%dt", c.rows, c.cols)
			} else {
				groups := make([][]byte, len(loc)/2)
				for i := range groups {
					if loc[2*i] >= 0 {
						groups[i] = scan[loc[2*i]:loc[2*i+1]]
					}
				}
				answer = q.answer(groups)
			}
			hits = append(hits, hit{loc[1] - len(tail), answer})
		}
	}
	// Insertion sort by position: there are only ever a handful.
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].end < hits[j-1].end; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	pos := 0
	for _, h := range hits {
		_, _ = c.vt.Write(chunk[pos:h.end])
		pos = h.end
		c.logf("answer %q", h.answer)
		c.write(h.answer)
	}
	_, _ = c.vt.Write(chunk[pos:])

	// Keep an unfinished escape sequence (ESC in the last 32 bytes with no
	// final byte after it) for the next round.
	if i := bytes.LastIndexByte(scan, 0x1b); i >= 0 && len(scan)-i < 32 && !finished(scan[i:]) {
		return scan[i:]
	}
	return nil
}

// finished reports whether seq, starting with ESC, holds a complete CSI or
// OSC sequence (or anything else, which we do not care about).
func finished(seq []byte) bool {
	if len(seq) < 2 {
		return false
	}
	switch seq[1] {
	case '[':
		for _, b := range seq[2:] {
			if b >= 0x40 && b <= 0x7e {
				return true
			}
		}
		return false
	case ']':
		return bytes.IndexByte(seq, 0x07) >= 0 || bytes.Contains(seq, []byte("\x1b\\"))
	}
	return true
}

// replier forwards vt10x's cursor position and status reports to the TUI.
// Its colour answers (OSC 4/10/11) are dropped: the queries table answers
// those consistently.
type replier struct{ c *capture }

func (r replier) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte("\x1b[")) {
		return len(p), nil
	}
	r.c.logf("answer %q", p)
	r.c.write(string(p))
	return len(p), nil
}

func (c *capture) write(s string) {
	if _, err := c.ptmx.Write([]byte(s)); err != nil {
		c.logf("write: %v", err)
	}
}

// waitScreen polls the emulated screen until it shows text.
func (c *capture) waitScreen(text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(c.vt.String(), text) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%q not on screen after %v", text, timeout)
}

// settle waits until the TUI has written nothing for quiet, or max passed.
func (c *capture) settle(quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		last := c.lastOut
		c.mu.Unlock()
		if time.Since(last) >= quiet {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seedClaude writes the ~/.claude.json that takes Claude Code's TUI straight
// to its prompt: onboarding done, the mock API key approved, the working
// directory trusted, the one-off notices seen.
func seedClaude(home, cwd string) error {
	cfg := map[string]any{
		"hasCompletedOnboarding":        true,
		"hasSeenAutoDefaultNotice":      true,
		"bypassPermissionsModeAccepted": true,
		"customApiKeyResponses": map[string]any{
			"approved": []string{apiKey[len(apiKey)-min(20, len(apiKey)):]},
			"rejected": []string{},
		},
		"projects": map[string]any{
			cwd: map[string]any{"hasTrustDialogAccepted": true},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
}

// seedCodex writes a config.toml pointing Codex at the mock with the working
// directory trusted.
func seedCodex(codexHome, cwd, url string) error {
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		return err
	}
	cfg := mockapi.CodexConfig(url) + mockapi.CodexTrust(cwd)
	return os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600)
}
