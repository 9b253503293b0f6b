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
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// CopilotTestedVersion is the GitHub Copilot CLI release dlgt's end-to-end
// tests pin.
const CopilotTestedVersion = "1.0.102"

// Copilot is the GitHub Copilot CLI adapter. The TUI runs under the PTY
// and lifecycle comes from Copilot's command hooks plus its session log
// (session-state/<id>/events.jsonl, one JSON record a line). Copilot
// reads user hooks only from $COPILOT_HOME/hooks/*.json (besides a
// repository's own), so each Session gets a Copilot home of its own
// (COPILOT_HOME under its launch directory) holding:
//
//   - hooks/: dlgt's hook file, and a link to each of the user's own;
//   - config.json and settings.json: copies of the user's (sign-in,
//     trusted folders, model, allowed tools), which Copilot rewrites as it
//     runs ("managed automatically"), so the user's are never written;
//   - a link to every other entry of the user's Copilot directory (MCP
//     servers, skills, agents, plugins), so the Session behaves as the
//     user's own copilot does;
//   - session-state, logs and the other run-time files of its own.
//
// Folder trust is the user's: a launch whose directory is not under one
// of the trustedFolders of the user's config.json (nor COPILOT_ALLOW_ALL)
// fails with a hint, rather than trusting it or holding the launch on
// Copilot's trust dialog (see CopilotTrusted).
//
// Like Codex, Copilot runs no hook before the first prompt (sessionStart
// comes with it), so a new Session's first prompt goes on its command
// line (-i, LaunchPrompter) and a restart without one is ready at spawn.
type Copilot struct{}

// copilotHookEvents are the hook events dlgt subscribes to. Not
// permissionRequest: Copilot 1.0.102 runs it before it applies the
// allowed tools (it fires with --allow-all-tools too), so it does not say
// that anyone is asked; notification(permission_prompt), run once the
// dialog is drawn, does. Nor errorOccurred: a failed turn is read from the
// session log (session.error), which says the turn ended.
var copilotHookEvents = []string{
	"sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse",
	"notification", "agentStop", "sessionEnd",
}

// copilotManaged are flags dlgt sets itself; harness_options may not.
var copilotManaged = map[string]bool{
	"session-id": true, "resume": true, "r": true, "continue": true,
	"prompt": true, "p": true, "interactive": true, "i": true,
	"model": true, "reasoning-effort": true, "allow-all-tools": true,
	"allow-all": true, "yolo": true, "config-dir": true, "help": true,
	"h": true, "version": true, "v": true, "acp": true, "server": true,
	"output-format": true, "silent": true, "s": true, "log-dir": true,
}

// GitHub Copilot CLI's name, and the variable and executable Binary looks for.
const (
	copilotName    = "copilot"
	copilotBinEnv  = "DLGT_COPILOT_BIN"
	copilotBinName = "copilot"
)

// copilotDescriptor is Copilot's entry in the registry (registry.go).
func copilotDescriptor() Descriptor {
	return Descriptor{
		Name: copilotName, DisplayName: "GitHub Copilot CLI", Harness: Copilot{},
		BinEnv: copilotBinEnv, BinName: copilotBinName,
		Install:   "npm install -g @github/copilot@" + CopilotTestedVersion,
		Config:    ConfigDir{Env: "COPILOT_HOME", Home: ".copilot"},
		SkillsDir: "skills",
		MCP:       MCPCopilotJSON,
		// Sign-in (a GitHub token) and a model provider of the user's own.
		ProviderEnv: []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_OFFLINE",
			"COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL"},
	}
}

func (Copilot) Name() string { return copilotName }

func (Copilot) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{
		Name:            copilotName,
		TestedVersion:   CopilotTestedVersion,
		LifecycleSource: "hooks",
		Capabilities: rpc.HarnessCapabilities{
			Resume: true, Cancel: true, Steering: false, HarnessOptions: true,
			AutoApprove: true, Blocking: true, EffortLevels: copilotEfforts,
		},
		ScreenMode: rpc.ScreenAlternate,
	}
}

