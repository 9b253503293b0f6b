package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/rpc"
)

// GeminiTestedVersion is the Gemini CLI release dlgt's end-to-end tests pin.
const GeminiTestedVersion = "0.61.0"

// Gemini is the Google Gemini CLI adapter. The TUI runs under the PTY
// (inline, bracketed paste) and lifecycle comes from Gemini's command
// hooks plus its session transcript. Gemini CLI takes hooks only from
// settings files and has no per-launch settings flag, so each Session
// gets a Gemini home of its own (GEMINI_CLI_HOME, under the Session's
// launch directory) whose .gemini holds:
//
//   - settings.json: the user's own settings (their auth type, model,
//     tools, MCP servers, hooks), with dlgt's hooks added and session
//     retention turned off;
//   - a symbolic link to every other entry of the user's Gemini directory
//     (credentials, accounts, GEMINI.md, skills, extensions, commands,
//     policies, trusted folders), so the Session signs in and behaves as
//     the user's own gemini does;
//   - tmp, history and projects.json of its own: the Session's
//     conversation lives there, out of reach of any other gemini, whose
//     session cleanup (on by default) deletes every file of a resumed
//     session when it starts in the same project.
//
// Evidence (see ParseHook): SessionStart is ready, BeforeAgent is the
// prompt accepted, Notification(ToolPermission) is blocked, BeforeTool and
// AfterTool are activity, and AfterAgent ends the turn; its result (text
// and completed or interrupted) is read from the transcript, which Gemini
// has written before the hook runs, never from its prompt_response.
type Gemini struct{}

// geminiHookEvents are the hook events dlgt subscribes to. The per-model
// events (BeforeModel, AfterModel once per streamed chunk, PreCompress
// before every model call) are left out: every hook is awaited.
var geminiHookEvents = []string{
	"SessionStart", "BeforeAgent", "BeforeTool", "Notification", "AfterTool",
	"AfterAgent", "SessionEnd",
}

// geminiManaged are flags dlgt sets itself; harness_options may not.
var geminiManaged = map[string]bool{
	"session-id": true, "resume": true, "r": true, "prompt": true, "p": true,
	"prompt-interactive": true, "i": true, "model": true, "m": true,
	"yolo": true, "y": true, "output-format": true, "o": true,
	"list-sessions": true, "delete-session": true, "session-file": true,
	"acp": true, "experimental-acp": true, "worktree": true, "w": true,
	"skip-trust": true, "version": true, "v": true, "help": true, "h": true,
}

// Gemini CLI's name, and the variable and executable Binary looks for.
const (
	geminiName    = "gemini"
	geminiBinEnv  = "DLGT_GEMINI_BIN"
	geminiBinName = "gemini"
)

// geminiDescriptor is Gemini CLI's entry in the registry (registry.go).
func geminiDescriptor() Descriptor {
	return Descriptor{
		Name: geminiName, DisplayName: "Gemini CLI", Harness: Gemini{},
		BinEnv: geminiBinEnv, BinName: geminiBinName,
		Install: "npm install -g @google/gemini-cli@" + GeminiTestedVersion,
		// GEMINI_CLI_HOME stands for the home directory: the user's
		// Gemini directory is $GEMINI_CLI_HOME/.gemini, else ~/.gemini.
		Config:      ConfigDir{Env: "GEMINI_CLI_HOME", EnvSub: ".gemini", Home: ".gemini"},
		SkillsDir:   "skills",
		MCP:         MCPGeminiJSON,
		ProviderEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS"},
	}
}

func (Gemini) Name() string { return geminiName }

func (Gemini) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{
		Name:            geminiName,
		TestedVersion:   GeminiTestedVersion,
		LifecycleSource: "hooks",
		Capabilities: rpc.HarnessCapabilities{
			Resume: true, Cancel: true, Steering: false, Queue: true, HarnessOptions: true,
			AutoApprove: true, Blocking: true, EffortLevels: []string{},
		},
		ScreenMode: rpc.ScreenInline,
	}
}

// Binary is DLGT_GEMINI_BIN from the client environment, else gemini on
// the client's PATH. Gemini CLI is a Node script: the node on the
// client's PATH runs it.
func (Gemini) Binary(env map[string]string) (string, error) {
	return findBinary(env, geminiBinEnv, geminiBinName)
}

