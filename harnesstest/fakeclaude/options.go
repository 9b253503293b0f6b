package fakeclaude

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// options is the parsed command line.
type options struct {
	sessionID string
	resume    bool
	settings  string // --settings value: inline JSON or a file path
	model     string
	effort    string
	permMode  string
	prompt    string // optional positional initial prompt
}

// config is the test knobs read from the environment.
type config struct {
	startup      time.Duration // FAKECLAUDE_STARTUP_MS: delay before SessionStart
	idle         time.Duration // FAKECLAUDE_IDLE_MS: turn end -> idle_prompt Notification
	permNotify   time.Duration // FAKECLAUDE_PERMISSION_NOTIFY_MS: dialog -> permission_prompt Notification
	silentHooks  bool          // FAKECLAUDE_SILENT_HOOKS=1: fire no hooks at all
	submitDelay  time.Duration // FAKECLAUDE_SUBMIT_DELAY_MS: prompt taken -> UserPromptSubmit (a loaded machine)
	sessionEndTO time.Duration // bound on waiting for SessionEnd hooks before exiting
	// FAKECLAUDE_EXIT_SCREEN: print this text (rows separated by "\n")
	// and exit 1 before any hook, as the real CLI does when its first-run
	// setup cannot go on (offline: "Unable to connect to Anthropic
	// services").
	exitScreen string
}

// defaultModel is what the real TUI reported in SessionStart.model when no
// --model was given (claude-hooks-tui-observed.jsonl).
const defaultModel = "claude-opus-5-5"

// version is the Claude Code release this fake imitates.
const version = "2.1.332"

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

	permModes    = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}
	effortLevels = []string{"low", "medium", "high", "xhigh", "max"}
)

// valueFlags are the options that take a value, as `--flag value` or
// `--flag=value`. Every other `--name[=value]` is accepted and ignored, as
// dlgt passes harness options through as --KEY=VALUE.
var valueFlags = map[string]bool{
	"session-id": true, "resume": true, "settings": true, "model": true,
	"effort": true, "permission-mode": true,
}

// parseArgs parses the argv the Claude adapter builds. Errors are worded
// like the real CLI's (commander) so a failing launch reads the same.
func parseArgs(args []string) (options, error) {
	o := options{permMode: "auto"} // the default mode of Claude Code 2.1.332
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		var name, val string
		var hasVal bool
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal = strings.Cut(a[2:], "=")
		case a == "-r":
			name = "resume"
		case a == "-p" || a == "-c":
			return o, fmt.Errorf("%s is not supported by fakeclaude", a)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			continue // unknown short flag: ignored
		default:
			positional = append(positional, a)
			continue
		}
		switch name {
		case "print", "continue", "fork-session":
			return o, fmt.Errorf("--%s is not supported by fakeclaude", name)
		}
		if !valueFlags[name] {
			continue // unknown --k or --k=v: accepted and ignored
		}
		if !hasVal {
			if i+1 >= len(args) {
				return o, fmt.Errorf("error: option '--%s <value>' argument missing", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "session-id":
			o.sessionID = val
		case "resume":
			o.sessionID, o.resume = val, true
		case "settings":
			o.settings = val
		case "model":
			o.model = val
		case "effort":
			if !contains(effortLevels, val) {
				return o, fmt.Errorf("error: option '--effort <level>' argument '%s' is invalid. Allowed choices are %s.", val, strings.Join(effortLevels, ", "))
			}
			o.effort = val
		case "permission-mode":
			if !contains(permModes, val) {
				return o, fmt.Errorf("error: option '--permission-mode <mode>' argument '%s' is invalid. Allowed choices are %s.", val, strings.Join(permModes, ", "))
			}
			o.permMode = val
		}
	}
	if o.sessionID != "" && !uuidRE.MatchString(o.sessionID) {
		return o, fmt.Errorf("Error: Invalid session ID. Must be a valid UUID.")
	}
	if len(positional) > 0 {
		o.prompt = positional[0]
	}
	return o, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// loadConfig reads the FAKECLAUDE_* knobs.
func loadConfig() config {
	return config{
		startup:      envMS("FAKECLAUDE_STARTUP_MS", 300),
		idle:         envMS("FAKECLAUDE_IDLE_MS", 60000),
		permNotify:   envMS("FAKECLAUDE_PERMISSION_NOTIFY_MS", 6500),
		silentHooks:  os.Getenv("FAKECLAUDE_SILENT_HOOKS") == "1",
		submitDelay:  envMS("FAKECLAUDE_SUBMIT_DELAY_MS", 0),
		sessionEndTO: 5 * time.Second,
		exitScreen:   os.Getenv("FAKECLAUDE_EXIT_SCREEN"),
	}
}

func envMS(name string, def int) time.Duration {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return time.Duration(v) * time.Millisecond
	}
	return time.Duration(def) * time.Millisecond
}