// copilotEfforts are --reasoning-effort's levels in Copilot 1.0.102.
var copilotEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// Binary is DLGT_COPILOT_BIN from the client environment, else copilot on
// the client's PATH.
func (Copilot) Binary(env map[string]string) (string, error) {
	return findBinary(env, copilotBinEnv, copilotBinName)
}

// copilotModels is model.list for Copilot CLI 1.0.102: "default" leaves
// the choice to the user's settings (or COPILOT_MODEL), and a few names
// of its built-in catalog; with a model provider of the user's own
// (COPILOT_PROVIDER_BASE_URL) any name that provider knows works.
var copilotModels = []rpc.Model{
	{ID: "default", DisplayName: "Default (the model in the user's Copilot settings or COPILOT_MODEL)", Default: true},
	{ID: "claude-sonnet-4.5", DisplayName: "Claude Sonnet 4.5"},
	{ID: "claude-haiku-4.5", DisplayName: "Claude Haiku 4.5"},
	{ID: "gpt-5", DisplayName: "GPT-5"},
	{ID: "gpt-5-mini", DisplayName: "GPT-5 mini", Hidden: true},
}

// Models lists copilotModels; hidden entries only with includeHidden.
func (Copilot) Models(includeHidden bool) rpc.ModelListResult {
	out := rpc.ModelListResult{Harness: copilotName, Source: "built-in list for GitHub Copilot CLI " + CopilotTestedVersion, Models: []rpc.Model{}}
	for _, m := range copilotModels {
		if m.Hidden && !includeHidden {
			continue
		}
		out.Models = append(out.Models, m)
	}
	return out
}

// ValidateOptions checks KEY=VALUE entries; each becomes --KEY=VALUE
// (allow-tool=shell(git:*), say, or add-dir=DIR).
func (Copilot) ValidateOptions(opts []string) error { return validateFlagOptions(opts, copilotManaged) }

// validateFlagOptions checks KEY=VALUE entries that become --KEY=VALUE
// flags, refusing the flags dlgt manages.
func validateFlagOptions(opts []string, managed map[string]bool) error {
	for i, o := range opts {
		key, _, ok := strings.Cut(o, "=")
		field := fmt.Sprintf("harness_options[%d]", i)
		if !ok {
			return rpc.InvalidField(field, "%q is not KEY=VALUE", o)
		}
		if !optionKey().MatchString(key) {
			return rpc.InvalidField(field, "%q is not an option name", key)
		}
		if managed[key] {
			return rpc.InvalidField(field, "--%s is managed by dlgt and cannot be passed", key)
		}
	}
	return nil
}

// maxCopilotLaunchPrompt is Linux's limit on one argv string
// (MAX_ARG_STRLEN), less the "--interactive=" around the prompt.
const maxCopilotLaunchPrompt = 32*4096 - 1 - len("--interactive=")

// LaunchPrompt accepts a first prompt for Copilot's command line: Copilot
// runs no hook before a prompt is submitted, so the TUI submits the first
// one itself (--interactive) for the launch to be proven.
func (Copilot) LaunchPrompt(prompt string) error {
	if len(prompt) > maxCopilotLaunchPrompt {
		return fmt.Errorf("a new GitHub Copilot CLI Session's first prompt goes on its command line and is limited to %d bytes (this one has %d); start with a shorter prompt and send the rest", maxCopilotLaunchPrompt, len(prompt))
	}
	return nil
}