// geminiModels is model.list for Gemini CLI 0.61.0: its aliases and the
// model names built into that release (its model constants). "default"
// leaves the choice to the user's Gemini settings (model.name, else
// Gemini's own "auto", which routes every prompt through a classifier).
var geminiModels = []rpc.Model{
	{ID: "default", DisplayName: "Default (the model in the user's Gemini settings, else auto)", Default: true},
	{ID: "auto", DisplayName: "Auto (Gemini routes each prompt by complexity)"},
	{ID: "gemini-3.1-pro-preview", DisplayName: "Gemini 3.1 Pro (preview)", Aliases: []string{"pro"}},
	{ID: "gemini-3.8-flash", DisplayName: "Gemini 3.8 Flash", Aliases: []string{"flash"}},
	{ID: "gemini-3.5-flash-lite", DisplayName: "Gemini 3.5 Flash-Lite", Aliases: []string{"flash-lite"}},
	{ID: "gemini-3.5-flash", DisplayName: "Gemini 3.5 Flash"},
	{ID: "gemini-3-pro-preview", DisplayName: "Gemini 3 Pro (preview)"},
	{ID: "gemini-3-flash-preview", DisplayName: "Gemini 3 Flash (preview)"},
	{ID: "gemini-2.5-pro", DisplayName: "Gemini 2.5 Pro"},
	{ID: "gemini-2.5-flash", DisplayName: "Gemini 2.5 Flash"},
	{ID: "gemini-2.5-flash-lite", DisplayName: "Gemini 2.5 Flash-Lite"},
	{ID: "gemini-3.1-pro-preview-customtools", DisplayName: "Gemini 3.1 Pro (preview, custom tools)", Hidden: true},
	{ID: "gemini-3.1-flash-lite", DisplayName: "Gemini 3.1 Flash-Lite", Hidden: true},
}

// Models lists geminiModels; hidden entries only with includeHidden.
func (Gemini) Models(includeHidden bool) rpc.ModelListResult {
	out := rpc.ModelListResult{Harness: geminiName, Source: "built-in list for Gemini CLI " + GeminiTestedVersion, Models: []rpc.Model{}}
	for _, m := range geminiModels {
		if m.Hidden && !includeHidden {
			continue
		}
		m.Aliases = append([]string(nil), m.Aliases...)
		out.Models = append(out.Models, m)
	}
	return out
}

// ValidateOptions checks KEY=VALUE entries; each becomes --KEY=VALUE
// (approval-mode=default, say, or policy=FILE).
func (Gemini) ValidateOptions(opts []string) error { return validateFlagOptions(opts, geminiManaged) }

func hasApprovalMode(opts []string) bool {
	for _, o := range opts {
		if strings.HasPrefix(o, "approval-mode=") {
			return true
		}
	}
	return false
}

// Prepare builds the launch: dlgt assigns the session id (--session-id)
// or resumes it (--resume), and the Session's own Gemini home carries the
// user's settings with dlgt's hooks (see Gemini).
func (g Gemini) Prepare(spec Spec) (*Launch, error) {
	bin, err := g.Binary(spec.Env)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "%v", err)
	}
	if spec.Effort != "" {
		return nil, rpc.InvalidField("effort", "Gemini CLI has no effort setting")
	}
	if spec.StateDir == "" || !filepath.IsAbs(spec.StateDir) {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "a Gemini launch needs an absolute state directory")
	}
	home := filepath.Join(spec.StateDir, "gemini-home")
	getenv := func(k string) string { return spec.Env[k] }
	// A Gemini with no usable sign-in stops at a screen of its own
	// waiting for a person: say so now rather than after the startup
	// timeout.
	if why := GeminiSignInProblem(getenv, spec.Cwd); why != "" {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "%s", why)
	}
	userDir, uerr := geminiDescriptor().Config.Resolve(getenv)
	if uerr != nil {
		userDir = "" // no user settings to carry; the launch still works with the environment's auth
	}
	if err := writeGeminiHome(home, userDir, spec.HookArgv); err != nil {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "preparing the Gemini home for this Session: %v", err)
	}
	id := spec.ProviderID
	if id == "" {
		id = NewUUID()
	}
	argv := []string{bin}
	if spec.Resume {
		argv = append(argv, "--resume", id)
	} else {
		argv = append(argv, "--session-id", id)
	}
	// The cwd is trusted for this launch only (the folder-trust dialog
	// restarts the CLI, and its -p mode refuses an untrusted folder).
	argv = append(argv, "--skip-trust")
	if spec.Model != "" && spec.Model != "default" {
		argv = append(argv, "--model", spec.Model)
	}
	if spec.AutoApprove && !hasApprovalMode(spec.Options) {
		argv = append(argv, "--approval-mode=yolo")
	}
	for _, o := range spec.Options {
		argv = append(argv, "--"+o)
	}
	if spec.Prompt != "" && !spec.Resume {
		// One argv string with the value after "=": a prompt starting
		// with "-" is not read as an option.
		argv = append(argv, "--prompt-interactive="+spec.Prompt)
	}
	extra := map[string]string{
		"GEMINI_CLI_HOME": home,
		// One node process under the PTY (the launcher otherwise
		// respawns itself as a child to raise its heap limit).
		"GEMINI_CLI_NO_RELAUNCH": "true",
	}
	return &Launch{Argv: argv, Env: mergeEnv(spec.Env, extra), ProviderID: id}, nil
}

