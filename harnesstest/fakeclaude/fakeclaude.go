// Package fakeclaude is a stand-in for the Claude Code TUI (version
// 2.1.332) for fast tests of dlgt. It accepts the flags dlgt's Claude
// adapter passes, draws a tiny TUI with the same markers as the real one,
// takes input the same way (bracketed paste, Enter, Esc, Ctrl-U, Ctrl-C),
// keeps a transcript under $HOME/.claude/projects, and fires the hooks
// given with --settings with payloads shaped like the real CLI's.
//
// There is no model: the reply is scripted from the prompt text with
// [[directives]] (see turn.go). Tests re-exec their own binary and call
// Main from TestMain.
package fakeclaude

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// state is what the main loop is doing; it decides what each key means.
type state int

const (
	starting state = iota // before SessionStart: input is left unread
	idle                  // at the prompt: keys edit the draft, Enter submits
	running               // a turn goroutine is working: Esc interrupts
	asking                // a permission dialog is up: 1/Enter yes, 2/Esc no
)

// escWait is how long a lone ESC must stay alone to be the Esc key rather
// than the start of an escape sequence split across reads.
const escWait = 50 * time.Millisecond

// doubleCtrlC is the window in which a second Ctrl-C exits.
const doubleCtrlC = 2 * time.Second

// askReq is the turn goroutine asking the user for permission to run a
// tool; the main loop answers on reply.
type askReq struct {
	command string
	reply   chan askAnswer
}

// askAnswer is how a permission dialog was answered: by the person's keys,
// or (hook) by a PermissionRequest hook's decision, with the deny message
// the model receives.
type askAnswer struct {
	ok      bool
	hook    bool
	message string
}

// hookAnswer is a PermissionRequest hook's decision for the dialog whose
// reply channel it names; the main loop applies it only if that dialog is
// still open (as the real CLI: whichever answers first wins).
type hookAnswer struct {
	reply chan askAnswer
	ans   askAnswer
}

// turnResult is a turn goroutine's final report.
type turnResult struct {
	interrupted bool
}

type fake struct {
	opts    options
	cfg     config
	cwd     string
	tpath   string // transcript path
	model   string
	effort  string
	tr      *transcript
	history []historyEntry
	hooks   *hookRunner
	scr     *screen
	restore func()
	asks    chan askReq
	decided chan hookAnswer
	done    chan turnResult

	// Owned by the main loop goroutine only.
	state        state
	draft        []byte
	dec          decoder
	cancelTurn   context.CancelFunc
	lastPromptID string
	ask          *askReq
	lastCtrlC    time.Time
	queued       []string // prompts entered while a turn ran
}

// steering is set while a tool call runs: a prompt entered then steers
// the turn (steerIn, read by the turn goroutine) instead of being queued,
// as in the real CLI. One fake runs per process.
var (
	steering atomic.Bool
	steerIn  = make(chan string, 16)
)

// Main runs the fake Claude Code with args (without argv[0]) on the
// process's stdin/stdout/stderr and returns the exit code.
func Main(args []string) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		// What the real CLI prints, for doctor and harness.list.
		fmt.Println(version + " (Claude Code)")
		return 0
	}
	opts, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := loadConfig()
	if cfg.exitScreen != "" {
		fmt.Println(cfg.exitScreen) // the terminal is not raw yet: \n is a new row
		return 1
	}
	settings, err := loadSettings(opts.settings)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f := &fake{
		opts:    opts,
		cfg:     cfg,
		cwd:     cwd,
		model:   opts.model,
		effort:  opts.effort,
		scr:     &screen{out: os.Stdout},
		asks:    make(chan askReq),
		decided: make(chan hookAnswer),
		done:    make(chan turnResult),
	}
	if f.model == "" {
		f.model = defaultModel
	}
	if f.effort == "" {
		f.effort = "medium" // reported as effort.level by the real CLI
	}
	if opts.sessionID == "" {
		opts.sessionID = newUUID()
		f.opts.sessionID = opts.sessionID
	}
	f.tpath = transcriptPath(home, cwd, opts.sessionID)
	f.tr = &transcript{path: f.tpath, sessionID: opts.sessionID, cwd: cwd, model: f.model}
	if opts.resume {
		f.history, err = f.tr.load()
		if err != nil {
			fmt.Fprintf(os.Stderr, "No conversation found with session ID: %s\n", opts.sessionID)
			return 1
		}
	} else if _, err := os.Stat(f.tpath); err == nil {
		fmt.Fprintf(os.Stderr, "Error: Session ID %s is already in use.\n", opts.sessionID)
		return 1
	}
	f.hooks = newHookRunner(settings.Hooks, loadHTTPPolicy(home, cwd, settings.policyFields), cwd, f.cfg.silentHooks, f.scr.logf)

	// Signals are handled before anything is drawn so that a SIGTERM during
	// startup still ends the session properly.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer signal.Stop(sigs)

	f.restore = makeRaw(int(os.Stdin.Fd()))
	f.scr.raw("\x1b[?2004h") // bracketed paste on
	f.drawHeader()
	return f.loop(readInput(), sigs)
}

