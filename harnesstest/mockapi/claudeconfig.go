package mockapi

// ClaudeOfflineEnv is the environment (NAME=value entries) that keeps
// Claude Code 2.1.332 from contacting anything but the mock its
// ANTHROPIC_BASE_URL names: nonessential traffic and the auto-updater
// off, and the official plugin marketplace's auto-install off (without
// it, even with nonessential traffic off, every start downloads the
// marketplace from downloads.claude.ai and, failing that, clones
// github.com/anthropics/claude-plugins-official over HTTPS and SSH).
func ClaudeOfflineEnv() []string {
	return []string{
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1",
		"DISABLE_AUTOUPDATER=1",
	}
}