// geminiPrivate are the entries of a Session's Gemini directory that are
// its own, never links to the user's: settings.json (written by dlgt),
// and what holds or indexes conversations (see Gemini).
var geminiPrivate = map[string]bool{
	"settings.json": true, "tmp": true, "history": true, "projects.json": true,
	"state.json": true,
}

// maxGeminiSettings bounds the user's settings.json read.
const maxGeminiSettings = 4 << 20

// writeGeminiHome makes home/.gemini: settings.json from the user's (at
// userDir, "" for none) with dlgt's hooks and retention off, and links
// to the user's other entries. Links are refreshed on every launch (the
// user may have signed in since); private entries are kept.
func writeGeminiHome(home, userDir string, hookArgv []string) error {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	settings := map[string]any{}
	if userDir != "" {
		data, err := readBounded(filepath.Join(userDir, "settings.json"), maxGeminiSettings)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(stripJSONComments(data), &settings); err != nil || settings == nil {
				return fmt.Errorf("%s is not a JSON object: %v", filepath.Join(userDir, "settings.json"), err)
			}
		}
	}
	addGeminiHooks(settings, hookArgv)
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "settings.json"), out, 0o600); err != nil {
		return err
	}
	// Links: drop the old ones, then link what the user has now.
	return refreshLinks(dir, userDir, func(name string) bool { return geminiPrivate[name] })
}

// addGeminiHooks adds dlgt's command hook to each subscribed event of
// settings (keeping the user's own hooks) and turns session retention off.
func addGeminiHooks(settings map[string]any, hookArgv []string) {
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, ev := range geminiHookEvents {
		entry := map[string]any{
			"matcher": "*",
			"hooks": []any{map[string]any{
				"type": "command", "name": "dlgt-" + ev, "command": hookCommand(hookArgv, ev),
				"timeout": 30000, // ms
			}},
		}
		list, _ := hooks[ev].([]any)
		hooks[ev] = append(list, entry)
	}
	settings["hooks"] = hooks
	general, _ := settings["general"].(map[string]any)
	if general == nil {
		general = map[string]any{}
	}
	retention, _ := general["sessionRetention"].(map[string]any)
	if retention == nil {
		retention = map[string]any{}
	}
	retention["enabled"] = false
	general["sessionRetention"] = retention
	settings["general"] = general
}

// stripJSONComments removes // and /* */ comments outside strings (Gemini
// CLI reads its settings.json with comments allowed).
func stripJSONComments(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inStr:
			out = append(out, c)
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			i += 2
			for i+1 < len(data) && !(data[i] == '*' && data[i+1] == '/') {
				i++
			}
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}

func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}

// writeFileAtomic replaces path with data.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".dlgt-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// geminiPastePlaceholder starts the label Gemini CLI shows in its input
// box for a long paste ("[Pasted Text: 1207 lines]").
const geminiPastePlaceholder = "[Pasted Text: "

// Gemini CLI 0.61.0 takes an Enter that comes within 40 ms of a paste
// as a newline, not a submit: unless the terminal speaks the kitty
// keyboard protocol (dlgt's does not answer its query), a paste is
// "unsafe", and InputPrompt's submit inserts a newline while
// recentUnsafePasteTime is set (cleared by a 40 ms timer; bundle
// interactiveCli-*.js, isTerminalPasteTrusted). The echo shows after the
// paste was handled, so Enter waits geminiPasteGuard after it: measured
// with the timing probes, an Enter ~20 ms after the echo became a
// newline, one 60 or 100 ms after it submitted (every turn).
//
// Should one still be taken as a newline (a busy event loop runs the
// timer late), Enter is written again while the prompt is not confirmed
// (BeforeAgent) geminiEnterRetry after the last one, at most
// geminiEnterRetries times: an Enter in an empty input box does nothing,
// and one in a box holding the prompt and that newline submits it.
const (
	geminiPasteGuard   = 80 * time.Millisecond
	geminiEnterRetry   = 700 * time.Millisecond
	geminiEnterRetries = 4
)

