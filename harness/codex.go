package harness

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/rpc"
)

// CodexTestedVersion is the codex-cli release dlgt's end-to-end tests pin.
const CodexTestedVersion = "0.171.0"

// Codex is the OpenAI Codex CLI adapter. The TUI runs under the PTY and
// lifecycle comes from Codex hooks passed as per-launch -c overrides (the
// session-flags config layer), plus the thread's rollout file for the one
// outcome no hook reports (a failed turn). The user's $CODEX_HOME files
// are never edited: hooks, hook trust, folder trust and the update check
// are all command-line overrides for this child only.
type Codex struct{}

// codexHookEvents are the hook events dlgt subscribes to. Codex has no
// Notification event; "Interrupt" fires when Codex takes an interrupt
// (Esc), before it has aborted the turn: the rollout's turn_aborted line
// is what proves a cancel (see ParseTranscriptLine).
var codexHookEvents = []string{
	"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
	"PostToolUse", "Stop", "Interrupt", "SessionEnd",
}

// codexManaged are config keys (or key prefixes) dlgt sets itself;
// harness_options may not.
var codexManaged = []string{
	"hooks", "notify", "projects", "check_for_update_on_startup", "model",
	"model_reasoning_effort", "approval_policy",
}

var codexOptionKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}(\.[a-z0-9_-]{1,64}){0,7}$`)
})

// Codex's name, and the variable and executable Binary looks for.
const (
	codexName    = "codex"
	codexBinEnv  = "DLGT_CODEX_BIN"
	codexBinName = "codex"
)

// codexDescriptor is Codex's entry in the registry (registry.go).
func codexDescriptor() Descriptor {
	return Descriptor{
		Name: codexName, DisplayName: "Codex", Harness: Codex{},
		BinEnv: codexBinEnv, BinName: codexBinName,
		Install:     "npm install -g @openai/codex@" + CodexTestedVersion,
		Config:      ConfigDir{Env: "CODEX_HOME", Home: ".codex"},
		SkillsDir:   "skills",
		MCP:         MCPCodexTOML,
		ProviderEnv: []string{"OPENAI_API_KEY"},
		LegacyFlag:  true,
	}
}

func (Codex) Name() string { return codexName }

func (Codex) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{
		Name:            codexName,
		TestedVersion:   CodexTestedVersion,
		LifecycleSource: "hooks",
		Capabilities: rpc.HarnessCapabilities{
			Resume: true, Cancel: true, Steering: true, Queue: true, HarnessOptions: true,
			AutoApprove: true, Blocking: true,
			EffortLevels: []string{"low", "medium", "high", "xhigh", "max", "ultra"},
		},
		ScreenMode: rpc.ScreenInline,
	}
}

// codexScreenKey is Codex's config key for the alternate screen
// ("auto", "always" or "never"); a harness option setting it is the
// user's explicit choice and replaces dlgt's --no-alt-screen.
const codexScreenKey = "tui.alternate_screen"

// codexScreenChosen reports whether the options set codexScreenKey.
func codexScreenChosen(opts []string) bool {
	for _, o := range opts {
		if key, _, _ := strings.Cut(o, "="); key == codexScreenKey {
			return true
		}
	}
	return false
}

// Binary is DLGT_CODEX_BIN from the client environment, else codex on the
// client's PATH.
func (Codex) Binary(env map[string]string) (string, error) {
	return findBinary(env, codexBinEnv, codexBinName)
}

// Models lists the model catalog built into codex-cli 0.171.0 (as printed
// by `codex debug models`); "default" leaves the choice to the user's
// Codex configuration.
func (Codex) Models(includeHidden bool) rpc.ModelListResult {
	models := []rpc.Model{
		{ID: "default", DisplayName: "Default (the model in the user's Codex config)", Default: true},
		{ID: "gpt-6.2-sol", DisplayName: "GPT-6.2-Sol"},
		{ID: "gpt-6.2-astra", DisplayName: "GPT-6.2-Astra"},
		{ID: "gpt-6-astra", DisplayName: "GPT-6-Astra"},
		{ID: "gpt-6.1-sol", DisplayName: "GPT-6.1-Sol"},
		{ID: "gpt-6.1-terra", DisplayName: "GPT-6.1 Terra"},
		{ID: "gpt-6-sol", DisplayName: "GPT-6-Sol"},
		{ID: "gpt-6-luna", DisplayName: "GPT-6-Luna"},
		{ID: "gpt-5.6-sol", DisplayName: "GPT-5.6-Sol"},
		{ID: "gpt-5.6-terra", DisplayName: "GPT-5.6-Terra"},
		{ID: "gpt-5.6-luna", DisplayName: "GPT-5.6-Luna"},
		{ID: "gpt-5.5", DisplayName: "GPT-5.5"},
		{ID: "gpt-daybreak-blue-latest", DisplayName: "Daybreak Blue", Hidden: true},
		{ID: "gpt-daybreak-red-latest", DisplayName: "Daybreak Red", Hidden: true},
		{ID: "codex-auto-review", DisplayName: "Codex Auto Review", Hidden: true},
	}
	out := rpc.ModelListResult{Harness: codexName, Source: "built-in catalog of codex-cli " + CodexTestedVersion, Models: []rpc.Model{}}
	for _, m := range models {
		if m.Hidden && !includeHidden {
			continue
		}
		out.Models = append(out.Models, m)
	}
	return out
}

// ValidateOptions checks KEY=VALUE entries. Each becomes a Codex config
// override `-c KEY=VALUE` (VALUE is parsed as TOML by Codex, else taken
// as a string); keys dlgt manages are refused.
func (Codex) ValidateOptions(opts []string) error {
	for i, o := range opts {
		key, _, ok := strings.Cut(o, "=")
		field := fmt.Sprintf("harness_options[%d]", i)
		if !ok {
			return rpc.InvalidField(field, "%q is not KEY=VALUE", o)
		}
		if !codexOptionKey().MatchString(key) {
			return rpc.InvalidField(field, "%q is not a Codex config key", key)
		}
		for _, m := range codexManaged {
			if key == m || strings.HasPrefix(key, m+".") {
				return rpc.InvalidField(field, "config key %s is managed by dlgt and cannot be passed", key)
			}
		}
	}
	return nil
}

// Prepare builds the launch. Codex assigns the thread id itself, so a new
// Session's ProviderID is learned from SessionStart; a resume runs
// `codex resume <id>`.
func (c Codex) Prepare(spec Spec) (*Launch, error) {
	bin, err := c.Binary(spec.Env)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "%v", err)
	}
	if spec.Resume && spec.ProviderID == "" {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "resuming a Codex thread needs its id")
	}
	argv := []string{bin}
	if spec.Resume {
		argv = append(argv, "resume")
	}
	argv = append(argv, codexArgs(spec)...)
	if spec.Resume || spec.Prompt != "" {
		argv = append(argv, "--")
	}
	if spec.Resume {
		argv = append(argv, spec.ProviderID)
	}
	if spec.Prompt != "" {
		if err := (Codex{}).LaunchPrompt(spec.Prompt); err != nil {
			return nil, rpc.InvalidField("prompt", "%v", err)
		}
		argv = append(argv, spec.Prompt)
	}
	l := &Launch{Argv: argv, Env: mergeEnv(spec.Env, nil)}
	if spec.Resume {
		// A resumed thread is known. Its SessionStart comes with the next
		// turn: with the launch prompt when there is one, else (restart)
		// the spawn is the ready point.
		l.ProviderID, l.ReadyAtSpawn = spec.ProviderID, spec.Prompt == ""
	}
	return l, nil
}

// SpareReady is the evidence that a Codex TUI started without a prompt
// has its thread, so that a prompt typed now runs at once. Codex 0.171.0
// turns bracketed paste on and draws its composer ~50 ms after it starts,
// but starts its thread (app-server initialize, thread/start) only
// ~0.5 s later, then snapshots the login shell (~0.15 s) before a turn
// can run: a prompt typed before that waits in the composer, so a spare
// claimed at paste mode took as long as a cold launch (Enter to
// SessionStart 0.6-1.1 s, against ~0.1-0.15 s once the thread is there).
// The footer shows "← for agents" (and the status line) from the moment
// the thread started.
func (Codex) SpareReady() Await {
	return Await{PasteMode: true, Shown: []string{codexThreadStarted}, Timeout: codexSpareReadyTimeout}
}

// codexThreadStarted is the footer hint Codex 0.171.0 adds once its
// thread started ("← for agents · ? for shortcuts"; before, only "? for
// shortcuts").
const codexThreadStarted = "← for agents"

// codexSpareReadyTimeout bounds the wait for codexThreadStarted (a user
// configuration that hides the hint): the thread starts 0.5-1.5 s after
// the process here.
const codexSpareReadyTimeout = 5 * time.Second

// maxCodexLaunchPrompt is Linux's limit on one argv string
// (MAX_ARG_STRLEN, 32 pages, including the NUL).
const maxCodexLaunchPrompt = 32*4096 - 1

// LaunchPrompt accepts a new thread's first prompt for Codex's command
// line. Codex runs no hook (not even SessionStart) before the first turn,
// so the TUI must submit the first prompt itself for the launch to be
// proven; its [PROMPT] argument does that.
func (Codex) LaunchPrompt(prompt string) error {
	if len(prompt) > maxCodexLaunchPrompt {
		return fmt.Errorf("a new Codex Session's first prompt goes on its command line and is limited to %d bytes (this one has %d); start with a shorter prompt and send the rest", maxCodexLaunchPrompt, len(prompt))
	}
	return nil
}

// codexArgs are the per-launch flags and config overrides.
func codexArgs(spec Spec) []string {
	args := []string{
		// No shared background server: nothing detached outlives the
		// Session's process group.
		"--no-daemon",
		"-c", "check_for_update_on_startup=false",
		// The folder's trust as a table value. Codex 0.171.0 does not
		// apply the dotted form projects."<cwd>".trust_level=… to a -c
		// override (its folder-trust dialog, shown for a git repository,
		// then held the launch until the startup timeout); the table
		// form, parsed as TOML, names the folder as given.
		"-c", "projects={" + tomlString(spec.Cwd) + "={trust_level=\"trusted\"}}",
		// Hooks from -c overrides (the "session flags" layer) are skipped
		// unless trusted; their trust hash changes with every launch id.
		"--dangerously-bypass-hook-trust",
	}
	// Inline (main screen) unless the options choose: Codex's own flag,
	// "runs the TUI in inline mode, preserving terminal scrollback".
	if !codexScreenChosen(spec.Options) {
		args = append(args, "--no-alt-screen")
	}
	for _, ev := range codexHookEvents {
		args = append(args, "-c", codexHookOverride(spec.HookArgv, ev))
	}
	if spec.Model != "" && spec.Model != "default" {
		args = append(args, "-c", "model="+tomlString(spec.Model))
	}
	if spec.Effort != "" {
		args = append(args, "-c", "model_reasoning_effort="+tomlString(spec.Effort))
	}
	// auto_approve: Codex never asks (commands stay in its sandbox and a
	// refused escalation goes back to the model); otherwise the model may
	// ask and the Session blocks on the approval dialog.
	if spec.AutoApprove {
		args = append(args, "-c", `approval_policy="never"`)
	} else {
		args = append(args, "-c", `approval_policy="on-request"`)
	}
	for _, o := range spec.Options {
		args = append(args, "-c", o)
	}
	return args
}

// codexHookOverride is one `hooks.<Event>=[...]` override running the
// dlgt hook forwarder with the event name.
func codexHookOverride(hookArgv []string, ev string) string {
	cmd := hookCommand(hookArgv, ev)
	matcher := ""
	if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PermissionRequest" {
		matcher = `matcher="*",`
	}
	timeout := 30
	if ev == "PermissionRequest" {
		timeout = CodexPermissionTimeout
	}
	return "hooks." + ev + "=[{" + matcher + "hooks=[{type=\"command\",command=" + tomlString(cmd) + ",timeout=" + strconv.Itoa(timeout) + "}]}]"
}

// CodexPermissionTimeout is the timeout (seconds) of the injected
// PermissionRequest hook, as long as Claude Code's
// (ClaudePermissionTimeout): the forwarder waits for an answer given
// through session.respond for a little less (hookfwd.DecisionWait). Codex
// 0.171.0 draws its approval overlay only once that hook has returned
// with no decision (or timed out): see DialogAfterHook.
const CodexPermissionTimeout = 600

// tomlString renders s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codexPastePlaceholder starts the label Codex shows in its composer for
// a long paste ("[Pasted Content 102453 chars]").
const codexPastePlaceholder = "[Pasted Content "

// Submit clears the draft (Ctrl-U) and pastes the prompt as one bracketed
// paste once the TUI reads bracketed paste, then sends Enter separately
// once the composer shows the paste (see pasteSubmit).
func (Codex) Submit(prompt string) []Keystroke {
	return pasteSubmit(prompt, codexPastePlaceholder)
}

// Interrupt is Esc, Codex's interrupt key; it also declines an approval
// dialog and aborts the turn in one press.
func (Codex) Interrupt() []Keystroke { return []Keystroke{{Data: []byte{0x1b}}} }

// DismissDialog is nothing: Esc on a Codex approval dialog already
// interrupts the turn, and a second Esc at an idle composer opens Codex's
// transcript backtrack view.
func (Codex) DismissDialog() []Keystroke { return nil }

// codexHook is the union of the Codex hook payload fields dlgt reads.
type codexHook struct {
	SessionID            string          `json:"session_id"`
	TurnID               string          `json:"turn_id"`
	HookEventName        string          `json:"hook_event_name"`
	TranscriptPath       string          `json:"transcript_path"`
	Source               string          `json:"source"`
	Prompt               *string         `json:"prompt"`
	LastAssistantMessage *string         `json:"last_assistant_message"`
	ToolName             string          `json:"tool_name"`
	ToolInput            json.RawMessage `json:"tool_input"`
	Reason               string          `json:"reason"`
}

// ParseHook maps a Codex hook payload to evidence. The hook session_id is
// the thread id.
func (Codex) ParseHook(event string, payload []byte) (Evidence, error) {
	var h codexHook
	if err := json.Unmarshal(payload, &h); err != nil {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object: %v", err)
	}
	if h.HookEventName != "" && h.HookEventName != event {
		return Evidence{}, fmt.Errorf("hook event %q carries payload for %q", event, h.HookEventName)
	}
	ev := Evidence{Event: event, ProviderID: h.SessionID, TurnID: h.TurnID, Transcript: h.TranscriptPath}
	switch event {
	case "SessionStart":
		ev.Kind, ev.Reason = KindReady, h.Source
	case "UserPromptSubmit":
		ev.Kind, ev.Prompt = KindPromptSubmitted, h.Prompt
	case "PermissionRequest":
		// Codex asks only for a command it takes a hook decision on
		// (CodexPermissionDecision), so every request is answerable.
		ev.Kind, ev.Reason, ev.Tool, ev.Command = KindBlocked, "permission", h.ToolName, toolCommand(h.ToolInput)
		ev.Input, ev.Answerable = ToolInputText(h.ToolInput), true
	case "PreToolUse":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolStarted, payload)
	case "PostToolUse":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolCompleted, payload)
	case "Stop":
		ev.Kind, ev.FinalText = KindStop, h.LastAssistantMessage
	case "Interrupt":
		// Not yet the turn's end: a prompt typed now still lands in the
		// running turn as a steer.
		ev.Kind = KindInterruptRequested
	case "SessionEnd":
		ev.Kind, ev.Reason = KindSessionEnd, h.Reason
	default:
		ev.Kind = KindIgnored
	}
	return ev, nil
}

// codexRollout is the part of a rollout line dlgt reads.
type codexRollout struct {
	Type    string `json:"type"`
	Payload struct {
		Type             string          `json:"type"`
		TurnID           string          `json:"turn_id"`
		Reason           string          `json:"reason"`
		LastAgentMessage *string         `json:"last_agent_message"`
		Error            json.RawMessage `json:"error"`
		Message          string          `json:"message"`
		Attempt          json.RawMessage `json:"attempt"`
	} `json:"payload"`
}

// ParseTranscriptLine maps one line of the thread's rollout file to
// evidence no hook carries: a turn that ended in a provider error
// (event_msg task_complete with an error; Codex runs no Stop hook for it),
// an aborted turn (event_msg turn_aborted, reason "interrupted" after
// Esc: Codex writes it once the turn is torn down, so a prompt sent after
// it starts a turn of its own) and a stream retry (event_msg
// stream_error), when Codex records one.
func (Codex) ParseTranscriptLine(line []byte) Evidence {
	var r codexRollout
	if json.Unmarshal(line, &r) != nil || r.Type != "event_msg" {
		return Evidence{}
	}
	switch r.Payload.Type {
	case "task_complete":
		if len(r.Payload.Error) == 0 || string(r.Payload.Error) == "null" {
			return Evidence{}
		}
		return Evidence{Kind: KindStopFailure, Event: "rollout:task_complete", TurnID: r.Payload.TurnID, Error: codexError(r.Payload.Error)}
	case "turn_aborted":
		return Evidence{Kind: KindInterrupted, Event: "rollout:turn_aborted", TurnID: r.Payload.TurnID, Reason: clipText(r.Payload.Reason, 64)}
	case "stream_error":
		n, _ := strconv.Atoi(strings.Trim(string(r.Payload.Attempt), `"`))
		return Evidence{Kind: KindRetrying, Event: "rollout:stream_error", Attempt: n, Error: clipText(r.Payload.Message, 1024)}
	}
	return Evidence{}
}

