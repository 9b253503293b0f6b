package harness

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// ClaudeTestedVersion is the Claude Code release dlgt's end-to-end tests pin.
const ClaudeTestedVersion = "2.1.332"

// Claude is the Claude Code adapter. Lifecycle comes from hooks injected
// with --settings into this child only; the user's settings files are
// never edited.
type Claude struct{}

// claudeHookEvents are the hook events dlgt subscribes to.
var claudeHookEvents = []string{
	"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
	"PostToolUseFailure", "PermissionRequest", "Notification", "Stop",
	"StopFailure", "SessionEnd",
}

// claudeManaged are flags dlgt sets itself; harness_options may not.
var claudeManaged = map[string]bool{
	"session-id": true, "resume": true, "continue": true, "fork-session": true,
	"settings": true, "print": true, "p": true, "model": true, "effort": true,
	"output-format": true, "input-format": true, "setting-sources": true,
	"dangerously-skip-permissions": true,
}

var optionKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`) })

// Claude Code's name, and the variable and executable Binary looks for.
const (
	claudeName    = "claude"
	claudeBinEnv  = "DLGT_CLAUDE_BIN"
	claudeBinName = "claude"
)

// claudeDescriptor is Claude Code's entry in the registry (registry.go).
func claudeDescriptor() Descriptor {
	return Descriptor{
		Name: claudeName, DisplayName: "Claude Code", Harness: Claude{},
		BinEnv: claudeBinEnv, BinName: claudeBinName,
		Install: "npm install -g @anthropic-ai/claude-code@" + ClaudeTestedVersion,
		// Claude Code reads user skills from $CLAUDE_CONFIG_DIR/skills
		// when that is set (measured with the pinned CLI), else
		// ~/.claude/skills.
		Config:      ConfigDir{Env: "CLAUDE_CONFIG_DIR", Home: ".claude"},
		SkillsDir:   "skills",
		MCP:         MCPClaudeJSON,
		ProviderEnv: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
		LegacyFlag:  true,
	}
}

func (Claude) Name() string { return claudeName }

func (Claude) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{
		Name:            claudeName,
		TestedVersion:   ClaudeTestedVersion,
		LifecycleSource: "hooks",
		Capabilities: rpc.HarnessCapabilities{
			Resume: true, Cancel: true, Steering: true, Queue: true, HarnessOptions: true,
			AutoApprove: true, Blocking: true,
			EffortLevels: []string{"low", "medium", "high", "xhigh", "max"},
		},
		ScreenMode: rpc.ScreenInline,
	}
}

// claudeInlineEnv keeps Claude Code on the main screen, so that its
// conversation scrolls off the top into stable rows as in any terminal
// (Claude Code 2.1.332 then never writes ESC[?1049h).
const claudeInlineEnv = "CLAUDE_CODE_DISABLE_ALTERNATE_SCREEN"

// Binary is DLGT_CLAUDE_BIN from the client environment, else claude on
// the client's PATH.
func (Claude) Binary(env map[string]string) (string, error) {
	return findBinary(env, claudeBinEnv, claudeBinName)
}

func findBinary(env map[string]string, override, name string) (string, error) {
	if p := env[override]; p != "" {
		return p, nil
	}
	path := env["PATH"]
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		cand := filepath.Join(dir, name)
		if fi, err := os.Stat(cand); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil && path == "" {
		return p, nil
	}
	return "", fmt.Errorf("%s not found: set %s or put %s on PATH", name, override, name)
}

// claudeModels is model.list for Claude Code. Claude Code has no offline
// model listing (its /model picker is built in and partly account
// dependent), so dlgt carries the names --model accepts in the tested
// version, taken from the 2.1.332 binary and checked against it with
// `claude -p hi --model NAME` on a mock server (the request's model shows
// what each resolves to with an API key):
//
//   - the family aliases (its "latest" aliases, the list in `claude
//     --help` names fable, opus and sonnet as examples): fable, opus,
//     sonnet, haiku, resolving to the full ids below;
//   - "default", the account's recommended model (Opus 5.5 with an API
//     key), and "best", the most capable one available;
//   - opusplan (Opus while planning, Sonnet otherwise) and the 1M-context
//     variants fable[1m], opus[1m], sonnet[1m], shown only with
//     include_hidden;
//   - the current full ids, listed as the models' ids.
//
// Any other name is passed through by Claude Code with an
// "unrecognized_model" warning; dlgt does not restrict --model to this list.
var claudeModels = []rpc.Model{
	{ID: "default", DisplayName: "Default (the account's recommended model)", Default: true},
	{ID: "claude-fable-5-2", DisplayName: "Fable 5.2", Aliases: []string{"fable"}},
	{ID: "claude-opus-5-5", DisplayName: "Opus 5.5", Aliases: []string{"opus"}},
	{ID: "claude-sonnet-5-5", DisplayName: "Sonnet 5.5", Aliases: []string{"sonnet"}},
	{ID: "claude-haiku-5-5", DisplayName: "Haiku 5.5", Aliases: []string{"haiku"}},
	{ID: "best", DisplayName: "The most capable model available", Hidden: true},
	{ID: "opusplan", DisplayName: "Opus in plan mode, Sonnet otherwise", Hidden: true},
	{ID: "fable[1m]", DisplayName: "Fable 5.2 with a 1M-token context", Hidden: true},
	{ID: "opus[1m]", DisplayName: "Opus 5.5 with a 1M-token context", Hidden: true},
	{ID: "sonnet[1m]", DisplayName: "Sonnet 5.5 with a 1M-token context", Hidden: true},
}