// ArgPrompt: Gemini CLI's --prompt-interactive runs its prompt as the
// interactive session's first turn (its BeforeAgent hook as for a typed
// prompt) and stays in the TUI.
func (Gemini) ArgPrompt(prompt string) bool { return len(prompt) <= MaxArgPrompt }

// Submit clears the draft (Ctrl-U) and pastes the prompt as one bracketed
// paste once the TUI reads bracketed paste, then sends Enter separately
// once the input box shows the paste and geminiPasteGuard has passed, and
// again if BeforeAgent does not confirm it (see geminiEnterRetry).
//
// The first write also waits for the idle input box: a resumed Gemini
// runs its SessionStart hook (and turns bracketed paste on) well before
// it has drawn the conversation and its input box, and a paste written
// then is lost. A paste that never shows while the box is drawn empty
// again is written again (geminiRepastes).
func (Gemini) Submit(prompt string) []Keystroke {
	keys := pasteSubmit(prompt, geminiPastePlaceholder)
	keys[0].Await.Shown = []string{geminiInputBox}
	keys[0].Await.Timeout = geminiInputBoxTimeout
	enter := &keys[len(keys)-1]
	enter.Await.Lost = []string{geminiInputBox}
	enter.Await.Repaste = geminiRepastes
	enter.Await.Settle = geminiPasteGuard
	enter.Retry = &Retry{After: geminiEnterRetry, Max: geminiEnterRetries}
	return keys
}

// geminiRepastes bounds the pastes written again when one was dropped:
// a resumed Gemini CLI 0.61.0 can draw its input box, take the paste, and
// then clear the screen and redraw the conversation with the box empty
// (2 of 9 runs of the Gemini scenario table with two CPU burners on 2 cores).
const geminiRepastes = 2

// geminiInputBox is the placeholder of Gemini CLI's empty input box
// (" >   Type your message or @path/to/file"); geminiInputBoxTimeout
// bounds the wait for it (a fallback: a draft typed by an attached human
// hides the placeholder, and the prompt then goes after the timeout).
const (
	geminiInputBox        = "Type your message"
	geminiInputBoxTimeout = 15 * time.Second
)

// Interrupt is Esc: it cancels a streaming turn ("Request cancelled.")
// and declines an approval box, ending the turn, in one press. (The first
// Ctrl-C cancels too, but a second one quits.)
func (Gemini) Interrupt() []Keystroke { return []Keystroke{{Data: []byte{0x1b}}} }

// DismissDialog is nothing: Interrupt's Esc already declines the approval
// box and ends the turn.
func (Gemini) DismissDialog() []Keystroke { return nil }

