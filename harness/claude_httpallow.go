package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// claudeManagedDir holds Claude Code's managed settings on Linux
// (managed-settings.json and managed-settings.d/*.json); a variable so
// tests can point it elsewhere.
var claudeManagedDir = "/etc/claude-code"

// maxClaudeSettingsFile bounds one settings file read for the check.
const maxClaudeSettingsFile = 4 << 20

// claudeHTTPHooksBlocked says why Claude Code would not deliver dlgt's
// http hooks (to hookURLs) for a launch in cwd with env, or "" when it
// would. Two settings, read from every source Claude Code merges
// (managed, user, project, local), can stop them: allowedHttpHookUrls, a
// list of URL patterns with * wildcards (globMatch) that the hook URL
// must match, and
// httpHookAllowedEnvVars, a list the token's variable must be in (else
// Claude sends the header with the token left out). Checked here against
// the real CLI: a user's allowedHttpHookUrls without 127.0.0.1 drops the
// hook, an httpHookAllowedEnvVars without the variable empties the header.
// A launch they would stop gets command hooks instead.
func claudeHTTPHooksBlocked(env map[string]string, cwd string, hookURLs []string) string {
	var urls, vars []string
	urlsSet, varsSet := false, false
	for _, path := range claudeSettingsSources(env, cwd) {
		s, ok := readClaudeHookPolicy(path)
		if !ok {
			continue
		}
		if s.AllowedHTTPHookURLs != nil {
			urlsSet = true
			urls = append(urls, *s.AllowedHTTPHookURLs...)
		}
		if s.HTTPHookAllowedEnvVars != nil {
			varsSet = true
			vars = append(vars, *s.HTTPHookAllowedEnvVars...)
		}
	}
	for _, u := range hookURLs {
		if urlsSet && !slices.ContainsFunc(urls, func(p string) bool { return globMatch(p, u) }) {
			return fmt.Sprintf("Claude Code's allowedHttpHookUrls (%s) does not allow %s", strings.Join(urls, ", "), u)
		}
	}
	if varsSet && !slices.Contains(vars, HookTokenEnv) {
		return fmt.Sprintf("Claude Code's httpHookAllowedEnvVars (%s) does not list %s", strings.Join(vars, ", "), HookTokenEnv)
	}
	return ""
}

// ClaudeHTTPHooksBlocked is claudeHTTPHooksBlocked for the endpoint of
// any daemon (its port is drawn when it starts), for dlgt doctor.
func ClaudeHTTPHooksBlocked(env map[string]string, cwd string) string {
	return claudeHTTPHooksBlocked(env, cwd, claudeHookURLs(&HTTPHook{URL: "http://127.0.0.1:0/hook/internal:0"}))
}

// claudeSettingsSources are the settings files Claude Code reads for a
// session in cwd, managed first.
func claudeSettingsSources(env map[string]string, cwd string) []string {
	paths := []string{filepath.Join(claudeManagedDir, "managed-settings.json")}
	if extra, err := filepath.Glob(filepath.Join(claudeManagedDir, "managed-settings.d", "*.json")); err == nil {
		paths = append(paths, extra...)
	}
	configDir := env["CLAUDE_CONFIG_DIR"]
	if configDir == "" && env["HOME"] != "" {
		configDir = filepath.Join(env["HOME"], ".claude")
	}
	if configDir != "" {
		paths = append(paths, filepath.Join(configDir, "settings.json"))
	}
	if cwd != "" {
		paths = append(paths, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	}
	return paths
}

// claudeHookPolicy is the part of a settings file the check reads; a nil
// list is one the file does not set.
type claudeHookPolicy struct {
	AllowedHTTPHookURLs    *[]string `json:"allowedHttpHookUrls"`
	HTTPHookAllowedEnvVars *[]string `json:"httpHookAllowedEnvVars"`
}

// readClaudeHookPolicy reads path's policy; a missing, unreadable or
// malformed file sets nothing (Claude Code skips such a file too).
func readClaudeHookPolicy(path string) (claudeHookPolicy, bool) {
	var p claudeHookPolicy
	f, err := os.Open(path)
	if err != nil {
		return p, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxClaudeSettingsFile))
	if err != nil || json.Unmarshal(data, &p) != nil {
		return claudeHookPolicy{}, false
	}
	return p, true
}

// globMatch matches s against pattern, * standing for any run of
// characters (including none).
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}