// Prepare builds the launch: dlgt assigns the session id (--session-id)
// or resumes it (--resume=), and the Session's own Copilot home carries
// the user's configuration with dlgt's hooks (see Copilot).
func (c Copilot) Prepare(spec Spec) (*Launch, error) {
	bin, err := c.Binary(spec.Env)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "%v", err)
	}
	if spec.Effort != "" && !contains(copilotEfforts, spec.Effort) {
		return nil, rpc.InvalidField("effort", "GitHub Copilot CLI's reasoning efforts are %s", strings.Join(copilotEfforts, ", "))
	}
	if spec.StateDir == "" || !filepath.IsAbs(spec.StateDir) {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "a GitHub Copilot CLI launch needs an absolute state directory")
	}
	if spec.Resume && spec.ProviderID == "" {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "resuming a GitHub Copilot CLI session needs its id")
	}
	getenv := func(k string) string { return spec.Env[k] }
	userDir, uerr := copilotDescriptor().Config.Resolve(getenv)
	if uerr != nil {
		userDir = ""
	}
	if !CopilotTrusted(userDir, spec.Cwd, getenv) {
		where := "its config.json"
		if userDir != "" {
			where = filepath.Join(userDir, "config.json")
		}
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "GitHub Copilot CLI does not trust %s: run `copilot` there once and choose \"Yes, and remember this folder for future sessions\", or add the folder to \"trustedFolders\" in %s (dlgt never trusts a folder for you)", spec.Cwd, where)
	}
	home := filepath.Join(spec.StateDir, "copilot-home")
	if err := writeCopilotHome(home, userDir, spec.HookArgv); err != nil {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "preparing the Copilot home for this Session: %v", err)
	}
	id := spec.ProviderID
	if id == "" {
		id = NewUUID()
	}
	argv := []string{bin}
	if spec.Resume {
		argv = append(argv, "--resume="+id)
	} else {
		argv = append(argv, "--session-id="+id)
	}
	argv = append(argv, "--no-auto-update")
	if spec.Model != "" && spec.Model != "default" {
		argv = append(argv, "--model="+spec.Model)
	}
	if spec.Effort != "" {
		argv = append(argv, "--reasoning-effort="+spec.Effort)
	}
	if spec.AutoApprove {
		argv = append(argv, "--allow-all-tools")
	}
	for _, o := range spec.Options {
		argv = append(argv, "--"+o)
	}
	if spec.Prompt != "" {
		if err := c.LaunchPrompt(spec.Prompt); err != nil {
			return nil, rpc.InvalidField("prompt", "%v", err)
		}
		argv = append(argv, "--interactive="+spec.Prompt)
	}
	rememberCopilotHome(id, home)
	l := &Launch{Argv: argv, Env: mergeEnv(spec.Env, map[string]string{"COPILOT_HOME": home}), ProviderID: id}
	// A resume without a prompt reports nothing until one is typed.
	l.ReadyAtSpawn = spec.Resume && spec.Prompt == ""
	return l, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// copilotPrivate are the entries of a Session's Copilot home that are its
// own, never links to the user's: the copies dlgt writes, the hooks
// directory, and what Copilot keeps per process or per session. Built on
// first use: every dlgt command runs the package's initialisation.
var copilotPrivate = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"config.json": true, "settings.json": true, "hooks": true,
		"session-state": true, "session-store.db": true, "logs": true,
		"command-history-state.json": true, "open-sessions-state.json": true,
		"servers": true, "sidebar-sessions-state": true, "ide": true,
	}
})

// maxCopilotConfig bounds a user's config.json or settings.json read.
const maxCopilotConfig = 4 << 20

// copilotHookFile is dlgt's hook file in a Session's hooks directory.
const copilotHookFile = "dlgt.json"