// Models lists the names Claude Code's --model accepts (see claudeModels);
// hidden entries only with includeHidden.
func (Claude) Models(includeHidden bool) rpc.ModelListResult {
	out := rpc.ModelListResult{Harness: claudeName, Source: "built-in list for Claude Code " + ClaudeTestedVersion, Models: []rpc.Model{}}
	for _, m := range claudeModels {
		if m.Hidden && !includeHidden {
			continue
		}
		m.Aliases = append([]string(nil), m.Aliases...)
		out.Models = append(out.Models, m)
	}
	return out
}

// ValidateOptions checks KEY=VALUE entries.
func (Claude) ValidateOptions(opts []string) error {
	for i, o := range opts {
		key, _, ok := strings.Cut(o, "=")
		field := fmt.Sprintf("harness_options[%d]", i)
		if !ok {
			return rpc.InvalidField(field, "%q is not KEY=VALUE", o)
		}
		if !optionKey().MatchString(key) {
			return rpc.InvalidField(field, "%q is not an option name", key)
		}
		if claudeManaged[key] {
			return rpc.InvalidField(field, "--%s is managed by dlgt and cannot be passed", key)
		}
	}
	return nil
}

func hasPermissionMode(opts []string) bool {
	for _, o := range opts {
		if strings.HasPrefix(o, "permission-mode=") {
			return true
		}
	}
	return false
}

// Prepare builds the launch: dlgt assigns the session id (or resumes it),
// injects hooks through --settings, marks the cwd trusted in the child's
// Claude state, and turns options into --KEY=VALUE.
func (c Claude) Prepare(spec Spec) (*Launch, error) {
	bin, err := c.Binary(spec.Env)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeLaunchFailed, "%v", err)
	}
	id := spec.ProviderID
	if id == "" {
		id = NewUUID()
	}
	web, note := spec.HookHTTP, ""
	if web != nil {
		if why := claudeHTTPHooksBlocked(spec.Env, spec.Cwd, claudeHookURLs(web)); why != "" {
			web, note = nil, why+": this launch's hooks run the forwarder command"
		}
	}
	settings, err := json.Marshal(claudeSettings(spec.HookArgv, web))
	if err != nil {
		return nil, err
	}
	argv := []string{bin}
	if spec.Resume {
		argv = append(argv, "--resume", id)
	} else {
		argv = append(argv, "--session-id", id)
	}
	argv = append(argv, "--settings", string(settings))
	if spec.Model != "" {
		argv = append(argv, "--model", spec.Model)
	}
	if spec.Effort != "" {
		argv = append(argv, "--effort", spec.Effort)
	}
	if spec.AutoApprove && !hasPermissionMode(spec.Options) {
		argv = append(argv, "--permission-mode=auto")
	}
	for _, o := range spec.Options {
		argv = append(argv, "--"+o)
	}
	if spec.Prompt != "" && !spec.Resume {
		// The positional [prompt] after "--": no option (a variadic
		// one from the harness options included) takes it, and a prompt
		// starting with "-" is not read as one.
		argv = append(argv, "--", spec.Prompt)
	}
	extra := map[string]string{"DISABLE_AUTOUPDATER": "1"}
	// Inline by default; a client environment that sets the variable
	// itself (to anything, "0" included) is the user's explicit choice
	// and is passed on as it is.
	if _, set := spec.Env[claudeInlineEnv]; !set {
		extra[claudeInlineEnv] = "1"
	}
	if web != nil {
		extra[HookTokenEnv] = web.Token
		// Claude Code sends http hooks through HTTP(S)_PROXY like its
		// other requests (seen here: a CONNECT to the proxy for a
		// 127.0.0.1 hook URL); a proxy elsewhere cannot reach the
		// daemon's loopback port, so loopback is exempted.
		for _, k := range []string{"NO_PROXY", "no_proxy"} {
			extra[k] = withLoopbackExempt(spec.Env[k])
		}
	}
	env := mergeEnv(spec.Env, extra)
	if home := spec.Env["HOME"]; home != "" {
		if err := trustClaudeProject(filepath.Join(home, ".claude.json"), spec.Cwd); err != nil {
			return nil, rpc.Errorf(rpc.CodeLaunchFailed, "marking %s trusted for Claude Code: %v", spec.Cwd, err)
		}
	}
	return &Launch{Argv: argv, Env: env, ProviderID: id, Note: note}, nil
}