// geminiHook is the union of the Gemini hook payload fields dlgt reads.
type geminiHook struct {
	SessionID        string          `json:"session_id"`
	HookEventName    string          `json:"hook_event_name"`
	TranscriptPath   string          `json:"transcript_path"`
	Source           string          `json:"source"`
	Reason           string          `json:"reason"`
	Prompt           *string         `json:"prompt"`
	PromptResponse   *string         `json:"prompt_response"`
	NotificationType string          `json:"notification_type"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	Details          json.RawMessage `json:"details"`
}

// geminiDetails is a ToolPermission notification's details: the approval
// box's content ("exec": a shell command; "mcp": an MCP server's tool;
// others, such as an edit, with fields of their own).
type geminiDetails struct {
	Type       string `json:"type"`
	Command    string `json:"command"`
	ServerName string `json:"serverName"`
	ToolName   string `json:"toolName"`
}

// geminiTurnID is the turn id dlgt gives a Gemini turn: Gemini's hooks
// name none, but BeforeAgent and AfterAgent both carry the exact prompt,
// and the transcript records it.
func geminiTurnID(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return "prompt-" + hex.EncodeToString(sum[:8])
}

// ParseHook maps a Gemini CLI hook payload to evidence.
//
//   - SessionStart: ready. On a resume in a later minute than the
//     session's start Gemini names a new, stub transcript file; the
//     original (where the conversation and every later write go) is
//     named instead.
//   - BeforeAgent: the prompt accepted (turn id from the prompt).
//   - Notification ToolPermission: blocked on an approval box.
//   - BeforeTool, AfterTool: activity (AfterTool ends a block).
//   - AfterAgent: the turn's end, read from the transcript: interrupted
//     when Gemini recorded "Request cancelled." for the turn (AfterAgent
//     fires on a cancel too), else completed with the text of the turn's
//     last model message. prompt_response is not used: for a reply
//     streamed in more than one chunk it holds the chunks joined with
//     spaces and repeated.
func (Gemini) ParseHook(event string, payload []byte) (Evidence, error) {
	var h geminiHook
	if t := bytes.TrimSpace(payload); len(t) == 0 || t[0] != '{' {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object")
	}
	if err := json.Unmarshal(payload, &h); err != nil {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object: %v", err)
	}
	if h.HookEventName != "" && h.HookEventName != event {
		return Evidence{}, fmt.Errorf("hook event %q carries payload for %q", event, h.HookEventName)
	}
	ev := Evidence{Event: event, ProviderID: h.SessionID, Transcript: h.TranscriptPath}
	switch event {
	case "SessionStart":
		ev.Kind, ev.Reason = KindReady, h.Source
		ev.Transcript = geminiOriginalTranscript(h.TranscriptPath, h.SessionID)
	case "BeforeAgent":
		ev.Kind, ev.Prompt = KindPromptSubmitted, h.Prompt
		if h.Prompt != nil {
			ev.TurnID = geminiTurnID(*h.Prompt)
		}
	case "Notification":
		if h.NotificationType == "ToolPermission" {
			var d geminiDetails
			json.Unmarshal(h.Details, &d)
			// The approval box is up: answerable with its keys
			// (AnswerKeys), what it asks is the command, else the
			// details Gemini gives.
			ev.Kind, ev.Reason, ev.Answerable = KindBlocked, "permission", true
			ev.Tool, ev.Command = d.Type, clipText(d.Command, 512)
			ev.Input = ToolInputText(h.Details)
			switch d.Type {
			case "exec":
				ev.Tool = "run_shell_command"
			case "mcp":
				ev.Tool = "mcp_" + d.ServerName + "_" + d.ToolName
			}
		}
	case "BeforeTool":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolStarted, payload)
	case "AfterTool":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolCompleted, payload)
		geminiToolOutput(ev.ToolCall)
	case "AfterAgent":
		prompt := ""
		if h.Prompt != nil {
			// The prompt names the turn: an AfterAgent that arrives
			// after its turn was closed is not taken for the next one.
			prompt, ev.Prompt = *h.Prompt, h.Prompt
			ev.TurnID = geminiTurnID(prompt)
		}
		end := readGeminiTurnEnd(h.TranscriptPath, prompt)
		switch {
		case end.canceled:
			ev.Kind, ev.Reason = KindInterrupted, "Request cancelled."
		case end.failure != "":
			// A failed model call (AfterAgent fires for it too, with
			// "[no response text]").
			ev.Kind, ev.Error = KindStopFailure, end.failure
		default:
			ev.Kind = KindStop
			if end.found {
				text := end.text
				ev.FinalText, ev.TextSource = &text, rpc.TextSourceTranscript
			}
		}
	case "SessionEnd":
		ev.Kind, ev.Reason = KindSessionEnd, h.Reason
	default:
		ev.Kind = KindIgnored
	}
	return ev, nil
}

// geminiRecord is the part of a transcript line dlgt reads: a message
// record ({id, type, content, tokens, toolCalls}); patches ({"$set":...})
// and the header have no type.
type geminiRecord struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Tokens    *geminiTokens   `json:"tokens"`
	ToolCalls []any           `json:"toolCalls"`
}

type geminiTokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
	Total    int64 `json:"total"`
}

// geminiCancelled is the info record Gemini writes when a turn is
// cancelled (Esc while working, or Esc declining an approval box).
const geminiCancelled = "Request cancelled."

// prompt returns a user record's prompt text: its text parts, unless it
// is the session context Gemini adds, or a tool result (no text).
func (r *geminiRecord) prompt() (string, bool) {
	if r.Type != "user" {
		return "", false
	}
	var s string
	if json.Unmarshal(r.Content, &s) == nil {
		return s, !strings.HasPrefix(s, "<session_context>")
	}
	var parts []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(r.Content, &parts) != nil {
		return "", false
	}
	var texts []string
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	if len(texts) == 0 || strings.HasPrefix(texts[0], "<session_context>") {
		return "", false
	}
	return strings.Join(texts, ""), true
}

// text returns a gemini or info record's text content.
func (r *geminiRecord) text() string {
	var s string
	if json.Unmarshal(r.Content, &s) == nil {
		return s
	}
	return ""
}

// geminiTurnEnd is what the transcript says about a turn's end.
type geminiTurnEnd struct {
	found    bool   // a model message with text after the prompt
	text     string // the last one's text
	canceled bool   // "Request cancelled." after the prompt
	failure  string // the error record that ended the turn, if any
}

// maxGeminiTail bounds how much of a transcript's end is read for a
// turn's end; one turn's records are much smaller.
const maxGeminiTail = 32 << 20

// readGeminiTurnEnd reads the transcript's turn for prompt: from the last
// user record carrying prompt (the last prompt of all when prompt is ""
// or not found), its last model text and whether it was cancelled.
func readGeminiTurnEnd(path, prompt string) geminiTurnEnd {
	f, err := os.Open(path)
	if err != nil || path == "" {
		return geminiTurnEnd{}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxGeminiTail {
		f.Seek(fi.Size()-maxGeminiTail, io.SeekStart)
	}
	match, last, matched := scanGeminiTurns(f, prompt)
	if matched {
		return match
	}
	return last
}

// scanGeminiTurns reads a transcript's turns: the end of the last one
// whose prompt is prompt (matched), and of the last one of all.
func scanGeminiTurns(r io.Reader, prompt string) (match, last geminiTurnEnd, matched bool) {
	var cur geminiTurnEnd
	seen, inMatch := false, false
	eachLine(r, maxUsageLine, func(line []byte) {
		var r geminiRecord
		if json.Unmarshal(line, &r) != nil || r.Type == "" {
			return
		}
		switch r.Type {
		case "user":
			p, ok := r.prompt()
			if !ok {
				return
			}
			cur, seen = geminiTurnEnd{}, true
			inMatch = prompt != "" && promptEqual(p, prompt)
			matched = matched || inMatch
		case "gemini":
			if !seen {
				return
			}
			// The last model message decides: one with tool calls and no
			// text is followed by another.
			cur.text, cur.found, cur.failure = r.text(), r.text() != "", ""
		case "error":
			if seen {
				cur.failure = geminiErrorText(r.text())
			}
		case "info":
			if seen && r.text() == geminiCancelled {
				cur.canceled = true
			}
		}
		if inMatch {
			match = cur
		}
	})
	return match, cur, matched
}

// LastReply implements ReplyReader: the last model text of the turn whose
// prompt is prompt (the AfterAgent hook reads it itself; this is the
// daemon's read when that found none).
func (Gemini) LastReply(r io.Reader, prompt string) (string, bool) {
	match, _, matched := scanGeminiTurns(r, prompt)
	return match.text, matched && match.found
}

// promptEqual compares a transcript prompt with a hook's, as the daemon
// compares echoes (line endings and surrounding blanks aside).
func promptEqual(a, b string) bool {
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	return norm(a) == norm(b)
}

// geminiErrorText is an error record's message: Gemini writes a failed
// API call as "[API Error: <the API's JSON error body>]"; the body's
// status and message are taken from it when it parses.
func geminiErrorText(content string) string {
	body := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(content), "[API Error: "), "]")
	var e struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) == nil && e.Error.Message != "" {
		return clipText(strings.TrimPrefix(e.Error.Status+": "+e.Error.Message, ": "), 1024)
	}
	if strings.TrimSpace(content) == "" {
		return "the model call failed without details"
	}
	return clipText(strings.TrimSpace(content), 1024)
}

// geminiOriginalTranscript is the transcript a session's records go to.
// A TUI resumed in a later minute than the session's last write names a
// new file, session-<now>-<id8>.jsonl, holding only a header, while
// Gemini keeps writing the original: among the files of the same
// directory whose name ends in the same id prefix and whose header names
// sessionID, the oldest (names sort by time). path itself when it is the
// only one or cannot be read.
func geminiOriginalTranscript(path, sessionID string) string {
	if path == "" || len(sessionID) < 8 {
		return path
	}
	dir, base := filepath.Split(path)
	suffix := "-" + sessionID[:8] + ".jsonl"
	if !strings.HasPrefix(base, "session-") || !strings.HasSuffix(base, suffix) {
		return path
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return path
	}
	var cands []string
	for _, e := range ents {
		n := e.Name()
		if n != base && strings.HasPrefix(n, "session-") && strings.HasSuffix(n, suffix) && n < base {
			cands = append(cands, n)
		}
	}
	sort.Strings(cands)
	for _, n := range cands {
		if geminiHeaderNames(filepath.Join(dir, n), sessionID) {
			return filepath.Join(dir, n)
		}
	}
	return path
}

// geminiHeaderNames reports whether the transcript at path starts with a
// header for sessionID.
func geminiHeaderNames(path, sessionID string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	var h struct {
		SessionID string `json:"sessionId"`
	}
	return json.Unmarshal(line, &h) == nil && h.SessionID == sessionID
}

// ParseTranscriptLine maps the transcript's "Request cancelled." info
// record to KindInterrupted: the only evidence of an approval declined
// with Esc, which ends the turn with no hook at all. (A cancelled
// streaming turn records it too, before its AfterAgent.)
func (Gemini) ParseTranscriptLine(line []byte) Evidence {
	if !bytes.Contains(line, []byte(geminiCancelled)) {
		return Evidence{Kind: KindIgnored}
	}
	var r geminiRecord
	if json.Unmarshal(line, &r) != nil || r.Type != "info" || r.text() != geminiCancelled {
		return Evidence{Kind: KindIgnored}
	}
	return Evidence{Kind: KindInterrupted, Event: "transcript:cancelled", Reason: geminiCancelled}
}

// TurnUsage sums the token usage of the turn's model messages. Gemini
// records each main-agent model call as a "gemini" message with its
// tokens (the API's usageMetadata: input is the prompt including the
// cached part, output the candidates, thoughts and tool-use prompt
// tokens apart); a message is written again when its tool calls finish,
// and counted once (its last write). The turn starts at its prompt (the
// user record whose text has turnID, else the first prompt in r when
// turnID is empty); it has ended once a model message with text and no
// tool calls, or a cancel, follows it.
func (Gemini) TurnUsage(r io.Reader, turnID string) (*rpc.Usage, TurnState) {
	var (
		in, seen, ended bool
		order           []string
		byID            = map[string]geminiTokens{}
	)
	eachLine(r, maxUsageLine, func(line []byte) {
		if !bytes.Contains(line, []byte(`"type":"`)) {
			return
		}
		var rec geminiRecord
		if json.Unmarshal(line, &rec) != nil {
			return
		}
		switch rec.Type {
		case "user":
			p, ok := rec.prompt()
			if !ok {
				return
			}
			if seen {
				in = false // the next turn
				return
			}
			if turnID == "" || geminiTurnID(p) == turnID || geminiTurnID(strings.TrimSpace(p)) == turnID {
				in, seen = true, true
			}
		case "gemini":
			if !in {
				return
			}
			if rec.Tokens != nil {
				if _, dup := byID[rec.ID]; !dup {
					order = append(order, rec.ID)
				}
				byID[rec.ID] = *rec.Tokens
			}
			ended = rec.text() != "" && len(rec.ToolCalls) == 0
		case "info":
			if in && rec.text() == geminiCancelled {
				ended = true
			}
		}
	})
	var sum usageSum
	for _, id := range order {
		t := byID[id]
		input := max(t.Input-max(t.Cached, 0), 0) + max(t.Tool, 0)
		sum.add(input, t.Cached, 0, t.Output+max(t.Thoughts, 0), t.Thoughts)
	}
	state := TurnUnseen
	switch {
	case ended:
		state = TurnEnded
	case seen:
		state = TurnOpen
	}
	return sum.result(), state
}