// writeCopilotHome makes home: hooks/dlgt.json and links to the user's
// hook files, copies of the user's config.json and settings.json, and
// links to the user's other entries (userDir "" for none). Links are
// refreshed on every launch; the Session's own files are kept (a resume
// finds its session-state).
func writeCopilotHome(home, userDir string, hookArgv []string) error {
	hooksDir := filepath.Join(home, "hooks")
	if err := os.MkdirAll(hooksDir, 0o700); err != nil {
		return err
	}
	if err := refreshLinks(home, userDir, copilotSkip(copilotPrivate())); err != nil {
		return err
	}
	if err := refreshLinks(hooksDir, filepath.Join(userDir, "hooks"), copilotSkip(map[string]bool{copilotHookFile: true})); err != nil {
		return err
	}
	for _, name := range []string{"config.json", "settings.json"} {
		if userDir == "" {
			break
		}
		data, err := readBounded(filepath.Join(userDir, name), maxCopilotConfig)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return err
		}
		if err := writeFileAtomic(filepath.Join(home, name), data, 0o600); err != nil {
			return err
		}
	}
	return writeFileAtomic(filepath.Join(hooksDir, copilotHookFile), copilotHooksJSON(hookArgv), 0o600)
}

// copilotSkip is what a Copilot home does not link from the user's: the
// entries private names, and lock files.
func copilotSkip(private map[string]bool) func(string) bool {
	return func(name string) bool { return private[name] || strings.HasSuffix(name, ".lock") }
}