// claudePostsHook reports whether Claude Code runs an http hook for ev:
// for every event but SessionStart ("HTTP hooks are not supported for
// SessionStart").
//
// PermissionRequest stays a command hook even then: its forwarder waits
// for an answer given through session.respond and prints the decision
// (ClaudePermissionWait), which an http hook's one exchange cannot.
func claudePostsHook(ev string) bool { return ev != "SessionStart" && ev != "PermissionRequest" }

// ClaudePermissionTimeout is the timeout (seconds) of the injected
// PermissionRequest hook. Claude Code 2.1.332 runs that hook while its
// permission dialog is on screen and takes whichever answers first: the
// hook's decision or the person's keys; a hook that ends with no decision
// leaves the dialog as it was. The forwarder waits for an answer for a
// little less than this (hookfwd.DecisionWait).
const ClaudePermissionTimeout = 600

// claudeHookURLs are the URLs of the http hooks claudeSettings makes.
func claudeHookURLs(web *HTTPHook) []string {
	var out []string
	for _, ev := range claudeHookEvents {
		if claudePostsHook(ev) {
			out = append(out, web.URL+"/"+ev)
		}
	}
	return out
}

// claudeSettings is the --settings object: one hook per event. With an
// HTTP endpoint, each event Claude Code can post (all but SessionStart,
// which it runs as commands only) is an http hook, whose Authorization
// header Claude fills from HookTokenEnv; the others run the dlgt hook
// forwarder with the event name.
func claudeSettings(hookArgv []string, web *HTTPHook) map[string]any {
	hooks := map[string]any{}
	for _, ev := range claudeHookEvents {
		var hook map[string]any
		if web != nil && claudePostsHook(ev) {
			hook = map[string]any{
				"type": "http", "url": web.URL + "/" + ev, "timeout": 30,
				"headers":        map[string]string{"Authorization": "Bearer ${" + HookTokenEnv + "}"},
				"allowedEnvVars": []string{HookTokenEnv},
			}
		} else {
			hook = map[string]any{"type": "command", "command": hookCommand(hookArgv, ev), "timeout": 30}
			if ev == "PermissionRequest" {
				hook["timeout"] = ClaudePermissionTimeout
			}
		}
		entry := map[string]any{"hooks": []any{hook}}
		if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PostToolUseFailure" || ev == "PermissionRequest" {
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	return map[string]any{"hooks": hooks}
}

// withLoopbackExempt adds 127.0.0.1 to a NO_PROXY list unless it is
// there already (or the list exempts everything).
func withLoopbackExempt(list string) string {
	for _, h := range strings.Split(list, ",") {
		if h = strings.TrimSpace(h); h == "127.0.0.1" || h == "*" {
			return list
		}
	}
	if strings.TrimSpace(list) == "" {
		return "127.0.0.1"
	}
	return list + ",127.0.0.1"
}

// trustClaudeProject sets projects[cwd].hasTrustDialogAccepted in the
// Claude state file, touching nothing else, replacing it atomically. It
// takes Claude's lock even when the project is already trusted: a lock
// left behind by a killed Claude is broken here once stale, before the
// next Claude starts (one that starts under it stalls).
func trustClaudeProject(path, cwd string) error {
	return withClaudeConfigLock(path, func() error {
		state := map[string]any{}
		mode := os.FileMode(0o600)
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		default:
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber() // keep Claude's numbers exactly as written
			if err := dec.Decode(&state); err != nil {
				return fmt.Errorf("%s is not valid JSON: %v", path, err)
			}
			if fi, err := os.Stat(path); err == nil {
				mode = fi.Mode().Perm()
			}
		}
		projects, _ := state["projects"].(map[string]any)
		if projects == nil {
			projects = map[string]any{}
		}
		proj, _ := projects[cwd].(map[string]any)
		if proj == nil {
			proj = map[string]any{}
		}
		if v, _ := proj["hasTrustDialogAccepted"].(bool); v {
			return nil
		}
		proj["hasTrustDialogAccepted"] = true
		projects[cwd] = proj
		state["projects"] = projects
		out, err := json.MarshalIndent(state, "", "  ")
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".claude.json.dlgt-*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(out); err != nil {
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
	})
}

