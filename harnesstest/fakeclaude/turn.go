package fakeclaude

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// script is what a prompt's [[directives]] ask of the turn. The steps run
// in this order: tool, flood, raw, bigline, slow, crash/hang, then the reply (echo or
// long or reply replace the text; fail and noreply change how the turn ends;
// notranscript and lateend change what the transcript holds when Stop fires).
type script struct {
	tool     string // [[tool CMD]]: one Bash tool call running CMD
	hasTool  bool
	flood    int           // [[flood N]]: N numbered 80-column output lines
	raw      []byte        // [[raw HEX]]: these bytes as they are, then CR LF
	bigline  int           // [[bigline N]]: one line of N bytes, no line break until its end
	slow     time.Duration // [[slow N]]: N ms of spinner, interruptible
	crash    bool          // [[crash]]: exit(1) mid-turn, no Stop
	hang     bool          // [[hang]]: ignore SIGTERM/SIGHUP/SIGINT, never finish
	deaf     bool          // [[deaf]]: ignore SIGTERM/SIGHUP/SIGINT from now on, finish the turn
	echo     bool          // [[echo]]: the reply is the whole prompt, byte-exact
	long     int           // [[long N]]: an N-line reply
	reply    string        // [[reply TEXT]]: the reply is TEXT
	hasReply bool          // a [[reply]] with text was given
	fail     bool          // [[fail]]: StopFailure instead of Stop
	// [[cut]] with [[fail]]: the reply's message first, stopped at the
	// token limit (stop_reason max_tokens), as Claude Code records a turn
	// whose every continuation was cut before its API error.
	cut     bool
	noreply bool // [[noreply]]: Stop without last_assistant_message
	// [[notranscript]]: the turn writes nothing to the transcript (as
	// when Claude Code keeps none, or records in a form dlgt does not read).
	notranscript bool
	// [[lateend N]]: the reply's transcript line is written N ms after
	// Stop fires, not before (Claude Code's queued transcript writes).
	lateEnd time.Duration
	// [[latetranscript N]]: the turn's prompt and reply lines are both
	// written N ms after Stop fires, so the transcript holds nothing of
	// the turn when the hook runs (GitHub Copilot CLI writes its session
	// log after its agentStop hook). For a turn without a tool call.
	lateAll time.Duration
}

// directiveRE matches [[name]] and [[name ARG]]; ARG ends at the first "]]".
var directiveRE = regexp.MustCompile(`\[\[([a-z]+)(?:[ \t]+(.*?))?\]\]`)

// parseScript reads the directives in prompt; the first of each kind wins
// and unknown ones are plain text.
func parseScript(prompt string) script {
	var s script
	seen := map[string]bool{}
	for _, m := range directiveRE.FindAllStringSubmatch(prompt, -1) {
		name, arg := m[1], strings.TrimSpace(m[2])
		if seen[name] {
			continue
		}
		seen[name] = true
		n, _ := strconv.Atoi(arg)
		switch name {
		case "tool":
			s.tool, s.hasTool = arg, arg != ""
		case "flood":
			s.flood = n
		case "raw":
			s.raw, _ = hex.DecodeString(strings.Join(strings.Fields(arg), ""))
		case "bigline":
			s.bigline = n
		case "slow":
			s.slow = time.Duration(n) * time.Millisecond
		case "long":
			s.long = n
		case "reply":
			s.reply, s.hasReply = arg, arg != ""
		case "crash":
			s.crash = true
		case "hang":
			s.hang = true
		case "deaf":
			s.deaf = true
		case "echo":
			s.echo = true
		case "fail":
			s.fail = true
		case "cut":
			s.cut = true
		case "noreply":
			s.noreply = true
		case "notranscript":
			s.notranscript = true
		case "lateend":
			s.lateEnd = time.Duration(n) * time.Millisecond
		case "latetranscript":
			s.lateAll = time.Duration(n) * time.Millisecond
		}
	}
	return s
}

// defaultReply is the reply of the mock model server dlgt's tests run the
// real CLI against (mockapi.DefaultText): "MOCK-REPLY: " and the first 40
// runes of the prompt, so a scenario expects the same text from either.
func defaultReply(prompt string) string {
	n := 0
	for i := range prompt {
		if n == 40 {
			prompt = prompt[:i]
			break
		}
		n++
	}
	return "MOCK-REPLY: " + prompt
}

