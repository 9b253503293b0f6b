package harness

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Spec is what the daemon asks of a launch.
type Spec struct {
	// ProviderID is the provider's session or thread id: set when resuming,
	// or when the harness lets dlgt assign it (Claude's --session-id).
	ProviderID string
	Resume     bool
	Cwd        string
	Model      string
	Effort     string
	// Options are validated KEY=VALUE harness options.
	Options     []string
	AutoApprove bool
	// Env is the invoking client's environment; the daemon's own is never
	// used.
	Env map[string]string
	// HookArgv is the argv prefix injected hooks run to reach the daemon;
	// the harness appends the hook event name.
	HookArgv []string
	// HookHTTP, when set, is where a harness that can post hooks over
	// HTTP (Claude Code) sends them instead of running HookArgv; nil
	// means command hooks only.
	HookHTTP *HTTPHook
	// StateDir is a private directory for this Session's launch files.
	StateDir string
	// Prompt is the first prompt, for a LaunchPrompter launch, or a new
	// Session's launch by an ArgPrompter that took it, which submit it
	// themselves (on the command line); empty otherwise.
	Prompt string
}

// HTTPHook is the daemon's HTTP hook endpoint for one launch: a hook
// posts its JSON to URL + "/" + the event name, with the header
// "Authorization: Bearer " + Token. The harness is given Token in its
// environment as HookTokenEnv, never on its command line.
type HTTPHook struct {
	URL   string
	Token string
}

// HookTokenEnv is the environment variable carrying HTTPHook.Token.
const HookTokenEnv = "DLGT_HOOK_TOKEN"

// Launch is a prepared process launch.
type Launch struct {
	Argv []string
	Env  []string
	// ProviderID is known before the first hook when dlgt assigned it.
	ProviderID string
	// ReadyAtSpawn marks a resume launch whose harness reports nothing
	// until its first prompt (Codex runs SessionStart hooks with the first
	// turn): the daemon treats the spawned process as ready for the known
	// ProviderID, and the first prompt typed is still confirmed only by
	// the provider's UserPromptSubmit.
	ReadyAtSpawn bool
	// Note, when set, is something about this launch the daemon logs
	// (why its hooks are not what the Spec asked for, say).
	Note string
}

// LaunchPrompter is implemented by harnesses that report a new session
// only once a prompt is submitted (Codex): a new Session's first prompt is
// passed to Prepare in Spec.Prompt (so is a resume's prompt), and the
// harness submits it itself. LaunchPrompt returns why prompt cannot be
// passed that way, or nil.
type LaunchPrompter interface {
	LaunchPrompt(prompt string) error
}

// ArgPrompter is implemented by harnesses whose TUI takes a new
// session's first prompt on its command line and submits it as if typed,
// reporting the session at start as a launch without one does (Claude
// Code's positional prompt, Gemini CLI's --prompt-interactive). A new
// Session's first prompt that ArgPrompt accepts is passed to Prepare in
// Spec.Prompt instead of being typed once the harness is ready; one it
// refuses (too long for one command-line string) is typed as before.
type ArgPrompter interface {
	ArgPrompt(prompt string) bool
}

// MaxArgPrompt is the largest first prompt an ArgPrompter takes on its
// command line: a quarter of Linux's limit on one argv string
// (MAX_ARG_STRLEN, 128 KiB), so that the launch never fails with E2BIG
// whatever else its command line and environment hold. A larger prompt is
// pasted once the harness is ready.
const MaxArgPrompt = 32 << 10

// SpareReadier is implemented by a LaunchPrompter whose TUI takes a paste
// well before it can run a turn: a warm spare of it (started without a
// prompt) counts as ready once SpareReady's evidence holds after
// bracketed paste is on. Its Timeout bounds the wait; the spare is ready
// at the timeout all the same (a prompt typed early is still submitted,
// only later).
type SpareReadier interface {
	SpareReady() Await
}

// Keystroke is one write to the harness's PTY, made at once or, when
// Await is set, once the harness's output shows that evidence (or its
// fallback timeout passed).
type Keystroke struct {
	Data  []byte
	Await *Await
	// Retry, when set, writes Data again while the prompt being
	// submitted is not confirmed by the harness (a TUI that can drop the
	// key: Gemini's Enter right after a paste).
	Retry *Retry
}

// Retry repeats a keystroke: After each write, while the execution is
// still unconfirmed, at most Max more times.
type Retry struct {
	After time.Duration
	Max   int
}

// Harness is one coding agent CLI. Implementations are stateless; the
// daemon owns every Session's process and state.
type Harness interface {
	Name() string
	// Info describes the harness for harness.list (availability is filled
	// in by the daemon from Binary).
	Info() rpc.HarnessInfo
	// Binary resolves the executable from the client environment.
	Binary(env map[string]string) (string, error)
	Models(includeHidden bool) rpc.ModelListResult
	// ValidateOptions rejects malformed or dlgt-managed harness options.
	ValidateOptions(opts []string) error
	// Prepare builds the argv, environment and launch files.
	Prepare(spec Spec) (*Launch, error)
	// Submit is the input that replaces any draft with prompt and submits it.
	Submit(prompt string) []Keystroke
	// Interrupt is the input that interrupts the running turn.
	Interrupt() []Keystroke
	// DismissDialog is the input that declines a blocking dialog.
	DismissDialog() []Keystroke
	// ParseHook maps one hook callback to lifecycle evidence.
	ParseHook(event string, payload []byte) (Evidence, error)
}