// geminiLaunchHints are Gemini CLI 0.61.0's screens that hold a launch:
// its auth dialog (no auth type chosen in the user's settings, or an
// environment its validator rejects) and its folder-trust dialog.
var geminiLaunchHints = append(geminiSignInScreens, []screenHint{
	{[]string{"Get started", "Invalid auth method selected"}, geminiNotSignedIn},
	{[]string{"Do you trust the files in this folder?"},
		"Gemini CLI asks whether to trust this folder: run `gemini` once in it in a terminal and answer"},
}...)

// geminiSignInScreens are Gemini CLI 0.61.0's sign-in screens, each of
// which waits for a person (seen with an empty HOME and each sign-in
// method chosen without its credential): the auth dialog, its API key
// entry, the Google sign-in by user code, and the dialog's Google sign-in
// that exits to restart (exit 199).
var geminiSignInScreens = []screenHint{
	{[]string{"How would you like to authenticate for this project?"}, geminiNotSignedIn},
	{[]string{"Enter Gemini API Key"},
		"Gemini CLI is set to use a Gemini API key but has none: set GEMINI_API_KEY where you run dlgt, or run `gemini` once in a terminal and enter it"},
	{[]string{"Please visit the following URL to authorize the application", "Enter the authorization code", "Logging in with Google... Restarting Gemini CLI"},
		geminiNoGoogleSignIn},
}

