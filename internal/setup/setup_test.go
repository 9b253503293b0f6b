package setup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A JSON edit changes only the member: every other byte stays, the
// change is backed up and shown as a diff, and a second edit is
// unchanged.
func TestEditFileJSONMember(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	old := "{\n    \"theme\": \"dark\",  \"n\": [1,2],\n    \"mcpServers\": {\"other\": {\"command\": \"x\"}}\n}"
	os.WriteFile(path, []byte(old), 0o640)
	edit := func(b []byte) ([]byte, error) {
		return jsonWithMember(b, []string{"mcpServers", "dlgt"}, map[string]any{"command": "/bin/dlgt"})
	}
	f, err := EditFile(path, edit)
	if err != nil || f.Status != Written || f.Backup == "" || !strings.Contains(f.Diff, `+            "command": "/bin/dlgt"`) {
		t.Fatalf("edit: %+v %v", f, err)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), "{\n    \"theme\": \"dark\",  \"n\": [1,2],\n    \"mcpServers\": {\"other\": {\"command\": \"x\"},") {
		t.Errorf("other bytes changed:\n%s", got)
	}
	var doc map[string]map[string]map[string]string
	json.Unmarshal(got, &doc)
	if doc["mcpServers"]["dlgt"]["command"] != "/bin/dlgt" || doc["mcpServers"]["other"]["command"] != "x" {
		t.Errorf("document %s", got)
	}
	if b, _ := os.ReadFile(f.Backup); string(b) != old {
		t.Errorf("backup %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	if f, err := EditFile(path, edit); err != nil || f.Status != Unchanged || f.Backup != "" || f.Diff != "" {
		t.Errorf("second edit: %+v %v", f, err)
	}
}

// A TOML edit replaces the dlgt table (wherever it is) and keeps the
// rest; a file that does not parse is refused and left alone.
func TestCodexConfigWithServer(t *testing.T) {
	spec := ServerSpec{Exe: "/bin/dlgt", ServerArgs: []string{"mcp"}, Forward: []string{"DLGT_HOME"}}
	old := "model = \"o3\" # mine\n\n[mcp_servers.dlgt]\ncommand = \"old\"\n\n[mcp_servers.other]\ncommand = \"x\"\n"
	got, err := codexConfigWithServer([]byte(old), codexMCPTable(spec))
	want := "model = \"o3\" # mine\n\n[mcp_servers.dlgt]\ncommand = \"/bin/dlgt\"\nargs = [\"mcp\"]\nenv_vars = [\"DLGT_HOME\"]\nrequired = true\n\n[mcp_servers.other]\ncommand = \"x\"\n"
	if err != nil || string(got) != want {
		t.Fatalf("edit: %v\n%s", err, got)
	}
	if again, err := codexConfigWithServer(got, codexMCPTable(spec)); err != nil || string(again) != want {
		t.Errorf("second edit: %v\n%s", err, again)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte("model = \n"), 0o600)
	_, err = InstallCodex(harness.Descriptor{Name: "codex", MCP: harness.MCPCodexTOML}, spec, func(harness.ConfigDir) (string, error) { return filepath.Dir(path), nil })
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || !strings.Contains(re.Message, "nothing was changed") {
		t.Errorf("unparsable: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "model = \n" {
		t.Errorf("an unparsable file was changed: %q", b)
	}
}

// The per-launch arguments carry the same entry as the install.
func TestServerArgs(t *testing.T) {
	spec := ServerSpec{Exe: "/opt/dlgt", ServerArgs: []string{"mcp", "--wait-max", "1m0s"}, Approve: true, Forward: []string{"A"}}
	if got := strings.Join(ClaudeArgs(spec), "\n"); got != "--mcp-config\n{\"mcpServers\":{\"dlgt\":{\"type\":\"stdio\",\"command\":\"/opt/dlgt\",\"args\":[\"mcp\",\"--wait-max\",\"1m0s\"]}}}\n--allowedTools\nmcp__dlgt" {
		t.Errorf("claude:\n%s", got)
	}
	want := "-c\nmcp_servers.dlgt={command=\"/opt/dlgt\", args=[\"mcp\", \"--wait-max\", \"1m0s\"], env_vars=[\"A\"]}\n-c\nmcp_servers.dlgt.required=true\n-c\nmcp_servers.dlgt.default_tools_approval_mode=\"approve\""
	if got := strings.Join(CodexArgs(spec), "\n"); got != want {
		t.Errorf("codex:\n%s\nwant\n%s", got, want)
	}
}

// A skill is written once, then unchanged; check tells current, stale
// and missing apart.
func TestSkillInstallCheck(t *testing.T) {
	home := t.TempDir()
	ds := []harness.Descriptor{{Name: "claude", SkillsDir: "skills", Config: harness.ConfigDir{Env: "CLAUDE_CONFIG_DIR", Home: ".claude"}}}
	targets, err := SkillTargets(ds, func(k string) string { return map[string]string{"HOME": home}[k] })
	if err != nil || len(targets) != 1 || targets[0].Path != filepath.Join(home, ".claude", "skills", SkillDirName, SkillFileName) {
		t.Fatalf("targets %+v %v", targets, err)
	}
	tg := targets[0]
	if CheckSkill(&tg, []byte("guide")); tg.Status != SkillMissing {
		t.Errorf("before: %s", tg.Status)
	}
	if err := InstallSkill(&tg, []byte("guide")); err != nil || tg.Status != SkillWritten {
		t.Fatalf("install: %s %v", tg.Status, err)
	}
	if err := InstallSkill(&tg, []byte("guide")); err != nil || tg.Status != SkillUnchanged {
		t.Errorf("again: %s %v", tg.Status, err)
	}
	if CheckSkill(&tg, []byte("guide")); tg.Status != SkillCurrent {
		t.Errorf("check: %s", tg.Status)
	}
	if CheckSkill(&tg, []byte("another guide")); tg.Status != SkillStale {
		t.Errorf("check against another guide: %s", tg.Status)
	}
	if fi, _ := os.Stat(tg.Path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}