// Kind classifies lifecycle evidence.
type Kind int

// Evidence kinds, from structured provider callbacks only.
const (
	KindIgnored         Kind = iota
	KindReady                // SessionStart
	KindPromptSubmitted      // UserPromptSubmit
	KindBlocked              // PermissionRequest, Notification(permission_prompt|elicitation_dialog)
	KindActivity             // PreToolUse/PostToolUse: the turn is running (ends a block)
	KindStop                 // Stop: the turn finished
	KindStopFailure          // StopFailure: the turn failed
	KindIdlePrompt           // Notification(idle_prompt): the TUI waits for input
	KindSessionEnd           // SessionEnd
	KindRetrying             // a retryable provider error
	KindInterrupted          // the turn was interrupted (Codex: rollout turn_aborted)
	// KindInterruptRequested: the harness took the interrupt but ends the
	// turn later, with evidence of its own (Codex's Interrupt hook).
	KindInterruptRequested
)

// TranscriptSource is implemented by harnesses whose transcript file
// carries lifecycle evidence that no hook reports (Codex records a failed
// turn only in its rollout file). Once a hook of a generation names a
// transcript, the daemon tails that file from its end at that moment until
// the generation exits, and maps each new complete line; KindIgnored lines
// are dropped. Evidence from it is bound to the provider id of that hook.
type TranscriptSource interface {
	ParseTranscriptLine(line []byte) Evidence
}

// Evidence is one normalized provider callback.
type Evidence struct {
	Kind       Kind
	Event      string // the hook event name as received
	ProviderID string // session/thread id the callback is for
	TurnID     string
	Prompt     *string
	FinalText  *string
	// TextSource is where FinalText was read (rpc.TextSourceTranscript
	// when the adapter read it from the transcript itself); empty: the
	// hook's payload.
	TextSource string
	Transcript string // provider transcript path, when given
	Reason     string
	Tool       string
	Command    string
	// Input is a permission request's tool input as bounded, sanitized
	// text (ToolInputText), and Answerable says the harness takes an
	// answer to it through its hook (see Decider).
	Input      string
	Answerable bool
	Error      string
	Attempt    int
	// ToolCall is the tool call a tool hook reports (KindActivity of
	// PreToolUse/PostToolUse/PostToolUseFailure, BeforeTool/AfterTool).
	ToolCall *ToolCall
}

// Decider is implemented by a harness whose blocking hook takes a
// decision: DecisionOutput is what the hook prints for decision ("allow"
// or "deny", with message for a deny), or false when event takes none.
type Decider interface {
	DecisionOutput(event, decision, message string) ([]byte, bool)
}

// KeyAnswerer is implemented by a harness whose approval dialog no hook
// can answer (Gemini CLI 0.61.0: a BeforeTool hook can deny but not
// allow, and runs before Gemini decides whether to ask), so a pending
// request is answered with the dialog's own keys, made only from the
// structured evidence that the dialog is up (KindBlocked, Answerable).
// AnswerKeys returns them for decision ("allow" or "deny"), each awaiting
// the dialog on the screen; a message the dialog cannot carry is refused
// with INVALID_ARGUMENT. DenyEndsTurn says a deny ends the whole turn
// (the model is told nothing and does not continue).
type KeyAnswerer interface {
	AnswerKeys(decision, message string) ([]Keystroke, error)
	DenyEndsTurn() bool
}

// DenyTakesMessage reports whether a deny of the named harness's pending
// request can carry a message to its model: not for a KeyAnswerer whose
// dialog takes none (Gemini CLI). True for a name not registered.
func DenyTakesMessage(name string) bool {
	d, err := Lookup(name)
	if err != nil {
		return true
	}
	_, keys := d.Harness.(KeyAnswerer)
	return !keys
}

// DialogAfterHook is implemented by a Decider whose harness draws its own
// approval dialog only after the hook that asked has returned (Codex),
// unlike one that shows it while the hook runs (Claude Code): while the
// forwarder waits for an answer, a person at the terminal has no dialog to
// answer, so the daemon hands such a request to the terminal (the
// forwarder returns with no decision) whenever a person holds it.
type DialogAfterHook interface {
	DialogAfterHook() bool
}

// maxToolInputText bounds ToolInputText.
const maxToolInputText = 2048

// ToolInputText renders a tool's input for a person or a leader: a
// command's text for a shell tool, else the compact JSON, with control
// characters other than newline and tab removed, at most 2 KiB.
func ToolInputText(raw json.RawMessage) string {
	var in struct {
		Command *string `json:"command"`
	}
	text := ""
	if json.Unmarshal(raw, &in) == nil && in.Command != nil {
		text = *in.Command
	} else if len(raw) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			text = buf.String()
		}
	}
	if len(text) > 4*maxToolInputText {
		text = text[:4*maxToolInputText]
	}
	text = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0) && r != utf8.RuneError) {
			return r
		}
		return -1
	}, text)
	return clipText(text, maxToolInputText)
}