// LaunchHint recognises Gemini CLI's auth and trust screens.
func (Gemini) LaunchHint(rows []string) string { return matchScreen(rows, geminiLaunchHints) }

// BlockingLaunchHint recognises Gemini CLI's sign-in screens, which it
// draws before its SessionStart hook and never leaves without a person.
func (Gemini) BlockingLaunchHint(rows []string) string {
	return matchScreen(rows, geminiSignInScreens)
}

// maxGeminiDenyReason bounds the reason a denial hands to the model.
const maxGeminiDenyReason = 4096

// GeminiToolDenial is what a Gemini CLI 0.61.0 BeforeTool hook prints to
// refuse the tool call before any approval box is shown: the call is not
// run, no AfterTool fires, the model receives "Tool execution blocked:
// <reason>" and the turn goes on. Gemini has no hook answer that allows a
// call (BeforeTool's {"decision":"allow"} still shows the box), so an allow
// is GeminiApprovalKeys. Measured in docs/approvals-harnesses.md. An empty,
// invalid UTF-8 or too long reason is refused.
func GeminiToolDenial(reason string) ([]byte, error) {
	switch {
	case strings.TrimSpace(reason) == "":
		return nil, rpc.InvalidField("message", "a Gemini denial needs a reason")
	case !utf8.ValidString(reason):
		return nil, rpc.InvalidField("message", "is not valid UTF-8")
	case len(reason) > maxGeminiDenyReason:
		return nil, rpc.InvalidField("message", "is %d bytes; at most %d", len(reason), maxGeminiDenyReason)
	}
	return json.Marshal(struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{"deny", reason})
}