// Claude Code guards its config file with a lock directory beside it
// (path + ".lock", created with mkdir, considered stale after 30 s): taking
// the same lock keeps a running Claude from rewriting the file between our
// read and our write and dropping the trust entry. A Claude killed while
// holding it leaves the lock behind, so the wait outlasts the staleness.
const (
	claudeLockStale = 30 * time.Second
	claudeLockWait  = claudeLockStale + 5*time.Second
)

func withClaudeConfigLock(path string, fn func() error) error {
	lock := path + ".lock"
	deadline := time.Now().Add(claudeLockWait)
	for {
		err := os.Mkdir(lock, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		if fi, serr := os.Stat(lock); serr == nil && time.Since(fi.ModTime()) > claudeLockStale {
			os.Remove(lock)
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s stays locked by another process (%s)", path, lock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer os.Remove(lock)
	return fn()
}

// Bracketed paste markers.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// claudePastePlaceholder starts the label Claude Code shows in its input
// box for a paste of more than 800 characters or 2 lines ("[Pasted text
// #1 +1485 lines]").
const claudePastePlaceholder = "[Pasted text "

// Submit clears the draft (Ctrl-U) and pastes the prompt as one bracketed
// paste once the TUI reads bracketed paste, then sends Enter as a
// separate write once the paste shows in the input box (see
// pasteSubmit): a large paste installs asynchronously, and Enter before
// it is lost.
func (Claude) Submit(prompt string) []Keystroke {
	return pasteSubmit(prompt, claudePastePlaceholder)
}

// ArgPrompt: Claude Code's interactive TUI takes an initial prompt as
// its positional argument (`claude [options] [prompt]`), submits it once
// it has started (after its SessionStart hook), and runs the turn's
// UserPromptSubmit hook as for a typed prompt.
func (Claude) ArgPrompt(prompt string) bool { return len(prompt) <= MaxArgPrompt }

// Interrupt is Esc, Claude Code's interrupt key.
func (Claude) Interrupt() []Keystroke { return []Keystroke{{Data: []byte{0x1b}}} }

// DismissDialog is Esc too: it declines a permission dialog.
func (Claude) DismissDialog() []Keystroke { return []Keystroke{{Data: []byte{0x1b}}} }

// How a canceled Claude Code turn is proven over (measured on 2.1.332):
//
// Claude Code fires no hook when Esc interrupts a turn, and no
// Notification(idle_prompt) afterwards either: idle_prompt follows only a
// turn that ended by itself (after messageIdleNotifThresholdMs, default
// 60000, a key of ~/.claude.json), and none came in 90 s after an
// interrupt with the threshold at 2 s. Two structured records do appear,
// within ~100 ms of the key:
//
//   - the session transcript gets a user entry written by the harness
//     ("rowSource":"harness", content one text block "[Request interrupted
//     by user]", or "... for tool use]" when a permission dialog was
//     declined), carrying the turn's promptId. ParseTranscriptLine maps it
//     to KindInterrupted; the daemon tails the transcript named by
//     SessionStart (harness.TranscriptSource).
//   - When the interrupt lands before the first streamed token, Claude
//     Code rewinds the turn instead: the prompt goes back into the input
//     box and the transcript gets no entry at all. The only record is the
//     per-process registry Claude Code keeps for its peers,
//     <config dir>/sessions/<pid>.json, whose "status" goes from "busy"
//     (or "waiting", with "waitingFor", while a dialog is up) to "idle"
//     with "statusUpdatedAt" in Unix ms. IdleSince reads it.
//
// Both are provider-written structured state, never screen text or
// output silence.

// StatusProber is implemented by harnesses that publish their own
// structured busy/idle status outside hooks (Claude Code's session
// registry). The daemon consults it only to prove that a turn it
// interrupted has ended.
type StatusProber interface {
	// IdleSince reports whether the harness process pid, whose session
	// transcript is transcript, recorded itself idle at or after since.
	IdleSince(transcript string, pid int, since time.Time) bool
}

// claudeInterruptMarker starts the user entry Claude Code writes to the
// transcript when a turn is interrupted.
const claudeInterruptMarker = "[Request interrupted by user"

// ParseTranscriptLine maps the transcript's interrupt marker to
// KindInterrupted (TurnID is the interrupted prompt's id); every other
// line is KindIgnored. A prompt a person typed is never taken for the
// marker: those are string content with origin.kind "human".
func (Claude) ParseTranscriptLine(line []byte) Evidence {
	if !bytes.Contains(line, []byte(claudeInterruptMarker)) {
		return Evidence{Kind: KindIgnored}
	}
	var entry struct {
		Type      string `json:"type"`
		RowSource string `json:"rowSource"`
		PromptID  string `json:"promptId"`
		Origin    struct {
			Kind string `json:"kind"`
		} `json:"origin"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &entry) != nil || entry.Type != "user" || entry.Message.Role != "user" ||
		entry.Origin.Kind == "human" || (entry.RowSource != "" && entry.RowSource != "harness") {
		return Evidence{Kind: KindIgnored}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(entry.Message.Content, &blocks) != nil || len(blocks) != 1 || blocks[0].Type != "text" {
		return Evidence{Kind: KindIgnored}
	}
	text := strings.TrimSpace(blocks[0].Text)
	if !strings.HasPrefix(text, claudeInterruptMarker) || !strings.HasSuffix(text, "]") || strings.Contains(text, "\n") {
		return Evidence{Kind: KindIgnored}
	}
	return Evidence{Kind: KindInterrupted, Event: "transcript:interrupted", TurnID: entry.PromptID, Reason: text}
}

// maxClaudeStatusFile bounds the registry file read.
const maxClaudeStatusFile = 1 << 20

// IdleSince reads <config dir>/sessions/<pid>.json, the config dir being
// the one holding the transcript (<config dir>/projects/<cwd>/<id>.jsonl,
// so CLAUDE_CONFIG_DIR is honoured), and reports status "idle", nothing
// awaited, for this very process, stamped at or after since.
func (Claude) IdleSince(transcript string, pid int, since time.Time) bool {
	projects := filepath.Dir(filepath.Dir(transcript))
	if transcript == "" || pid <= 0 || filepath.Base(projects) != "projects" {
		return false
	}
	f, err := os.Open(filepath.Join(filepath.Dir(projects), "sessions", fmt.Sprintf("%d.json", pid)))
	if err != nil {
		return false
	}
	defer f.Close()
	var st struct {
		PID             int    `json:"pid"`
		Status          string `json:"status"`
		WaitingFor      string `json:"waitingFor"`
		StatusUpdatedAt int64  `json:"statusUpdatedAt"`
	}
	data, err := io.ReadAll(io.LimitReader(f, maxClaudeStatusFile))
	if err != nil || json.Unmarshal(data, &st) != nil {
		return false // being rewritten: the next poll sees it whole
	}
	return st.PID == pid && st.Status == "idle" && st.WaitingFor == "" && st.StatusUpdatedAt >= since.UnixMilli()
}

// claudeHook is the union of the hook payload fields dlgt reads.
type claudeHook struct {
	SessionID            string          `json:"session_id"`
	HookEventName        string          `json:"hook_event_name"`
	TranscriptPath       string          `json:"transcript_path"`
	Source               string          `json:"source"`
	Prompt               *string         `json:"prompt"`
	PromptID             string          `json:"prompt_id"`
	LastAssistantMessage *string         `json:"last_assistant_message"`
	NotificationType     string          `json:"notification_type"`
	Message              string          `json:"message"`
	ToolName             string          `json:"tool_name"`
	ToolInput            json.RawMessage `json:"tool_input"`
	Reason               string          `json:"reason"`
	Error                json.RawMessage `json:"error"`
	ErrorDetails         json.RawMessage `json:"error_details"`
}

// ParseHook maps a Claude Code hook payload to evidence. The event name
// comes from dlgt's own injected command line, and must agree with the
// payload's hook_event_name when it has one.
func (Claude) ParseHook(event string, payload []byte) (Evidence, error) {
	var h claudeHook
	if t := bytes.TrimSpace(payload); len(t) == 0 || t[0] != '{' {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object")
	}
	if err := json.Unmarshal(payload, &h); err != nil {
		return Evidence{}, fmt.Errorf("hook payload is not a JSON object: %v", err)
	}
	if h.HookEventName != "" && h.HookEventName != event {
		return Evidence{}, fmt.Errorf("hook event %q carries payload for %q", event, h.HookEventName)
	}
	ev := Evidence{Event: event, ProviderID: h.SessionID, TurnID: h.PromptID, Transcript: h.TranscriptPath}
	switch event {
	case "SessionStart":
		ev.Kind, ev.Reason = KindReady, h.Source
	case "UserPromptSubmit":
		ev.Kind, ev.Prompt = KindPromptSubmitted, h.Prompt
		if h.Prompt != nil {
			p := unwrapClaudePastes(*h.Prompt)
			ev.Prompt = &p
		}
	case "PermissionRequest":
		ev.Kind, ev.Reason, ev.Tool, ev.Command = KindBlocked, "permission", h.ToolName, toolCommand(h.ToolInput)
		ev.Input, ev.Answerable = ToolInputText(h.ToolInput), !claudeAsksUser[h.ToolName]
	case "Notification":
		switch h.NotificationType {
		case "permission_prompt":
			ev.Kind, ev.Reason = KindBlocked, "permission"
		case "elicitation_dialog":
			ev.Kind, ev.Reason = KindBlocked, "user_input"
		case "idle_prompt":
			ev.Kind = KindIdlePrompt
		}
	case "PreToolUse":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolStarted, payload)
	case "PostToolUse":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolCompleted, payload)
	case "PostToolUseFailure":
		ev.Kind, ev.Tool, ev.ToolCall = KindActivity, h.ToolName, parseToolCall(ToolFailed, payload)
	case "Stop":
		ev.Kind, ev.FinalText = KindStop, h.LastAssistantMessage
	case "StopFailure":
		ev.Kind, ev.Error = KindStopFailure, stopFailureError(h)
	case "SessionEnd":
		ev.Kind, ev.Reason = KindSessionEnd, h.Reason
	default:
		ev.Kind = KindIgnored
	}
	return ev, nil
}

// claudeAsksUser are the Claude Code 2.1.332 tools that require the
// person's interaction (requiresUserInteraction in its bundle): a
// PermissionRequest hook's allow without new input is ignored for them and
// the dialog stays, so dlgt offers no answer to them (a question, such as
// AskUserQuestion's, is not a permission).
var claudeAsksUser = map[string]bool{
	"AskUserQuestion": true, "ExitPlanMode": true, "OfferChromeSetup": true,
	"PublishPlugin": true, "SendToProject": true,
}

// DecisionOutput is the PermissionRequest hook's stdout for a decision
// (the hookSpecificOutput format of Claude Code 2.1.332): allow, or deny
// with the message the model receives. It grants this one call only (no
// updatedPermissions, no updatedInput).
func (Claude) DecisionOutput(event, decision, message string) ([]byte, bool) {
	if event != "PermissionRequest" {
		return nil, false
	}
	d := map[string]any{"behavior": decision}
	switch decision {
	case "allow":
	case "deny":
		if message != "" {
			d["message"] = message
		}
	default:
		return nil, false
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": d}})
	return out, true
}

// unwrapClaudePastes undoes the tagging Claude Code (2.1.x) applies to
// pasted text: a paste of more than 800 characters or 2 lines is shown as
// "[Pasted text #N +M lines]" and submitted (to the model and in the
// UserPromptSubmit hook) as
//
//	"\n\n<pasted_content id=\"abcd\">\n" + text + "\n</pasted_content id=\"abcd\">\n"
//
// dlgt pastes every prompt, so without this a long or multi-line prompt
// never matches its UserPromptSubmit echo. Like Claude Code's own
// unwrapping, up to two newlines are dropped on each side of a block and
// the pieces are joined as they are; text with no block is returned as is.
func unwrapClaudePastes(s string) string {
	const opener = `<pasted_content id="`
	isHex4 := func(id string) bool {
		for i := 0; i < len(id); i++ {
			if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return len(id) == 4
	}
	var b strings.Builder
	t, r, found := 0, 0, false
	for {
		i := strings.Index(s[r:], opener)
		if i < 0 {
			break
		}
		i += r
		o := i + len(opener)
		if o+7 > len(s) || !isHex4(s[o:o+4]) || s[o+4:o+7] != "\">\n" {
			r = o
			continue
		}
		u := o + 7 // body start
		closer := "</pasted_content id=\"" + s[o:o+4] + "\">"
		j := strings.Index(s[u-1:], "\n"+closer)
		if j < 0 {
			break
		}
		l := u - 1 + j + 1 // the closer's "<"
		f := i
		for d := 0; d < 2 && f > t && s[f-1] == '\n'; d++ {
			f--
		}
		b.WriteString(s[t:f])
		if l-1 > u {
			b.WriteString(s[u : l-1])
		}
		t = l + len(closer)
		for d := 0; d < 2 && t < len(s) && s[t] == '\n'; d++ {
			t++
		}
		r, found = t, true
	}
	if !found {
		return s
	}
	b.WriteString(s[t:])
	return b.String()
}

// toolCommand extracts a shell command from a tool input, when it has one.
func toolCommand(input json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) == nil {
		return clipText(in.Command, 512)
	}
	return ""
}

// sanitizeError turns a provider error value into a bounded message.
// stopFailureError is the readable message of a StopFailure. Claude Code
// sends a category string as "error" ("rate_limit", "server_error", often
// just "unknown") and the text the person would have seen ("API Error: 400
// ...") as last_assistant_message: the message carries that text, after the
// category when the category says something the text does not.
func stopFailureError(h claudeHook) string {
	var category string
	if len(h.Error) > 0 && json.Unmarshal(h.Error, &category) != nil {
		return sanitizeError(h.Error) // a structured error carries its own message
	}
	category = strings.TrimSpace(category)
	var text string
	if h.LastAssistantMessage != nil {
		text = strings.TrimSpace(*h.LastAssistantMessage)
	}
	if text == "" {
		var details string
		if json.Unmarshal(h.ErrorDetails, &details) == nil {
			text = strings.TrimSpace(details)
		}
	}
	switch {
	case text == "":
		return sanitizeError(h.Error)
	case category == "" || category == "unknown" || strings.Contains(text, category):
		return clipText(text, 1024)
	default:
		return clipText(category+": "+text, 1024)
	}
}

func sanitizeError(raw json.RawMessage) string {
	const unknown = "the provider reported a failure without details"
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return unknown
		}
		return clipText(s, 1024)
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		msg := strings.Trim(strings.TrimSpace(obj.Type+": "+obj.Message), ": ")
		if msg == "" {
			return unknown
		}
		return clipText(msg, 1024)
	}
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return unknown
	}
	return clipText(string(raw), 1024)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// mergeEnv renders base overlaid with extra as KEY=VALUE entries.
func mergeEnv(base, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for k, v := range base {
		if _, over := extra[k]; !over {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// hookCommand is the shell command line of one injected command hook:
// the forwarder's argv with the event name appended, after "exec". Both
// harnesses run a command hook through a shell (Claude Code through
// /bin/sh -c, Codex through bash -c, checked with the real CLIs); dash,
// the usual /bin/sh, forks once more for a command that is not exec'd
// (0.15 ms a hook here: docs/design.md, "Hook forwarder").
func hookCommand(hookArgv []string, ev string) string {
	return "exec " + shellQuote(append(append([]string{}, hookArgv...), ev))
}

// shellQuote renders argv as one POSIX shell command line (hooks are run
// by the harness through a shell).
func shellQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// NewUUID returns a random RFC 4122 version 4 UUID.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
