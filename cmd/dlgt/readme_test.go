package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/pty"
)

// TestREADMEFirstExample runs the README's first example as written: its
// code block, in order, in bash under a PTY, against the real pinned
// Claude Code and the mock model server. The attach step is driven like a
// person would: Enter on the permission prompt, Ctrl-] once the turn is done.
// So the example cannot rot.
func TestREADMEFirstExample(t *testing.T) {
	root, block := readmeFirstExample(t, "node_modules/@anthropic-ai/claude-code-linux-x64/claude")
	runREADMEExample(t, root, block, "Do you want to proceed?")
}

// TestREADMECodexExample runs the README's Codex variant of the first
// example: the first block with its lines from `mockserver` to the end of
// the `session create` replaced by the Codex block, against the real pinned
// Codex. With --no-auto-approve alone Codex writes now.txt without asking
// and the example never reaches its prompt; the rule in the block makes it
// ask.
func TestREADMECodexExample(t *testing.T) {
	root, block := readmeFirstExample(t, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	block = readmeVariant(t, root, block, "To try Codex the same way", "codex")
	runREADMEExample(t, root, block, "Would you like to run the following command?")
}

// TestREADMEGeminiExample runs the README's Gemini CLI variant of the
// first example the same way, against the real pinned Gemini CLI and
// `mockserver -kind gemini`.
func TestREADMEGeminiExample(t *testing.T) {
	root, block := readmeFirstExample(t, "gemini/node_modules/.bin/gemini")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH (Gemini CLI is a Node script)")
	}
	block = readmeVariant(t, root, block, "Gemini CLI the same way", "gemini")
	runREADMEExample(t, root, block, "Allow once")
}

// readmeVariant is the first example's block with its lines from
// `mockserver` to the end of the `session create` replaced by the README's
// sh block that follows intro, which must launch harness.
func readmeVariant(t *testing.T, root, block, intro, harness string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), intro)
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	variant, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 || !strings.Contains(variant, "--harness "+harness) {
		t.Fatalf("README.md has no %s block after %q", harness, intro)
	}
	start := strings.Index(block, "\nmockserver ")
	end := strings.Index(block, "| jq -r .cursor)\n")
	if start < 0 || end < start {
		t.Fatalf("the first example has no mockserver … session create lines:\n%s", block)
	}
	return block[:start+1] + variant + block[end+len("| jq -r .cursor)\n"):]
}

// readmeFirstExample returns the repository root and the README's first
// example block, skipping the test when the pinned harness binary (its
// path under .cache/harnesses) or a tool the example uses is missing.
func readmeFirstExample(t *testing.T, harness string) (root, block string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".cache/harnesses", harness)); err != nil {
		t.Skipf("the pinned %s is not installed (.ci/install-harnesses)", filepath.Base(harness))
	}
	for _, tool := range []string{"bash", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## First example")
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 || !strings.Contains(block, "dlgt session attach demo") {
		t.Fatal("README.md has no first example with an attach step")
	}
	return root, block
}

// runREADMEExample runs block in bash under a PTY from root, answers the
// harness's permission question (dialog) with Enter at the attach, detaches
// with Ctrl-] once the turn is done, and checks what the README's comments
// promise.
func runREADMEExample(t *testing.T, root, block, dialog string) {
	// On any way out, stop what the example started (it stops them itself
	// when it runs to its end).
	script := "trap 'exit 1' TERM HUP\n" +
		"trap 'dlgt daemon stop >/dev/null 2>&1; kill %1 2>/dev/null' EXIT\n" +
		block + "\necho README-EXAMPLE-DONE\n"
	path := filepath.Join(t.TempDir(), "example.sh")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	goEnv := func(k string) string {
		out, _ := exec.Command("go", "env", k).Output()
		return strings.TrimSpace(string(out))
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm-256color", "LANG=C.UTF-8",
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOPATH=" + goEnv("GOPATH"),
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}
	p, err := pty.Start(pty.Options{Argv: []string{"bash", "--norc", "--noprofile", path}, Env: env, Dir: root, Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := p.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	// waitFor waits for what in the output with terminal escapes and
	// whitespace removed (a TUI positions words with cursor moves), after
	// position after of that squashed text, and returns where it ends.
	waitFor := func(what string, after int, limit time.Duration) int {
		t.Helper()
		needle := squash(what)
		find := func() int {
			s := squash(output())
			if len(s) > after {
				if i := strings.Index(s[after:], needle); i >= 0 {
					return after + i + len(needle)
				}
			}
			return -1
		}
		for deadline := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
			if i := find(); i >= 0 {
				return i
			}
			select {
			case <-p.Done():
				time.Sleep(200 * time.Millisecond)
				if i := find(); i >= 0 {
					return i
				}
				t.Fatalf("the example ended before %q:\n%s", what, output())
			default:
			}
			if time.Now().After(deadline) {
				p.Terminate(5 * time.Second)
				t.Fatalf("no %q within %v:\n%s", what, limit, output())
			}
		}
	}
	// Up to the attach: the turn stopped at Claude Code's permission prompt.
	at := waitFor("SESSION_BLOCKED", 0, 5*time.Minute)
	at = waitFor(dialog, at, 2*time.Minute)
	time.Sleep(300 * time.Millisecond)
	p.Write([]byte("\r")) // Enter picks "Yes" ("Yes, proceed")
	// The repainted screen shows the reply once the turn has finished.
	at = waitFor("Wrote the date to now.txt.", at, 2*time.Minute)
	time.Sleep(500 * time.Millisecond)
	p.Write([]byte{0x1d}) // Ctrl-] detaches
	at = waitFor(`"end":"detached"`, at, time.Minute)
	at = waitFor("README-EXAMPLE-DONE", at, 5*time.Minute)
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatal("bash did not exit after the example")
	}
	if st := p.Wait(); st.Code != 0 {
		t.Fatalf("the example exited %v:\n%s", st, output())
	}
	// What the README's comments promise, in order.
	s := output()
	for _, want := range []string{
		"blocked\r\n",                        // fetch ... | jq -r .reason
		`"code":"SESSION_BLOCKED"`,           // send while blocked
		`"end":"detached"`,                   // attach, after Ctrl-]
		"\r\nWrote the date to now.txt.\r\n", // session read ... final_text
		"session.blocked\r\n",                // events | jq -r .type
		"thanks, all done?",                  // the follow-up's final_text
		`{"ok":true,"stopped":true}`,         // daemon stop
	} {
		i := strings.Index(s, want)
		if i < 0 {
			t.Fatalf("the example's output lacks %q:\n%s", want, s)
		}
		s = s[i+len(want):]
	}
	_ = at
}