// refreshLinks removes the symbolic links in dir and links each entry of
// src (when src is not "" and exists) that skip does not name and dir
// does not hold as an entry of its own (the Gemini and Copilot homes).
func refreshLinks(dir, src string, skip func(name string) bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type()&os.ModeSymlink != 0 {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if src == "" || filepath.Clean(src) == filepath.Clean(dir) {
		return nil
	}
	ents, err = os.ReadDir(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrInvalid) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if skip(name) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// copilotHooksJSON is dlgt's hook file: a command hook running the dlgt
// hook forwarder with the event name for each subscribed event.
func copilotHooksJSON(hookArgv []string) []byte {
	type hook struct {
		Type       string `json:"type"`
		Bash       string `json:"bash"`
		TimeoutSec int    `json:"timeoutSec"`
	}
	hooks := map[string][]hook{}
	for _, ev := range copilotHookEvents {
		hooks[ev] = []hook{{Type: "command", Bash: hookCommand(hookArgv, ev), TimeoutSec: 30}}
	}
	out, _ := json.MarshalIndent(struct {
		Version int               `json:"version"`
		Hooks   map[string][]hook `json:"hooks"`
	}{1, hooks}, "", "  ")
	return out
}

// CopilotTrusted reports whether Copilot CLI trusts dir for the user
// whose Copilot directory is userDir: dir is one of the "trustedFolders"
// of their config.json (or settings.json) or inside one, or
// COPILOT_ALLOW_ALL is true (which trusts every folder).
func CopilotTrusted(userDir, dir string, getenv func(string) string) bool {
	if strings.EqualFold(getenv("COPILOT_ALLOW_ALL"), "true") {
		return true
	}
	if userDir == "" || dir == "" {
		return false
	}
	dir = filepath.Clean(dir)
	for _, name := range []string{"config.json", "settings.json"} {
		data, err := readBounded(filepath.Join(userDir, name), maxCopilotConfig)
		if err != nil {
			continue
		}
		var cfg struct {
			TrustedFolders []string `json:"trustedFolders"`
		}
		if json.Unmarshal(stripJSONComments(data), &cfg) != nil {
			continue
		}
		for _, f := range cfg.TrustedFolders {
			if f == "" || !filepath.IsAbs(f) {
				continue
			}
			f = filepath.Clean(f)
			if dir == f || strings.HasPrefix(dir, f+string(filepath.Separator)) || f == string(filepath.Separator) {
				return true
			}
		}
	}
	return false
}

// copilotHomes maps a session id dlgt launched to its Session's Copilot
// home, so that a hook naming the session (sessionStart names no file)
// can name its session log. Bounded: past maxCopilotHomes the oldest
// entries go (a later hook of theirs still names the log: agentStop
// carries its path).
var copilotHomes = struct {
	sync.Mutex
	byID  map[string]string
	order []string
}{byID: map[string]string{}}

const maxCopilotHomes = 4096

func rememberCopilotHome(id, home string) {
	copilotHomes.Lock()
	defer copilotHomes.Unlock()
	if _, ok := copilotHomes.byID[id]; !ok {
		copilotHomes.order = append(copilotHomes.order, id)
	}
	copilotHomes.byID[id] = home
	for len(copilotHomes.order) > maxCopilotHomes {
		delete(copilotHomes.byID, copilotHomes.order[0])
		copilotHomes.order = copilotHomes.order[1:]
	}
}

// copilotLog is the session log of id, when dlgt launched it.
func copilotLog(id string) string {
	copilotHomes.Lock()
	home := copilotHomes.byID[id]
	copilotHomes.Unlock()
	if home == "" || !validUUID(id) {
		return ""
	}
	return filepath.Join(home, "session-state", id, "events.jsonl")
}

// validUUID reports whether s has the 8-4-4-4-12 hex form.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Submit clears the draft (Ctrl-U) and pastes the prompt as one bracketed
// paste once the TUI reads bracketed paste and shows its input line's
// footer, then sends Enter once the input shows the paste.
func (Copilot) Submit(prompt string) []Keystroke {
	keys := pasteSubmit(prompt, copilotPastePlaceholders...)
	keys[0].Await.Shown = []string{copilotIdleFooter}
	keys[0].Await.Timeout = copilotIdleTimeout
	return keys
}

// copilotPastePlaceholders are the labels Copilot 1.0.102 shows in its
// input for a long paste: "[Paste #1 - 150 lines]" (the text goes to the
// model), and past 8-21 KB (measured: 7,990 bytes inline, 21,490 saved)
// "[Saved pasted content to workspace (106.3 KB) id=1]": the text is
// saved to session-state/<id>/files/paste-<ms>.txt and the model gets
// `<pasted_content file="…" size="…" lines="…" />` naming it.
var copilotPastePlaceholders = []string{"[Paste #", "[Saved pasted content"}

// copilotIdleFooter is in the footer of Copilot 1.0.102's input line
// ("Interactive · Manual Approval · / commands · ? help"): keys typed
// before it is drawn are lost (a resumed TUI took a prompt typed about
// 8 s after its start, while it still loaded, and dropped it).
// copilotIdleTimeout bounds the wait (a fallback).
const (
	copilotIdleFooter  = "Interactive"
	copilotIdleTimeout = 20 * time.Second
)

// SpareReady: a warm spare (started without a prompt) takes a prompt once
// its input line is drawn.
func (Copilot) SpareReady() Await {
	return Await{PasteMode: true, Shown: []string{copilotIdleFooter}, Timeout: copilotIdleTimeout}
}

// Interrupt is Ctrl-C: it cancels a running turn (the session log's
// "abort"; no hook runs) and an approval dialog with it. Copilot's Esc
// does not stop a streaming turn (its footer says "esc esc edit prompt").
func (Copilot) Interrupt() []Keystroke { return []Keystroke{{Data: []byte{0x03}}} }

// DismissDialog is nothing: Interrupt cancels the dialog too.
func (Copilot) DismissDialog() []Keystroke { return nil }

// copilotHook is the union of the Copilot hook payload fields dlgt reads.
type copilotHook struct {
	SessionID      string          `json:"sessionId"`
	Source         string          `json:"source"`
	Prompt         *string         `json:"prompt"`
	TranscriptPath string          `json:"transcriptPath"`
	StopReason     string          `json:"stopReason"`
	Reason         string          `json:"reason"`
	ToolName       string          `json:"toolName"`
	ToolArgs       json.RawMessage `json:"toolArgs"`
	// ToolCalls: preToolUse as the TUI of 1.0.102 ran it (the recorded
	// payload); postToolUse names its one tool by toolName.
	ToolCalls []struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"toolCalls"`
	ToolResult *struct {
		ResultType string          `json:"resultType"`
		Text       json.RawMessage `json:"textResultForLlm"`
	} `json:"toolResult"`
	Message          string `json:"message"`
	NotificationType string `json:"notification_type"`
}

// ParseHook maps a Copilot CLI hook payload to evidence.
//
//   - sessionStart (with the first prompt of a process): ready; it names
//     no file, the session log is the Session's own home's.
//   - userPromptSubmitted: the prompt accepted.
//   - notification permission_prompt: blocked on the approval dialog
//     (answered with its keys, AnswerKeys).
//   - preToolUse, postToolUse: activity.
//   - agentStop: the turn's end; its text is the turn's last assistant
//     message in the session log, read by the daemon through LastReply
//     once the log records it (Copilot writes it after the hook runs).
//   - sessionEnd.
func (Copilot) ParseHook(event string, payload []byte) (Evidence, error) {
	if t := bytes.TrimSpace(payload); len(t) == 0 || t[0] != '{' {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object")
	}
	var h copilotHook
	if err := json.Unmarshal(payload, &h); err != nil {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object: %v", err)
	}
	ev := Evidence{Event: event, ProviderID: h.SessionID, Transcript: h.TranscriptPath}
	if ev.Transcript == "" {
		ev.Transcript = copilotLog(h.SessionID)
	}
	switch event {
	case "sessionStart":
		ev.Kind, ev.Reason = KindReady, h.Source
	case "userPromptSubmitted":
		ev.Kind, ev.Prompt = KindPromptSubmitted, h.Prompt
		if h.Prompt != nil {
			ev.TurnID = copilotTurnID(*h.Prompt)
		}
	case "notification":
		if h.NotificationType != "permission_prompt" {
			ev.Kind = KindIgnored
			break
		}
		ev.Kind, ev.Reason, ev.Answerable = KindBlocked, "permission", true
		ev.Command = clipText(strings.TrimPrefix(h.Message, "Run command: "), 512)
		if strings.HasPrefix(h.Message, "Run command: ") {
			ev.Tool = "bash"
		}
		ev.Input = ToolInputText(mustJSON(h.Message))
	case "preToolUse", "postToolUse":
		ev.Kind, ev.ToolCall = KindActivity, copilotToolCall(event, &h)
		if ev.ToolCall != nil {
			ev.Tool = ev.ToolCall.Name
		}
	case "agentStop":
		// Its text is read by the daemon (ReplyReader): Copilot 1.0.102
		// runs agentStop before it writes the turn to its session log.
		ev.Kind = KindStop
	case "sessionEnd":
		ev.Kind, ev.Reason = KindSessionEnd, h.Reason
	default:
		ev.Kind = KindIgnored
	}
	return ev, nil
}

// copilotToolCall is the tool call of a preToolUse or postToolUse hook,
// nil when it names none. Its id is left to the daemon, which pairs the
// start and the end by name and input: Copilot 1.0.102's postToolUse
// carries no id of the call (its preToolUse's toolCalls do). Of several
// calls in one preToolUse the first is reported.
func copilotToolCall(event string, h *copilotHook) *ToolCall {
	tc := &ToolCall{Name: h.ToolName, Phase: ToolStarted, Input: nonNull(h.ToolArgs)}
	if tc.Name == "" && len(h.ToolCalls) > 0 {
		tc.Name, tc.Input = h.ToolCalls[0].Name, nonNull(h.ToolCalls[0].Args)
	}
	if tc.Name == "" {
		return nil
	}
	tc.Command = toolCommand(tc.Input)
	if event == "postToolUse" {
		tc.Phase = ToolCompleted
		if r := h.ToolResult; r != nil {
			tc.Output = nonNull(r.Text)
			if r.ResultType != "" && r.ResultType != "success" {
				tc.Phase, tc.Error = ToolFailed, errorText(r.Text)
				if tc.Error == "" {
					tc.Error = r.ResultType
				}
			}
		}
	}
	return tc
}

func mustJSON(v any) json.RawMessage {
	out, _ := json.Marshal(v)
	return out
}

// copilotRecord is the part of a session log line dlgt reads.
type copilotRecord struct {
	Type string `json:"type"`
	Data struct {
		Content      *string           `json:"content"`
		TurnID       string            `json:"turnId"`
		ToolRequests []json.RawMessage `json:"toolRequests"`
		Message      string            `json:"message"`
		ErrorType    string            `json:"errorType"`
		Usage        *copilotUsage     `json:"usage"`
	} `json:"data"`
}

type copilotUsage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
}

// maxCopilotPaste bounds the read of a paste Copilot saved to a file.
const maxCopilotPaste = 64 << 20

// LastReply implements ReplyReader for the session log: the turn is the
// last user.message whose content is prompt (or names the file Copilot
// saved prompt to, for a long paste); its reply is recorded once an
// assistant.message without tool requests follows (the model's last call
// of the turn), and is the last non-empty assistant content of the turn,
// byte for byte as the model sent it.
func (Copilot) LastReply(r io.Reader, prompt string) (string, bool) {
	text, ended, in := "", false, false
	eachLine(r, maxUsageLine, func(line []byte) {
		if !bytes.Contains(line, []byte(`"type":"user.message"`)) && !bytes.Contains(line, []byte(`"type":"assistant.message"`)) {
			return
		}
		var rec copilotRecord
		if json.Unmarshal(line, &rec) != nil {
			return
		}
		switch rec.Type {
		case "user.message":
			in = rec.Data.Content != nil && copilotPromptIs(*rec.Data.Content, prompt)
			text, ended = "", false
		case "assistant.message":
			if !in {
				return
			}
			if rec.Data.Content != nil && *rec.Data.Content != "" {
				text = *rec.Data.Content
			}
			ended = len(rec.Data.ToolRequests) == 0
		}
	})
	return text, ended
}

// copilotPromptIs reports whether a session log's user message content is
// prompt: the prompt itself, or the `<pasted_content file="F" …/>` Copilot
// writes for a long paste it saved to F, when F holds prompt.
func copilotPromptIs(content, prompt string) bool {
	if PromptMatches(content, prompt) {
		return true
	}
	m := copilotPastedRE().FindStringSubmatch(content)
	if m == nil || len(prompt) > maxCopilotPaste {
		return false
	}
	data, err := readBounded(m[1], int64(len(prompt))+4096)
	return err == nil && PromptMatches(string(data), prompt)
}

// copilotPastedRE is Copilot 1.0.102's reference to a paste it saved.
var copilotPastedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^<pasted_content file="([^"]+)" size="[^"]*" lines="\d+" />$`)
})

