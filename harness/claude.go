package harness

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"dlgt/rpc"
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
	"PermissionRequest", "Notification", "Stop", "StopFailure", "SessionEnd",
}

// claudeManaged are flags dlgt sets itself; harness_options may not.
var claudeManaged = map[string]bool{
	"session-id": true, "resume": true, "continue": true, "fork-session": true,
	"settings": true, "print": true, "p": true, "model": true, "effort": true,
	"output-format": true, "input-format": true, "setting-sources": true,
	"dangerously-skip-permissions": true,
}

var optionKey = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

func (Claude) Name() string { return "claude" }

func (Claude) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{
		Name:            "claude",
		TestedVersion:   ClaudeTestedVersion,
		LifecycleSource: "hooks",
		Capabilities: rpc.HarnessCapabilities{
			Resume: true, Cancel: true, Steering: false, HarnessOptions: true,
			AutoApprove: true, Blocking: true,
			EffortLevels: []string{"low", "medium", "high", "xhigh", "max"},
		},
	}
}

// Binary is DLGT_CLAUDE_BIN from the client environment, else claude on
// the client's PATH.
func (Claude) Binary(env map[string]string) (string, error) {
	return findBinary(env, "DLGT_CLAUDE_BIN", "claude")
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

// Models lists the names Claude Code's --model accepts: its aliases and
// the current full ids. The list is built into dlgt (Claude Code has no
// offline model listing) and matches the tested version.
func (Claude) Models(includeHidden bool) rpc.ModelListResult {
	models := []rpc.Model{
		{ID: "default", DisplayName: "Default (account's recommended model)", Default: true},
		{ID: "opus", DisplayName: "Opus (latest)", Aliases: []string{"opus"}},
		{ID: "sonnet", DisplayName: "Sonnet (latest)", Aliases: []string{"sonnet"}},
		{ID: "haiku", DisplayName: "Haiku (latest)", Aliases: []string{"haiku"}},
		{ID: "opusplan", DisplayName: "Opus in plan mode, Sonnet otherwise", Hidden: true},
		{ID: "sonnet[1m]", DisplayName: "Sonnet with a 1M-token context", Hidden: true},
	}
	out := rpc.ModelListResult{Harness: "claude", Source: "built-in list for Claude Code " + ClaudeTestedVersion, Models: []rpc.Model{}}
	for _, m := range models {
		if m.Hidden && !includeHidden {
			continue
		}
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
		if !optionKey.MatchString(key) {
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
	settings, err := json.Marshal(claudeSettings(spec.HookArgv))
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
	env := mergeEnv(spec.Env, map[string]string{"DISABLE_AUTOUPDATER": "1"})
	if home := spec.Env["HOME"]; home != "" {
		if err := trustClaudeProject(filepath.Join(home, ".claude.json"), spec.Cwd); err != nil {
			return nil, rpc.Errorf(rpc.CodeLaunchFailed, "marking %s trusted for Claude Code: %v", spec.Cwd, err)
		}
	}
	return &Launch{Argv: argv, Env: env, ProviderID: id}, nil
}

// claudeSettings is the --settings object: one command hook per event,
// each running the dlgt hook forwarder with the event name.
func claudeSettings(hookArgv []string) map[string]any {
	hooks := map[string]any{}
	for _, ev := range claudeHookEvents {
		cmd := shellQuote(append(append([]string{}, hookArgv...), ev))
		entry := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": 30}}}
		if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PermissionRequest" {
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	return map[string]any{"hooks": hooks}
}

// trustClaudeProject sets projects[cwd].hasTrustDialogAccepted in the
// Claude state file, touching nothing else, replacing it atomically.
func trustClaudeProject(path, cwd string) error {
	state := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &state); err != nil {
			return fmt.Errorf("%s is not valid JSON: %v", path, err)
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
	tmp := fmt.Sprintf("%s.dlgt-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Bracketed paste markers.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// Submit clears the draft (Ctrl-U), pastes the prompt as one bracketed
// paste, then sends Enter as a separate write after a settle delay that
// grows with the paste, because large pastes install asynchronously.
func (Claude) Submit(prompt string) []Keystroke {
	paste := make([]byte, 0, len(prompt)+12)
	paste = append(append(append(paste, pasteStart...), prompt...), pasteEnd...)
	settle := 250*time.Millisecond + time.Duration(len(prompt)/1024)*3*time.Millisecond
	return []Keystroke{
		{Data: []byte{0x15}},
		{Data: paste, Pause: 30 * time.Millisecond},
		{Data: []byte{'\r'}, Pause: settle},
	}
}

// Interrupt is Esc, Claude Code's interrupt key.
func (Claude) Interrupt() []Keystroke { return []Keystroke{{Data: []byte{0x1b}}} }

// DismissDialog is Esc too: it declines a permission dialog.
func (Claude) DismissDialog() []Keystroke { return []Keystroke{{Data: []byte{0x1b}}} }

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
}

// ParseHook maps a Claude Code hook payload to evidence. The event name
// comes from dlgt's own injected command line, and must agree with the
// payload's hook_event_name when it has one.
func (Claude) ParseHook(event string, payload []byte) (Evidence, error) {
	var h claudeHook
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
	case "Notification":
		switch h.NotificationType {
		case "permission_prompt":
			ev.Kind, ev.Reason = KindBlocked, "permission"
		case "elicitation_dialog":
			ev.Kind, ev.Reason = KindBlocked, "user_input"
		case "idle_prompt":
			ev.Kind = KindIdlePrompt
		}
	case "PreToolUse", "PostToolUse":
		ev.Kind, ev.Tool = KindActivity, h.ToolName
	case "Stop":
		ev.Kind, ev.FinalText = KindStop, h.LastAssistantMessage
	case "StopFailure":
		ev.Kind, ev.Error = KindStopFailure, sanitizeError(h.Error)
	case "SessionEnd":
		ev.Kind, ev.Reason = KindSessionEnd, h.Reason
	default:
		ev.Kind = KindIgnored
	}
	return ev, nil
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
func sanitizeError(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clipText(s, 1024)
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &obj) == nil && (obj.Message != "" || obj.Type != "") {
		return clipText(strings.TrimSpace(obj.Type+": "+obj.Message), 1024)
	}
	if len(raw) == 0 {
		return "provider reported a failure"
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