// longReply is mockapi.Lines("MOCK-LONG", n).
func longReply(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "MOCK-LONG %d", i)
	}
	return b.String()
}

// runTurn is the turn goroutine: it plays the prompt's script, firing the
// hooks synchronously as Claude does. When ctx is cancelled (Esc, Ctrl-C)
// it stops at the next step and reports an interruption; no hook fires
// for an interruption.
func (f *fake) runTurn(ctx context.Context, prompt, promptID string) turnResult {
	base := f.common().with("prompt_id", promptID).with("permission_mode", f.opts.permMode)
	if d := f.cfg.submitDelay; d > 0 {
		// A CLI slow to take the prompt: its acknowledgement comes late.
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	sc := parseScript(prompt)
	f.tr.mute(sc.notranscript)
	<-f.hooks.fire("UserPromptSubmit", "", base.with("hook_event_name", "UserPromptSubmit").with("prompt", prompt))
	if sc.lateAll == 0 {
		f.record(f.tr.user(prompt, promptID))
	}

	interrupted := func() turnResult {
		// What the real CLI appends to the transcript on Esc.
		f.record(f.tr.user([]obj{{{"type", "text"}, {"text", "[Request interrupted by user]"}}}, ""))
		return turnResult{interrupted: true}
	}
	withEffort := base.with("effort", obj{{"level", f.effort}})
	reply := defaultReply(prompt)

	if sc.hasTool {
		ran, declined, deniedBy := f.toolCall(ctx, sc.tool, withEffort, promptID)
		if ctx.Err() != nil {
			return interrupted()
		}
		if declined {
			// Like the real CLI: declining the dialog ends the turn
			// as an interrupt, with no hook.
			f.record(f.tr.user([]obj{{{"type", "text"}, {"text", "[Request interrupted by user for tool use]"}}}, ""))
			return turnResult{interrupted: true}
		}
		if !ran {
			reply = "MOCK-DECLINED: the Bash command was not run: " + sc.tool
			if deniedBy != "" {
				reply = "MOCK-DENIED: " + deniedBy
			}
		}
	}
	if sc.flood > 0 && !f.flood(ctx, sc.flood) {
		return interrupted()
	}
	if len(sc.raw) > 0 {
		f.scr.raw(clearLine + string(sc.raw) + "\r\n" + clearLine + f.scr.footerText())
	}
	if sc.bigline > 0 && !f.bigLine(ctx, sc.bigline) {
		return interrupted()
	}
	if sc.slow > 0 && !f.spin(ctx, sc.slow) {
		return interrupted()
	}
	if ctx.Err() != nil {
		return interrupted()
	}
	if sc.crash {
		f.scr.println("fakeclaude: simulated crash")
		f.restore()
		os.Exit(1)
	}
	if sc.deaf {
		// Finish the turn, but only SIGKILL ends the process from now on.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	}
	if sc.hang {
		// Stop reacting to anything, including the signals that normally
		// end the session, so callers must escalate to SIGKILL.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		f.scr.setFooter("✻ Working… (hung)")
		for {
			time.Sleep(time.Hour)
		}
	}
	switch {
	case sc.echo:
		reply = prompt
	case sc.long > 0:
		reply = longReply(sc.long)
	case sc.hasReply:
		reply = sc.reply
	}

	if sc.fail {
		msg := `API Error: 500 {"type":"error","error":{"type":"api_error","message":"MOCK-FAIL: simulated server error"}}`
		write := func() {
			if sc.cut {
				f.record(f.tr.assistantStop(reply, false, "max_tokens"))
			}
			f.record(f.tr.assistant(msg, true))
		}
		// [[lateend N]]: the turn's messages land N ms after StopFailure
		// fires, while the hook runs.
		written := make(chan struct{})
		if sc.lateEnd > 0 {
			go func() {
				defer close(written)
				time.Sleep(sc.lateEnd)
				write()
			}()
		} else {
			write()
			close(written)
		}
		f.scr.println("  ⎿  " + msg)
		p := withEffort.with("hook_event_name", "StopFailure").
			with("error", obj{{"type", "server_error"}, {"message", "MOCK-FAIL: simulated server error"}})
		<-f.hooks.fire("StopFailure", "server_error", p)
		<-written
		return turnResult{}
	}

	// The transcript is written before Stop fires, so that a Stop without
	// last_assistant_message ([[noreply]]) can be recovered from it;
	// [[lateend N]] writes it N ms after Stop fires instead, while the
	// hook runs; [[latetranscript N]] writes the prompt's line then too.
	written := make(chan struct{})
	switch {
	case sc.lateAll > 0:
		go func() {
			defer close(written)
			time.Sleep(sc.lateAll)
			f.record(f.tr.user(prompt, promptID))
			f.record(f.tr.assistant(reply, false))
		}()
	case sc.lateEnd > 0:
		go func() {
			defer close(written)
			time.Sleep(sc.lateEnd)
			f.record(f.tr.assistant(reply, false))
		}()
	default:
		f.record(f.tr.assistant(reply, false))
		close(written)
	}
	f.scr.println(replyLines(reply)...)
	p := withEffort.with("hook_event_name", "Stop").with("stop_hook_active", false)
	if !sc.noreply {
		p = p.with("last_assistant_message", reply)
	}
	p = p.with("background_tasks", []any{}).with("session_crons", []any{})
	<-f.hooks.fire("Stop", "", p)
	<-written
	return turnResult{}
}

// toolCall plays one Bash tool call: PreToolUse, then (in permission modes
// that ask) PermissionRequest and the dialog, then the command and
// PostToolUse. It reports whether the command ran, whether the user
// declined it at the dialog (which interrupts the turn), and the message
// the model received when a PermissionRequest hook denied it (the turn
// goes on).
//
// As in the real CLI (2.1.332), the PermissionRequest hooks run while the
// dialog is shown, and whichever answers first wins: a hook's allow or
// deny closes the dialog; a hook that ends with no decision leaves it for
// the person.
func (f *fake) toolCall(ctx context.Context, command string, base obj, promptID string) (ran, declined bool, deniedBy string) {
	id := "toolu_" + randHex(10)
	input := obj{{"command", command}, {"description", "Run the scripted command"}}
	f.record(f.tr.toolUse(id, input))
	tool := func(event string) obj {
		return base.with("hook_event_name", event).with("tool_name", "Bash").with("tool_input", input)
	}
	f.scr.println(replyMark + "Bash(" + firstLine(command) + ")")
	<-f.hooks.fire("PreToolUse", "Bash", tool("PreToolUse").with("tool_use_id", id))

	switch f.opts.permMode {
	case "auto", "acceptEdits", "bypassPermissions":
		// runs without asking
	case "dontAsk":
		// Denied without asking; the model hears it and replies.
		f.record(f.tr.toolResult(id, "Permission to use Bash has been denied.", true, promptID))
		return false, false, ""
	default: // "default", "plan": ask
		suggestion := obj{
			{"type", "addRules"},
			{"rules", []obj{{{"toolName", "Bash"}, {"ruleContent", command}}}},
			{"behavior", "allow"},
			{"destination", "localSettings"},
		}
		decided := f.hooks.decide(ctx, "PermissionRequest", "Bash", tool("PermissionRequest").with("permission_suggestions", []obj{suggestion}))
		reply := make(chan askAnswer, 1)
		select {
		case f.asks <- askReq{command: command, reply: reply}:
		case <-ctx.Done():
			return false, false, ""
		}
	wait:
		for {
			select {
			case a := <-reply:
				switch {
				case a.ok:
					break wait
				case a.hook:
					msg := a.message
					if msg == "" {
						msg = "Permission denied by hook"
					}
					f.record(f.tr.toolResult(id, msg, true, promptID))
					return false, false, msg
				default:
					return false, true, ""
				}
			case d := <-decided:
				decided = nil
				if d == nil {
					continue // no decision: the dialog stays for the person
				}
				select {
				case f.decided <- hookAnswer{reply: reply, ans: askAnswer{ok: d.allow, hook: true, message: d.message}}:
				case <-ctx.Done():
					return false, false, ""
				}
			case <-ctx.Done():
				return false, false, ""
			}
		}
	}

	start := time.Now()
	steering.Store(true)
	stdout, stderr, code := runShell(ctx, command, f.cwd)
	steering.Store(false)
	var steers []string
	for drained := false; !drained; {
		select {
		case s := <-steerIn:
			steers = append(steers, s)
		default:
			drained = true
		}
	}
	if ctx.Err() != nil {
		return false, false, ""
	}
	out := strings.TrimSpace(stdout + stderr)
	if out == "" {
		out = "(No content)"
	}
	f.scr.println("  ⎿  " + firstLine(out))
	if code != 0 {
		// As 2.1.332: a command that exits non-zero is the tool's
		// error, reported by PostToolUseFailure (no PostToolUse).
		msg := strings.TrimRight(fmt.Sprintf("Exit code %d\n%s", code, strings.TrimSpace(stderr+"\n"+stdout)), "\n")
		f.record(f.tr.toolResult(id, msg, true, promptID, steers...))
		<-f.hooks.fire("PostToolUseFailure", "Bash", tool("PostToolUseFailure").
			with("tool_use_id", id).with("error", msg).with("is_interrupt", false).
			with("duration_ms", time.Since(start).Milliseconds()))
		return true, false, ""
	}
	f.record(f.tr.toolResult(id, out, false, promptID, steers...))
	resp := obj{
		{"stdout", stdout}, {"stderr", stderr}, {"interrupted", false},
		{"isImage", false}, {"noOutputExpected", false},
	}
	<-f.hooks.fire("PostToolUse", "Bash", tool("PostToolUse").
		with("tool_response", resp).with("tool_use_id", id).
		with("duration_ms", time.Since(start).Milliseconds()))
	return true, false, ""
}

// runShell runs command with sh in dir; cancelling ctx kills its whole
// process group. Output is trimmed of trailing newlines, as the Bash tool
// reports it; code is the exit status (-1 when it did not exit).
func runShell(ctx context.Context, command, dir string) (stdout, stderr string, code int) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &o, n: 1 << 20}
	cmd.Stderr = &limitedWriter{w: &e, n: 1 << 20}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil {
		code = -1
		if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
			code = cmd.ProcessState.ExitCode()
		} else if e.Len() == 0 {
			e.WriteString(err.Error())
		}
	}
	return strings.TrimRight(o.String(), "\n"), strings.TrimRight(e.String(), "\n"), code
}