// ParseTranscriptLine maps the session log's records no hook reports: an
// aborted turn ("abort": Ctrl-C while working, or Esc at the approval
// dialog; no agentStop follows) and a failed one ("session.error": the
// model call failed and the turn ended; errorOccurred ran before it, but
// says "recoverable" either way).
func (Copilot) ParseTranscriptLine(line []byte) Evidence {
	if !bytes.Contains(line, []byte(`"type":"abort"`)) && !bytes.Contains(line, []byte(`"type":"session.error"`)) {
		return Evidence{Kind: KindIgnored}
	}
	var r copilotRecord
	if json.Unmarshal(line, &r) != nil {
		return Evidence{Kind: KindIgnored}
	}
	switch r.Type {
	case "abort":
		return Evidence{Kind: KindInterrupted, Event: "log:abort", Reason: "aborted"}
	case "session.error":
		msg := strings.TrimSpace(r.Data.Message)
		if msg == "" {
			msg = "the model call failed without details"
		}
		return Evidence{Kind: KindStopFailure, Event: "log:session.error", Error: clipText(msg, 1024)}
	}
	return Evidence{Kind: KindIgnored}
}

// copilotTurnID is the turn id dlgt gives a Copilot turn: Copilot's hooks
// name none, but userPromptSubmitted carries the exact prompt and the
// session log's user message records it.
func copilotTurnID(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return "prompt-" + hex.EncodeToString(sum[:8])
}