// readmeHeadline is the README's first command line that delegates: the
// build and `session create --wait` in one line.
func readmeHeadline(t *testing.T, root string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no sh block")
	}
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "go build") && strings.Contains(line, "session create") {
			return line
		}
	}
	t.Fatalf("README.md's first block has no `go build … session create` line:\n%s", block)
	return ""
}

// runHeadline runs the README's headline command line as written, in bash
// from the repository root, with vars added to a minimal environment, and
// stops the daemon it started.
func runHeadline(t *testing.T, root, line string, vars ...string) (int, string, string) {
	t.Helper()
	home, err := os.MkdirTemp("", "dlgt") // short: the socket path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	goEnv := func(k string) string {
		out, _ := exec.Command("go", "env", k).Output()
		return strings.TrimSpace(string(out))
	}
	// PATH without any claude on it: the pinned one comes only through
	// DLGT_CLAUDE_BIN when a case passes it.
	var path []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "claude")); err != nil {
			path = append(path, dir)
		}
	}
	env := append([]string{"PATH=" + strings.Join(path, ":"), "HOME=" + t.TempDir(), "DLGT_HOME=" + home, "LANG=C.UTF-8",
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOPATH=" + goEnv("GOPATH"),
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}, vars...)
	t.Cleanup(func() {
		stop := exec.Command(filepath.Join(root, "bin", "dlgt"), "daemon", "stop")
		stop.Env = env
		stop.Run()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--norc", "--noprofile", "-c", line)
	cmd.Env, cmd.Dir = env, root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bash: %v", err)
	}
	return code, stdout.String(), stderr.String()
}

// TestREADMEHeadline runs the README's headline command (build, create,
// wait for the answer) as written. Without a claude to launch it must end
// with the real error: LAUNCH_FAILED naming claude, exit 1, and nothing
// about a cursor (as when the create was piped through jq into a fetch).
// With the pinned Claude Code against the mock model server it prints the
// answer.
func TestREADMEHeadline(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	line := readmeHeadline(t, root)
	if strings.Contains(line, "jq") {
		t.Fatalf("the headline still needs jq: %s", line)
	}

	t.Run("no claude", func(t *testing.T) {
		code, stdout, stderr := runHeadline(t, root, line)
		// -o text: the failure is text on stderr, stdout stays empty.
		if code != cli.ExitError || stdout != "" || !strings.Contains(stderr, "dlgt: LAUNCH_FAILED: claude not found") ||
			strings.Contains(stdout+stderr, "CURSOR") {
			t.Fatalf("exit %d, want 1 with LAUNCH_FAILED \"claude not found\"\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	})

	t.Run("pinned claude on the mock", func(t *testing.T) {
		bin := pinnedCLI(t, "DLGT_CLAUDE_BIN", "@anthropic-ai", "claude-code-linux-x64", "claude")
		srv := mockapi.NewAnthropic(t, nil)
		home := t.TempDir()
		const key = "sk-ant-mock-headline-0123456789abcdef"
		state, _ := json.Marshal(map[string]any{
			"hasCompletedOnboarding": true, "hasSeenAutoDefaultNotice": true,
			"customApiKeyResponses": map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}},
		})
		if err := os.WriteFile(filepath.Join(home, ".claude.json"), state, 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runHeadline(t, root, line, append([]string{"DLGT_CLAUDE_BIN=" + bin, "HOME=" + home,
			"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=" + key}, mockapi.ClaudeOfflineEnv()...)...)
		if code != 0 || !strings.Contains(stdout, "MOCK-REPLY: Review the last commit") || !strings.Contains(stdout, "reason result") {
			t.Fatalf("exit %d, want 0 and the answer\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	})
}

// squash drops terminal escape sequences and all whitespace from s.
func squash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
		case c == 0x1b && i+1 < len(s) && s[i+1] == ']':
			for i < len(s) && s[i] != 0x07 && !(s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\') {
				i++
			}
		case c == 0x1b:
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
