package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/setup"
)

// runMCP runs `dlgt mcp ARGS` with vars as the environment and the
// binary at a fixed path; it returns the exit status and stdout.
func runMCP(t *testing.T, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	e, out, _ := testEnv(t, vars, "")
	e.Exe = "/opt/dlgt/bin/dlgt"
	code := run(append([]string{"mcp"}, args...), e)
	return code, out.String()
}

// installDoc decodes install's JSON line.
type installDoc struct {
	OK    bool         `json:"ok"`
	Files []setup.File `json:"files"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func runInstall(t *testing.T, vars map[string]string, args ...string) (int, installDoc) {
	t.Helper()
	code, out := runMCP(t, vars, append([]string{"install"}, args...)...)
	var d installDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("install %v: %v in %q", args, err, out)
	}
	return code, d
}

// codexEntryFromConfig is the server table `mcp config --codex ARGS`
// passes with -c, assembled as Codex does.
func codexEntryFromConfig(t *testing.T, vars map[string]string, args ...string) map[string]any {
	t.Helper()
	code, out := runMCP(t, vars, append([]string{"config", "--codex"}, args...)...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != cli.ExitOK || len(lines)%2 != 0 {
		t.Fatalf("mcp config: exit %d %q", code, out)
	}
	var entry map[string]any
	for i := 0; i < len(lines); i += 2 {
		var doc map[string]any
		if _, err := toml.Decode(lines[i+1], &doc); err != nil {
			t.Fatalf("-c %s: %v", lines[i+1], err)
		}
		v := doc["mcp_servers"].(map[string]any)["dlgt"]
		if m, ok := v.(map[string]any); ok && entry == nil {
			entry = m
			continue
		}
		for k, val := range v.(map[string]any) {
			entry[k] = val
		}
	}
	return entry
}

func backups(t *testing.T, path string) []string {
	t.Helper()
	m, _ := filepath.Glob(path + ".dlgt-backup-*")
	return m
}

const codexUserConfig = `model = "gpt-5"   # the user's model
approval_policy = "on-request"

[mcp_servers.other]
command = "other-server"
args = ["--x"]
env = { TOKEN = "t" }

[mcp_servers.dlgt]
command = "old-dlgt"
args = []

[mcp_servers.dlgt.env]
A = "1"

# the profile's comment
[profiles.fast]
model = "o4"
notes = """
[mcp_servers.dlgt]
command = "not a table"
"""
`

func TestMCPInstallCodex(t *testing.T) {
	codexHome := t.TempDir()
	path := filepath.Join(codexHome, "config.toml")
	if err := os.WriteFile(path, []byte(codexUserConfig), 0o640); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	code, d := runInstall(t, vars, "--codex")
	if code != cli.ExitOK || !d.OK || len(d.Files) != 1 || d.Files[0].Status != setup.Written || d.Files[0].Path != path {
		t.Fatalf("install: exit %d %+v", code, d)
	}
	f := d.Files[0]
	if !strings.Contains(f.Diff, "-command = \"old-dlgt\"\n") || !strings.Contains(f.Diff, "+required = true\n") ||
		!strings.Contains(f.Diff, "-A = \"1\"\n") || strings.Contains(f.Diff, "other-server") {
		t.Errorf("diff:\n%s", f.Diff)
	}
	if b := backups(t, path); len(b) != 1 || b[0] != f.Backup {
		t.Errorf("backups %v, reported %q", b, f.Backup)
	} else if data, _ := os.ReadFile(f.Backup); string(data) != codexUserConfig {
		t.Errorf("backup holds %q", data)
	}
	got, _ := os.ReadFile(path)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	// Everything but the entry is as it was, comments and the multi-line
	// string that looks like a header included.
	for _, keep := range []string{"# the user's model", "# the profile's comment", "notes = \"\"\"\n[mcp_servers.dlgt]\ncommand = \"not a table\"\n\"\"\"\n"} {
		if !strings.Contains(string(got), keep) {
			t.Errorf("lost %q:\n%s", keep, got)
		}
	}
	var before, after map[string]any
	toml.Decode(codexUserConfig, &before)
	if _, err := toml.Decode(string(got), &after); err != nil {
		t.Fatalf("written config does not parse: %v\n%s", err, got)
	}
	entry := after["mcp_servers"].(map[string]any)["dlgt"]
	if want := codexEntryFromConfig(t, vars); !reflect.DeepEqual(entry, want) {
		t.Errorf("installed entry %v\nmcp config prints %v", entry, want)
	}
	delete(after["mcp_servers"].(map[string]any), "dlgt")
	delete(before["mcp_servers"].(map[string]any), "dlgt")
	if !reflect.DeepEqual(after, before) {
		t.Errorf("other settings changed:\n%v\n%v", after, before)
	}

	// A second run changes nothing and says so.
	code, d = runInstall(t, vars, "--codex")
	if code != cli.ExitOK || d.Files[0].Status != setup.Unchanged || d.Files[0].Backup != "" || d.Files[0].Diff != "" {
		t.Errorf("second install: exit %d %+v", code, d)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, got) || len(backups(t, path)) != 1 {
		t.Errorf("second install changed the file or backed it up again")
	}
	code, out := runMCP(t, vars, "install", "--codex", "-o", "text")
	if code != cli.ExitOK || !strings.HasPrefix(out, "unchanged "+path) {
		t.Errorf("text: %q", out)
	}

	// --approve and --wait-max change the entry, as they change the snippet.
	code, d = runInstall(t, vars, "--codex", "--approve", "--wait-max", "60s")
	if code != cli.ExitOK || d.Files[0].Status != setup.Written {
		t.Fatalf("install --approve: exit %d %+v", code, d)
	}
	got, _ = os.ReadFile(path)
	after = nil
	toml.Decode(string(got), &after)
	if want := codexEntryFromConfig(t, vars, "--approve", "--wait-max", "60s"); !reflect.DeepEqual(after["mcp_servers"].(map[string]any)["dlgt"], want) {
		t.Errorf("installed %v\nwant %v", after["mcp_servers"], want)
	}
	if strings.Count(string(got), "[mcp_servers.dlgt]") != 2 { // the table and the string
		t.Errorf("config:\n%s", got)
	}
}

// A missing config (and directory) is created, with nothing to back up.
func TestMCPInstallCodexNewConfig(t *testing.T) {
	codexHome := filepath.Join(t.TempDir(), "codex")
	vars := map[string]string{"HOME": t.TempDir(), "CODEX_HOME": codexHome}
	code, d := runInstall(t, vars, "--codex")
	if code != cli.ExitOK || d.Files[0].Status != setup.Written || d.Files[0].Backup != "" {
		t.Fatalf("install: exit %d %+v", code, d)
	}
	var after map[string]any
	got, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if _, err := toml.Decode(string(got), &after); err != nil || !reflect.DeepEqual(after["mcp_servers"].(map[string]any)["dlgt"], codexEntryFromConfig(t, vars)) {
		t.Errorf("config (%v):\n%s", err, got)
	}
}

// A config install cannot edit safely is refused and left as it was.
func TestMCPInstallRefusesUnparsable(t *testing.T) {
	for name, c := range map[string]struct{ file, content, flag, want string }{
		"toml syntax":     {"config.toml", "model = \"gpt\nx = [\n", "--codex", "cannot parse it as TOML"},
		"dotted entry":    {"config.toml", "mcp_servers.dlgt = { command = \"x\" }\n", "--codex", "an inline table or dotted keys"},
		"inline entry":    {"config.toml", "[mcp_servers]\ndlgt = { command = \"x\" }\n", "--codex", "not written as a [mcp_servers.dlgt] table"},
		"inline servers":  {"config.toml", "mcp_servers = { other = { command = \"x\" } }\n", "--codex", "an inline table or dotted keys"},
		"array of tables": {"config.toml", "[[mcp_servers.dlgt]]\ncommand = \"x\"\n", "--codex", "array of tables"},
		"json syntax":     {".claude.json", "{\"a\": 1,,}", "--claude", "cannot parse it as JSON"},
		"json array":      {".claude.json", "[1]", "--claude", "not a JSON object"},
		"servers array":   {".claude.json", "{\"mcpServers\": []}", "--claude", "\"mcpServers\" is not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			os.WriteFile(path, []byte(c.content), 0o600)
			vars := map[string]string{"HOME": dir, "CODEX_HOME": dir}
			code, d := runInstall(t, vars, c.flag)
			if code != cli.ExitError || d.OK || d.Error.Code != "INVALID_ARGUMENT" || !strings.Contains(d.Error.Message, c.want) ||
				!strings.Contains(d.Error.Message, "nothing was changed") || !strings.Contains(d.Error.Message, path) {
				t.Errorf("exit %d %+v, want INVALID_ARGUMENT %q", code, d, c.want)
			}
			if got, _ := os.ReadFile(path); string(got) != c.content || len(backups(t, path)) != 0 {
				t.Errorf("file changed to %q, or backed up", got)
			}
		})
	}
}

const claudeUserState = `{
  "numStartups": 7,
  "projects": {
    "/src/app": {
      "hasTrustDialogAccepted": true,
      "allowedTools": ["Bash(ls)"]
    }
  },
  "mcpServers": {
    "other": {
      "type": "stdio",
      "command": "other-server",
      "args": ["<&>"],
      "env": {}
    }
  },
  "tipsHistory": {"x": 1.5e3}
}
`

func TestMCPInstallClaude(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".claude.json")
	os.WriteFile(path, []byte(claudeUserState), 0o600)
	settings := filepath.Join(home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	const userSettings = "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\"Bash(ls)\"],\n    \"deny\": []\n  }\n}\n"
	os.WriteFile(settings, []byte(userSettings), 0o644)
	vars := map[string]string{"HOME": home}

	code, d := runInstall(t, vars, "--claude")
	if code != cli.ExitOK || len(d.Files) != 1 || d.Files[0].Status != setup.Written || d.Files[0].Path != path {
		t.Fatalf("install: exit %d %+v", code, d)
	}
	got, _ := os.ReadFile(path)
	// A splice: the user's bytes before the new member are untouched.
	if head := claudeUserState[:strings.Index(claudeUserState, "\"env\": {}")]; !strings.HasPrefix(string(got), head) {
		t.Errorf("file:\n%s", got)
	}
	var before, after map[string]any
	json.Unmarshal([]byte(claudeUserState), &before)
	if err := json.Unmarshal(got, &after); err != nil {
		t.Fatalf("written file: %v\n%s", err, got)
	}
	code, out := runMCP(t, vars, "config", "--claude")
	var snippet struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	if lines := strings.Split(out, "\n"); code != cli.ExitOK || json.Unmarshal([]byte(lines[1]), &snippet) != nil {
		t.Fatalf("mcp config: %d %q", code, out)
	}
	servers := after["mcpServers"].(map[string]any)
	if !reflect.DeepEqual(servers["dlgt"], snippet.MCPServers["dlgt"]) {
		t.Errorf("installed %v\nmcp config prints %v", servers["dlgt"], snippet.MCPServers["dlgt"])
	}
	delete(servers, "dlgt")
	if !reflect.DeepEqual(after, before) {
		t.Errorf("other settings changed:\n%v\n%v", after, before)
	}
	if data, _ := os.ReadFile(d.Files[0].Backup); string(data) != claudeUserState {
		t.Errorf("backup %q holds %q", d.Files[0].Backup, data)
	}
	if !strings.Contains(d.Files[0].Diff, "+    \"dlgt\": {\n") || strings.Contains(d.Files[0].Diff, "numStartups") {
		t.Errorf("diff:\n%s", d.Files[0].Diff)
	}
	if s, _ := os.ReadFile(settings); string(s) != userSettings {
		t.Errorf("settings.json changed without --approve: %s", s)
	}

	code, d = runInstall(t, vars, "--claude")
	if code != cli.ExitOK || d.Files[0].Status != setup.Unchanged || len(backups(t, path)) != 1 {
		t.Errorf("second install: exit %d %+v", code, d)
	}

	// --approve adds the rule to the user's permissions, once.
	code, d = runInstall(t, vars, "--claude", "--approve")
	if code != cli.ExitOK || len(d.Files) != 2 || d.Files[0].Status != setup.Unchanged || d.Files[1].Status != setup.Written || d.Files[1].Path != settings {
		t.Fatalf("install --approve: exit %d %+v", code, d)
	}
	var st map[string]any
	s, _ := os.ReadFile(settings)
	if err := json.Unmarshal(s, &st); err != nil || st["model"] != "opus" ||
		!reflect.DeepEqual(st["permissions"], map[string]any{"allow": []any{"Bash(ls)", "mcp__dlgt"}, "deny": []any{}}) {
		t.Errorf("settings (%v):\n%s", err, s)
	}
	code, d = runInstall(t, vars, "--claude", "--approve")
	if code != cli.ExitOK || d.Files[0].Status != setup.Unchanged || d.Files[1].Status != setup.Unchanged {
		t.Errorf("second install --approve: exit %d %+v", code, d)
	}
}

// CLAUDE_CONFIG_DIR moves both files, as it moves them for Claude Code.
func TestMCPInstallClaudeConfigDir(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"HOME": t.TempDir(), "CLAUDE_CONFIG_DIR": dir}
	code, d := runInstall(t, vars, "--claude", "--approve")
	if code != cli.ExitOK || len(d.Files) != 2 || d.Files[0].Path != filepath.Join(dir, ".claude.json") || d.Files[1].Path != filepath.Join(dir, "settings.json") {
		t.Fatalf("install: exit %d %+v", code, d)
	}
	code, d = runInstall(t, map[string]string{"HOME": "relative"}, "--claude")
	if code != cli.ExitError || d.Error.Code != "INVALID_ARGUMENT" {
		t.Errorf("relative HOME: exit %d %+v", code, d)
	}
	code, d = runInstall(t, vars, "--claude", "--forward-env", "X")
	if code != cli.ExitError || !strings.Contains(d.Error.Message, "--forward-env is for --harness codex") {
		t.Errorf("--forward-env with --claude: exit %d %+v", code, d)
	}
}

// The pinned CLIs read what install wrote: `codex mcp list` and `claude
// mcp list` (offline; neither starts a model request).
func TestMCPInstallSeenByRealCLIs(t *testing.T) {
	codexBin := pinnedCLI(t, "DLGT_CODEX_BIN", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	claudeBin := pinnedCLI(t, "DLGT_CLAUDE_BIN", "@anthropic-ai", "claude-code-linux-x64", "claude")
	home, codexHome := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(codexUserConfig), 0o600)
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(claudeUserState), 0o600)
	vars := map[string]string{"HOME": home, "CODEX_HOME": codexHome}
	for _, h := range []string{"--codex", "--claude"} {
		if code, d := runInstall(t, vars, h); code != cli.ExitOK {
			t.Fatalf("install %s: %+v", h, d)
		}
	}
	list := func(bin string, args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Dir = home
		cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=/usr/bin:/bin",
			"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_API_KEY=sk-ant-none"}
		cmd.Env = append(cmd.Env, mockapi.ClaudeOfflineEnv()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
		}
		return string(out)
	}
	if out := list(codexBin, "mcp", "list", "--json"); !strings.Contains(out, `"/opt/dlgt/bin/dlgt"`) || !strings.Contains(out, `"other-server"`) {
		t.Errorf("codex mcp list:\n%s", out)
	}
	if out := list(claudeBin, "mcp", "get", "dlgt"); !strings.Contains(out, "/opt/dlgt/bin/dlgt") || !strings.Contains(out, "User") {
		t.Errorf("claude mcp get dlgt:\n%s", out)
	}
}

