// Package setup is what `dlgt mcp config`, `dlgt mcp install` and `dlgt
// skill install` do to a leader harness's files, apart from their
// commands and output (which stay in cmd/dlgt).
//
// MCP server entry: ServerSpec is the one entry (the dlgt executable, its
// arguments, approval, the variables a Codex leader forwards by name,
// ForwardEnv); ClaudeArgs and CodexArgs render it as per-launch
// arguments, InstallClaude and InstallCodex write it into the harness's
// user config. An install is a splice: the rest of the file stays byte
// for byte, the edited document is parsed again and compared with the
// original plus the entry before anything is written, a file that
// already holds the entry is left alone (Unchanged), and a changed one is
// first copied to FILE.dlgt-backup-TIME and its change returned as a
// unified diff (EditFile, File).
//
// Skill: SkillTargets resolves where each harness loads user skills from;
// InstallSkill writes the guide there atomically (mode 0644, missing
// directories 0755, a symlinked copy written through) unless it is
// already current, and CheckSkill reports current, stale or missing.
//
// The failures of EditFile, the installers and SkillTargets are
// INVALID_ARGUMENT *rpc.Error values saying whether anything was changed
// and what to do; InstallSkill's are plain errors its caller words.
package setup