// readInput reads stdin in its own goroutine: the main loop must stay free
// to handle signals and turn reports while no key arrives. The channel is
// closed on EOF or error (the terminal went away).
func readInput() <-chan []byte {
	ch := make(chan []byte)
	go func() {
		defer close(ch)
		buf := make([]byte, 64<<10)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				ch <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// loop is the main state machine. It alone owns the draft and the state;
// the turn goroutine talks to it through f.asks and f.done.
func (f *fake) loop(input <-chan []byte, sigs <-chan os.Signal) int {
	var (
		startTimer = time.After(f.cfg.startup)
		escTimer   <-chan time.Time // armed while an ESC waits for a follow-up byte
		idleTimer  <-chan time.Time // armed from a turn's end to the idle_prompt Notification
		permTimer  <-chan time.Time // armed from a dialog to the permission_prompt Notification
	)
	for {
		in := input
		if f.state == starting {
			in = nil // keys wait in the terminal until the prompt is up
		}
		select {
		case <-startTimer:
			f.startSession()
			f.state = idle
			f.scr.setFooter(promptFooter(f.draft))
			if f.opts.prompt != "" {
				f.submit(f.opts.prompt)
			}

		case chunk, ok := <-in:
			if !ok {
				return f.end("other", 129, f.lastPromptID)
			}
			for _, k := range f.dec.feed(chunk) {
				if code, exit := f.handleKey(k); exit {
					return code
				}
			}
			escTimer = nil
			if f.dec.pending() {
				escTimer = time.After(escWait)
			}

		case <-escTimer:
			escTimer = nil
			for _, k := range f.dec.flush() {
				if code, exit := f.handleKey(k); exit {
					return code
				}
			}

		case req := <-f.asks:
			f.state, f.ask = asking, &req
			f.scr.setFooter("")
			f.scr.println("Do you want to proceed?\r\n❯ 1. Yes\r\n  2. No")
			permTimer = time.After(f.cfg.permNotify)

		case h := <-f.decided:
			if f.state == asking && f.ask != nil && f.ask.reply == h.reply {
				f.ask.reply <- h.ans // buffered: never blocks
				f.ask = nil
				f.state = running
				f.scr.setFooter("✻ Working… (esc to interrupt)")
			}

		case r := <-f.done:
			f.state = idle
			f.cancelTurn()
			f.cancelTurn = nil
			queued := strings.Join(f.queued, "\n")
			f.queued = nil
			if r.interrupted {
				f.scr.println("  ⎿  Interrupted · What should Claude do instead?")
				// Like the real CLI, queued input goes back to the input box.
				if queued != "" {
					f.draft = append([]byte(queued), f.draft...)
				}
			}
			f.scr.setFooter(promptFooter(f.draft))
			idleTimer = time.After(f.cfg.idle)
			if queued != "" && !r.interrupted {
				if code, exit := f.enter(queued); exit {
					return code
				}
			}

		case <-idleTimer:
			idleTimer = nil
			if f.state == idle {
				f.notify("Claude is waiting for your input", "idle_prompt")
			}

		case <-permTimer:
			permTimer = nil
			if f.state == asking {
				f.notify("Claude needs your permission", "permission_prompt")
			}

		case sig := <-sigs:
			return f.end("other", 128+int(sig.(syscall.Signal)), f.lastPromptID)
		}
		if f.state != idle {
			idleTimer = nil
		}
		if f.state != asking {
			permTimer = nil
		}
	}
}

// handleKey applies one key in the current state. It returns exit=true
// with the process exit code when the key ends the session.
func (f *fake) handleKey(k key) (code int, exit bool) {
	if k.kind == keyCtrlC || (k.kind == keyCtrlD && len(f.draft) == 0) {
		// Claude exits on the second Ctrl-C (or Ctrl-D) in a row; the first
		// one interrupts, declines or clears.
		if time.Since(f.lastCtrlC) < doubleCtrlC {
			return f.end("prompt_input_exit", 0, f.lastPromptID), true
		}
		f.lastCtrlC = time.Now()
		switch f.state {
		case running:
			f.cancelTurn()
		case asking:
			f.answer(false)
		case idle:
			f.draft = nil
			f.scr.println("Press Ctrl-C again to exit")
			f.scr.setFooter(promptFooter(f.draft))
		}
		return 0, false
	}
	if f.state == asking {
		switch {
		case k.kind == keyEnter, k.kind == keyText && k.text[0] == '1':
			f.answer(true)
		case k.kind == keyEsc, k.kind == keyText && k.text[0] == '2':
			f.answer(false)
		}
		return 0, false
	}
	switch k.kind {
	case keyText, keyPaste:
		f.draft = append(f.draft, k.text...)
	case keyCtrlU:
		f.draft = nil
	case keyBackspace:
		if len(f.draft) > 0 {
			_, n := utf8.DecodeLastRune(f.draft)
			f.draft = f.draft[:len(f.draft)-n]
		}
	case keyEsc:
		if f.state == running {
			f.cancelTurn() // no hook: the real CLI fires none on interrupt
		}
		return 0, false
	case keyEnter:
		if len(bytes.TrimSpace(f.draft)) == 0 {
			return 0, false
		}
		prompt := string(f.draft)
		f.draft = nil
		if f.state == running && steering.Load() {
			// Like the real CLI (2.1.332), a prompt entered during a
			// tool call goes into the turn's next model request.
			select {
			case steerIn <- prompt:
				f.scr.println("❯ " + firstLine(prompt))
				return 0, false
			default: // full: queued instead
			}
		}
		if f.state == running {
			// Like the real CLI, input entered while a turn runs is queued
			// and submitted when the turn ends. This matters: a Stop hook
			// fires before the turn is over, so a prompt sent as soon as Stop
			// is seen can arrive while the fake still runs.
			f.queued = append(f.queued, prompt)
			f.scr.println("> " + firstLine(prompt) + " (queued)")
			return 0, false
		}
		return f.enter(prompt)
	default:
		return 0, false
	}
	if f.state == idle {
		f.scr.setFooter(promptFooter(f.draft))
	}
	return 0, false
}

// enter handles a prompt submitted at the idle prompt: /exit ends the
// session, anything else starts a turn.
func (f *fake) enter(prompt string) (code int, exit bool) {
	f.scr.setFooter(promptFooter(f.draft))
	if strings.TrimSpace(prompt) == "/exit" {
		f.scr.println("> /exit")
		// The real CLI gives the /exit command a prompt id of its own.
		return f.end("prompt_input_exit", 0, newUUID()), true
	}
	f.submit(prompt)
	return 0, false
}

// submit starts a turn for prompt.
func (f *fake) submit(prompt string) {
	promptID := newUUID()
	f.lastPromptID = promptID
	f.state = running
	line := "> " + firstLine(prompt)
	if strings.Contains(prompt, "\n") {
		line += " …"
	}
	f.scr.setFooter("✻ Thinking… (esc to interrupt)")
	f.scr.println(line)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancelTurn = cancel
	go func() { f.done <- f.runTurn(ctx, prompt, promptID) }()
}

// answer resolves the permission dialog.
func (f *fake) answer(ok bool) {
	f.ask.reply <- askAnswer{ok: ok} // buffered: never blocks
	f.ask = nil
	f.state = running
	if ok {
		f.scr.println("  ⎿  Approved")
	} else {
		f.scr.println("  ⎿  Declined")
	}
	f.scr.setFooter("✻ Working… (esc to interrupt)")
}

// end fires SessionEnd (bounded wait), restores the terminal and returns
// the exit code.
func (f *fake) end(reason string, code int, promptID string) int {
	if f.cancelTurn != nil {
		f.cancelTurn()
	}
	p := f.common()
	if promptID != "" {
		p = p.with("prompt_id", promptID)
	}
	p = p.with("hook_event_name", "SessionEnd").with("reason", reason)
	select {
	case <-f.hooks.fire("SessionEnd", reason, p):
	case <-time.After(f.cfg.sessionEndTO):
	}
	f.shutdown()
	return code
}

// shutdown leaves the terminal as it was found.
func (f *fake) shutdown() {
	f.scr.setFooter("")
	f.scr.raw("\x1b[?2004l\r\n")
	f.restore()
}

func (f *fake) drawHeader() {
	lines := []string{fmt.Sprintf("✻ Welcome to Claude Code (fake %s) · %s · %s", version, f.model, f.opts.sessionID), ""}
	for _, h := range f.history {
		if h.role == "user" {
			lines = append(lines, "> "+firstLine(h.text))
		} else {
			lines = append(lines, replyLines(h.text)...)
		}
	}
	f.scr.println(lines...)
}

// startSession fires SessionStart. It is not waited for: the hook runner
// keeps it ahead of every later event anyway.
func (f *fake) startSession() {
	p := f.common().with("hook_event_name", "SessionStart")
	source := "startup"
	if f.opts.resume {
		// Observed on --resume: no model, but these four extra fields.
		source = "resume"
		p = p.with("source", source)
		since, tokens := 0, 0
		for _, h := range f.history {
			tokens += len(h.text)/4 + 1
			if h.role == "assistant" && !h.at.IsZero() {
				since = int(time.Since(h.at).Seconds())
			}
		}
		p = p.with("seconds_since_last_response", since).
			with("context_tokens", tokens).
			with("prompt_cache_likely_expired", since > 300).
			with("estimated_cache_write_usd", float64(tokens)*3.75e-6)
	} else {
		p = p.with("source", source).with("model", f.model)
	}
	f.hooks.fire("SessionStart", source, p)
}

// notify fires a Notification without waiting for it.
func (f *fake) notify(message, typ string) {
	p := f.common()
	if f.lastPromptID != "" {
		p = p.with("prompt_id", f.lastPromptID)
	}
	p = p.with("hook_event_name", "Notification").with("message", message).with("notification_type", typ)
	f.hooks.fire("Notification", typ, p)
}

// common is the start of every payload.
func (f *fake) common() obj {
	return obj{{"session_id", f.opts.sessionID}, {"transcript_path", f.tpath}, {"cwd", f.cwd}}
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