// flood prints n numbered 80-character lines, in batches so an interrupt
// is noticed. It reports false when interrupted.
func (f *fake) flood(ctx context.Context, n int) bool {
	const batch = 200
	pad := strings.Repeat(".", 80)
	for i := 1; i <= n; i += batch {
		if ctx.Err() != nil {
			return false
		}
		var lines []string
		for j := i; j < i+batch && j <= n; j++ {
			l := fmt.Sprintf("FLOOD %06d ", j)
			lines = append(lines, l+pad[:80-len(l)])
		}
		f.scr.println(lines...)
	}
	return ctx.Err() == nil
}

// bigLineText is the repeating text of a [[bigline N]] line.
const bigLineText = "abcdefghijklmnopqrstuvwxyz0123456789"

// bigLine prints one line of n bytes (bigLineText repeated) in 64 KiB
// writes, then CR LF. It reports false when interrupted.
func (f *fake) bigLine(ctx context.Context, n int) bool {
	chunk := strings.Repeat(bigLineText, 64<<10/len(bigLineText))
	f.scr.raw(clearLine)
	for off := 0; off < n; {
		if ctx.Err() != nil {
			return false
		}
		// Keep the pattern aligned to the absolute offset.
		start := off % len(bigLineText)
		m := min(n-off, len(chunk)-start)
		f.scr.raw(chunk[start : start+m])
		off += m
	}
	f.scr.raw("\r\n" + clearLine + f.scr.footerText())
	return ctx.Err() == nil
}

// spin shows a spinner line, redrawn with CR every 100 ms, for d. It
// reports false when interrupted.
func (f *fake) spin(ctx context.Context, d time.Duration) bool {
	frames := []rune("·✢✳✶✻✽")
	start := time.Now()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		f.scr.setFooter(fmt.Sprintf("%c Working… (%ds · esc to interrupt)", frames[i%len(frames)], int(time.Since(start).Seconds())))
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return true
		case <-tick.C:
		}
	}
}

// record reports a transcript write failure without failing the turn.
func (f *fake) record(err error) {
	if err != nil {
		f.scr.logf("fakeclaude: transcript: %v", err)
	}
}