// TurnUsage sums the session.usage_record entries of the turn: from its
// user message (the last one whose prompt has turnID, else the first one
// in r when turnID is empty) to the next user message. The turn has ended
// once an assistant message with no tool requests, an abort or a session
// error follows it.
func (Copilot) TurnUsage(r io.Reader, turnID string) (*rpc.Usage, TurnState) {
	var sum usageSum
	seen, in, ended := false, false, false
	eachLine(r, maxUsageLine, func(line []byte) {
		if !bytes.Contains(line, []byte(`"type":"`)) {
			return
		}
		var rec copilotRecord
		if json.Unmarshal(line, &rec) != nil {
			return
		}
		switch rec.Type {
		case "user.message":
			mine := !seen && turnID == ""
			if turnID != "" && rec.Data.Content != nil {
				mine = copilotTurnID(*rec.Data.Content) == turnID
			}
			if !mine {
				in = false
				return
			}
			sum, seen, in, ended = usageSum{}, true, true, false
		case "session.usage_record":
			if in && rec.Data.Usage != nil {
				u := rec.Data.Usage
				sum.add(max(u.InputTokens, 0), max(u.CacheReadTokens, 0), max(u.CacheWriteTokens, 0), max(u.OutputTokens, 0), 0)
			}
		case "assistant.message":
			if in {
				ended = len(rec.Data.ToolRequests) == 0
			}
		case "abort", "session.error":
			if in {
				ended = true
			}
		}
	})
	state := TurnUnseen
	switch {
	case ended:
		state = TurnEnded
	case seen:
		state = TurnOpen
	}
	return sum.result(), state
}