// codexError sanitizes a rollout error: {"message": "..."} where the
// message may itself be the provider's JSON error body.
func codexError(raw json.RawMessage) string {
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(obj.Message), &body) == nil && body.Error.Message != "" {
			return clipText(strings.TrimSpace(body.Error.Type+": "+body.Error.Message), 1024)
		}
		return clipText(obj.Message, 1024)
	}
	return sanitizeError(raw)
}

// maxCodexDenyMessage bounds the message a denial hands to the model.
const maxCodexDenyMessage = 4096

// CodexPermissionDecision is what a Codex PermissionRequest hook prints
// on stdout to answer the request itself (the shape of Codex 0.171.0's
// permission-request.command.output schema, which is Claude Code's):
// allow runs the command with no approval overlay; deny never runs it and
// the model receives `exec_command failed: CreateProcess { message:
// "Rejected(\"<message>\")" }` and goes on with the turn (an empty message
// becomes Codex's "PermissionRequest hook denied approval"). Measured in
// docs/approvals-harnesses.md. A message with allow, or one that is not
// valid UTF-8 or too long, is refused.
func CodexPermissionDecision(allow bool, message string) ([]byte, error) {
	type decision struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	}
	d := decision{Behavior: "deny", Message: message}
	switch {
	case allow && message != "":
		return nil, rpc.InvalidField("message", "a message goes with a denial only")
	case !utf8.ValidString(message):
		return nil, rpc.InvalidField("message", "is not valid UTF-8")
	case len(message) > maxCodexDenyMessage:
		return nil, rpc.InvalidField("message", "is %d bytes; at most %d", len(message), maxCodexDenyMessage)
	case allow:
		d.Behavior = "allow"
	}
	return json.Marshal(map[string]any{
		"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": d},
	})
}