// Gemini CLI: the entry goes to its user settings.json ($GEMINI_CLI_HOME
// standing for the home), the rest of the file kept; --approve trusts
// the server (no confirmation of its tools). mcp config refuses: Gemini
// has no per-launch form. The pinned CLI lists the entry.
func TestMCPInstallGemini(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	os.MkdirAll(dir, 0o700)
	user := `{
  "model": {"name": "gemini-2.5-pro"},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "mcpServers": {"other": {"command": "other-server"}}
}
`
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(user), 0o600)
	vars := map[string]string{"HOME": home}
	code, d := runInstall(t, vars, "--harness", "gemini", "--approve")
	if code != cli.ExitOK || len(d.Files) != 1 || d.Files[0].Status != setup.Written || d.Files[0].Path != filepath.Join(dir, "settings.json") || d.Files[0].Backup == "" {
		t.Fatalf("install: exit %d %+v", code, d)
	}
	var got map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, "settings.json"))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	servers := got["mcpServers"].(map[string]any)
	want := map[string]any{"command": "/opt/dlgt/bin/dlgt", "args": []any{"mcp"}, "trust": true}
	if !reflect.DeepEqual(servers["dlgt"], want) || servers["other"] == nil || got["model"].(map[string]any)["name"] != "gemini-2.5-pro" {
		t.Fatalf("settings.json:\n%s", data)
	}
	if code, d := runInstall(t, vars, "--harness", "gemini", "--approve"); code != cli.ExitOK || d.Files[0].Status != setup.Unchanged {
		t.Fatalf("second install: exit %d %+v", code, d)
	}
	// GEMINI_CLI_HOME stands for the home.
	alt := t.TempDir()
	if code, d := runInstall(t, map[string]string{"HOME": home, "GEMINI_CLI_HOME": alt}, "--harness", "gemini"); code != cli.ExitOK || d.Files[0].Path != filepath.Join(alt, ".gemini", "settings.json") {
		t.Fatalf("with GEMINI_CLI_HOME: exit %d %+v", code, d)
	}
	if code, out := runMCP(t, vars, "config", "--harness", "gemini"); code != cli.ExitError || !strings.Contains(out, "dlgt mcp install --harness gemini") {
		t.Fatalf("mcp config --harness gemini: exit %d %s", code, out)
	}

	bin := pinnedCLI(t, "DLGT_GEMINI_BIN", "..", "gemini", "node_modules", ".bin", "gemini")
	cmd := exec.Command(bin, "mcp", "list")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dlgt: /opt/dlgt/bin/dlgt mcp") || !strings.Contains(string(out), "other") {
		t.Errorf("gemini mcp list: %v\n%s", err, out)
	}
}