// geminiBoxShown is what every approval box of Gemini CLI 0.61.0 shows as
// its first option (its bundle builds each box's options with "Allow
// once" first: shell, edit, MCP, info): the answer's keys wait for it,
// since Gemini runs the Notification hook before it draws the box
// (measured under load: the box 1.4 s after the hook's delivery).
const geminiBoxShown = "Allow once"

// geminiBoxTimeout bounds that wait; past it the key is written anyway.
const geminiBoxTimeout = 10 * time.Second

// AnswerKeys answers the approval box announced by Notification
// ToolPermission (GeminiApprovalKeys), once the box is drawn: "1" allows
// the call once; Esc declines it, which ends the turn (DenyEndsTurn). The
// box takes no message: a deny with one is refused.
func (Gemini) AnswerKeys(decision, message string) ([]Keystroke, error) {
	if message != "" {
		return nil, rpc.InvalidField("message", "Gemini CLI's approval box takes no message: deny declines the call and ends the turn; send the message as the next prompt")
	}
	keys := GeminiApprovalKeys(decision == rpc.DecisionAllow)
	for i := range keys {
		keys[i].Await = &Await{Shown: []string{geminiBoxShown}, Timeout: geminiBoxTimeout}
	}
	return keys, nil
}

// DenyEndsTurn: declining Gemini's box cancels the turn (GeminiApprovalKeys).
func (Gemini) DenyEndsTurn() bool { return true }

// GeminiApprovalKeys answers Gemini CLI 0.61.0's approval box ("Allow
// execution of [Shell]?", announced by Notification ToolPermission): allow
// is "1" (Allow once; AfterTool follows); otherwise Esc ("No, suggest
// changes"), which cancels the whole turn with no hook at all (the
// transcript's "Request cancelled." proves it). A denial the model reads
// and continues from exists only as GeminiToolDenial.
func GeminiApprovalKeys(allow bool) []Keystroke {
	if allow {
		return []Keystroke{{Data: []byte("1")}}
	}
	return []Keystroke{{Data: []byte{0x1b}}}
}