// copilotDialogShown is on every approval dialog of Copilot 1.0.102
// ("↑/↓ to navigate · enter to select · esc to cancel"): the answer's
// keys wait for it, since the notification hook may arrive before the
// dialog is drawn. copilotDialogTimeout bounds that wait.
const (
	copilotDialogShown   = "enter to select"
	copilotDialogTimeout = 10 * time.Second
)

// AnswerKeys answers the approval dialog announced by notification
// permission_prompt once it is drawn: allow is Enter on its first,
// selected option ("1. Yes": the tool runs, postToolUse follows); deny is
// Esc ("Esc to stop"), which cancels the call and the whole turn (the
// log's "abort"). The dialog's second option asks for a message in the
// TUI itself; a deny with a message is refused.
func (Copilot) AnswerKeys(decision, message string) ([]Keystroke, error) {
	if message != "" {
		return nil, rpc.InvalidField("message", "GitHub Copilot CLI's approval dialog takes no message from dlgt: deny declines the call and ends the turn; send the message as the next prompt")
	}
	key := []byte{0x1b}
	if decision == rpc.DecisionAllow {
		key = []byte{'\r'}
	}
	return []Keystroke{{Data: key, Await: &Await{Shown: []string{copilotDialogShown}, Timeout: copilotDialogTimeout}}}, nil
}

// DenyEndsTurn: Esc at Copilot's dialog aborts the turn.
func (Copilot) DenyEndsTurn() bool { return true }

// copilotLaunchHints are Copilot 1.0.102's screens that hold a launch.
var copilotLaunchHints = []screenHint{
	{[]string{"Confirm folder trust"},
		"GitHub Copilot CLI asks whether to trust this folder: run `copilot` once in it in a terminal and choose \"Yes, and remember this folder\""},
}

// LaunchHint recognises Copilot's folder-trust dialog.
func (Copilot) LaunchHint(rows []string) string { return matchScreen(rows, copilotLaunchHints) }