// DecisionOutput is the PermissionRequest hook's stdout for a decision
// (CodexPermissionDecision): allow runs this one command; deny, with the
// message the model receives, does not run it and the turn goes on.
func (Codex) DecisionOutput(event, decision, message string) ([]byte, bool) {
	if event != "PermissionRequest" || (decision != "allow" && decision != "deny") {
		return nil, false
	}
	out, err := CodexPermissionDecision(decision == "allow", message)
	if err != nil {
		return nil, false
	}
	return out, true
}

// DialogAfterHook reports that Codex shows its approval overlay only once
// the PermissionRequest hook has returned (while it runs, the screen says
// "Running hook" and only Esc, which aborts the turn, does anything).
func (Codex) DialogAfterHook() bool { return true }

// CodexApprovalKeys answers Codex 0.171.0's command approval overlay
// ("Would you like to run the following command?") from the terminal,
// where no hook answered: allow is "y" (Yes, proceed: the command runs,
// then PostToolUse); otherwise Esc, the overlay's only refusal ("No, and
// tell Codex what to do differently"; "n" does the same): it aborts the
// whole turn (the rollout's turn_aborted, reason "interrupted"; no Stop
// hook, and the model gets no tool result). A denial the model reads
// and continues from exists only as a hook decision
// (CodexPermissionDecision).
func CodexApprovalKeys(allow bool) []Keystroke {
	if allow {
		return []Keystroke{{Data: []byte("y")}}
	}
	return []Keystroke{{Data: []byte{0x1b}}}
}
