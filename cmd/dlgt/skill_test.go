package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/rpc"
)

// skillEnv is a CLI env whose HOME and CODEX_HOME are the given paths.
func skillEnv(t *testing.T, home, codexHome string) (*env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	vars := map[string]string{"HOME": home}
	if codexHome != "" {
		vars["CODEX_HOME"] = codexHome
	}
	return testEnv(t, vars, "")
}

type skillDoc struct {
	OK      bool                `json:"ok"`
	Targets []setup.SkillTarget `json:"targets"`
}

// runSkill runs `dlgt skill ARGS` and decodes its one JSON line.
func runSkill(t *testing.T, home, codexHome string, args ...string) (int, skillDoc, string) {
	t.Helper()
	e, out, _ := skillEnv(t, home, codexHome)
	code := run(append([]string{"skill"}, args...), e)
	var doc skillDoc
	if strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("skill %v: stdout %q is not one line", args, out)
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("skill %v: stdout %q: %v", args, out, err)
	}
	return code, doc, out.String()
}

func statuses(doc skillDoc) map[string]string {
	m := map[string]string{}
	for _, t := range doc.Targets {
		m[t.Harness] = t.Status
	}
	return m
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// The guide's front matter is what both harnesses' skill loaders accept:
// a YAML mapping with exactly name and description, name hyphen-case,
// description one plain line of at most 1,024 characters without angle
// brackets (Codex's validator), nothing YAML would read as more structure.
func TestSkillGuideFrontMatter(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	if code := run([]string{"skill"}, e); code != cli.ExitOK || !bytes.Equal(out.Bytes(), skillGuide) {
		t.Fatalf("dlgt skill: exit %d, printed %d bytes, want the %d-byte guide", code, out.Len(), len(skillGuide))
	}
	rest, ok := strings.CutPrefix(string(skillGuide), "---\n")
	front, body, ok2 := strings.Cut(rest, "\n---\n")
	if !ok || !ok2 || !strings.HasPrefix(body, "\n# ") {
		t.Fatalf("the guide does not open with a front matter block and a heading")
	}
	keys := map[string]string{}
	for _, line := range strings.Split(front, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || keys[k] != "" {
			t.Fatalf("front matter line %q is not one new key: value", line)
		}
		keys[k] = v
	}
	if len(keys) != 2 || keys["name"] != "dlgt" {
		t.Fatalf("front matter keys %v, want name: dlgt and description", keys)
	}
	d := keys["description"]
	if len(d) < 100 || len(d) > 1024 || strings.ContainsAny(d, "<>#\"'`{}[]|&*!%@") || strings.Contains(d, ": ") {
		t.Fatalf("description (%d bytes) is not a plain YAML scalar of 100..1024 characters: %q", len(d), d)
	}
	for _, want := range []string{"Codex", "Claude Code", "Use when"} {
		if !strings.Contains(d, want) {
			t.Errorf("description does not say %q", want)
		}
	}
}

// Every `dlgt …` the guide mentions (in code spans and sh blocks) names a
// command of this binary and flags that command has; every MCP tool and
// argument it names exists.
func TestSkillGuideNamesRealCommandsAndTools(t *testing.T) {
	root := newRootCommand(&env{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	var mentions []string
	for _, m := range regexp.MustCompile("`(dlgt [^`]+)`").FindAllStringSubmatch(string(skillGuide), -1) {
		mentions = append(mentions, m[1])
	}
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(skillGuide), -1) {
		for _, line := range strings.Split(block[1], "\n") {
			if strings.HasPrefix(line, "dlgt ") {
				mentions = append(mentions, line)
			}
		}
	}
	if len(mentions) < 10 {
		t.Fatalf("only %d dlgt commands found in the guide", len(mentions))
	}
	for _, m := range mentions {
		line, _, _ := strings.Cut(m, " -- ")
		line, _, _ = strings.Cut(line, "#")
		words := strings.Fields(line)[1:]
		cmd, rest, err := root.Find(words)
		if err != nil || cmd == root {
			t.Errorf("%q: no such command (%v)", m, err)
			continue
		}
		for _, w := range rest {
			var ok bool
			switch {
			case strings.HasPrefix(w, "--"):
				name, _, _ := strings.Cut(w[2:], "=")
				ok = cmd.Flags().Lookup(name) != nil
			case strings.HasPrefix(w, "-") && len(w) == 2:
				ok = cmd.Flags().ShorthandLookup(w[1:]) != nil
			default:
				continue
			}
			if !ok {
				t.Errorf("%q: %s has no flag %s", m, cmd.CommandPath(), w)
			}
		}
		if cmd.Name() == "fetch" && strings.Contains(line, "--wait") {
			if !strings.Contains(line, "--until result") {
				t.Errorf("%q: a wait in the guide must be --until result", m)
			}
		}
	}

	// The MCP tools and the arguments the guide names.
	d := testkit.NewFakeDaemon(t)
	e, _, _ := cliEnv(t, d, nil, nil, "")
	cs := mcpClient(t, e, 5*time.Second)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]map[string]any{}
	for _, tool := range res.Tools {
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		json.Unmarshal(b, &schema)
		props[tool.Name] = schema.Properties
	}
	for _, tool := range []string{"delegate", "wait", "send", "read", "list", "cancel", "stop"} {
		if props[tool] == nil || !strings.Contains(string(skillGuide), "`"+tool+"`") {
			t.Errorf("tool %s: served %v, named in the guide %v", tool, props[tool] != nil, strings.Contains(string(skillGuide), "`"+tool+"`"))
		}
	}
	for tool, args := range map[string][]string{
		"delegate": {"harness", "prompt", "request_id", "cwd", "title"},
		"wait":     {"session", "cursor"},
		"send":     {"session", "prompt", "request_id"},
	} {
		for _, a := range args {
			if _, ok := props[tool][a]; !ok {
				t.Errorf("the guide names %s's argument %s, which the tool does not take", tool, a)
			}
		}
	}
}

// install writes exactly the guide to both skills directories, atomically,
// 0644 in directories created 0755 where missing, touching nothing else; a
// second install changes nothing; --check tells current, stale and missing
// apart.
func TestSkillInstallAndCheck(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	codexHome := filepath.Join(dir, "codex-home") // does not exist yet
	claudeDir := filepath.Join(home, ".claude")
	skills := filepath.Join(claudeDir, "skills")
	// What the user already has: a private ~/.claude, another skill, and a
	// file of their own in the dlgt skill's folder.
	for _, d := range []string{filepath.Join(skills, "other"), filepath.Join(skills, "dlgt")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(claudeDir, 0o700)
	other := filepath.Join(skills, "other", "SKILL.md")
	notes := filepath.Join(skills, "dlgt", "notes.txt")
	os.WriteFile(other, []byte("---\nname: other\n---\n"), 0o600)
	os.WriteFile(notes, []byte("mine"), 0o600)

	claudePath := filepath.Join(skills, "dlgt", "SKILL.md")
	codexPath := filepath.Join(codexHome, "skills", "dlgt", "SKILL.md")

	// Before: both missing.
	code, doc, _ := runSkill(t, home, codexHome, "install", "--check")
	if code != cli.ExitError || doc.OK || statuses(doc)["claude"] != setup.SkillMissing || statuses(doc)["codex"] != setup.SkillMissing {
		t.Fatalf("check before install: exit %d %+v", code, doc)
	}
	if _, err := os.Stat(codexHome); !os.IsNotExist(err) {
		t.Fatalf("--check created %s", codexHome)
	}

	code, doc, _ = runSkill(t, home, codexHome, "install")
	if code != cli.ExitOK || !doc.OK || len(doc.Targets) != 4 {
		t.Fatalf("install: exit %d %+v", code, doc)
	}
	for _, tg := range doc.Targets {
		want := map[string]string{"claude": claudePath, "codex": codexPath, "gemini": filepath.Join(home, ".gemini", "skills", "dlgt", "SKILL.md"),
			"copilot": filepath.Join(home, ".copilot", "skills", "dlgt", "SKILL.md")}[tg.Harness]
		if tg.Path != want || tg.Status != setup.SkillWritten {
			t.Errorf("target %+v, want %s written", tg, want)
		}
	}
	for _, p := range []string{claudePath, codexPath} {
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(data, skillGuide) {
			t.Errorf("%s does not hold the guide (%v)", p, err)
		}
		if m := mode(t, p); m != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", p, m)
		}
	}
	for _, d := range []string{codexHome, filepath.Join(codexHome, "skills"), filepath.Join(codexHome, "skills", "dlgt")} {
		if m := mode(t, d); m != os.ModeDir|0o755 {
			t.Errorf("created %s with mode %v, want drwxr-xr-x", d, m)
		}
	}
	// Existing directories keep their modes; the user's files survive;
	// no temporary file is left.
	if m := mode(t, claudeDir); m != os.ModeDir|0o700 {
		t.Errorf("%s: mode changed to %v", claudeDir, m)
	}
	if m := mode(t, filepath.Join(skills, "dlgt")); m != os.ModeDir|0o700 {
		t.Errorf("existing skill folder: mode changed to %v", m)
	}
	if data, _ := os.ReadFile(other); string(data) != "---\nname: other\n---\n" {
		t.Errorf("another skill was touched: %q", data)
	}
	if data, _ := os.ReadFile(notes); string(data) != "mine" {
		t.Errorf("a sibling file was touched: %q", data)
	}
	if got := dirNames(t, filepath.Join(skills, "dlgt")); strings.Join(got, " ") != "SKILL.md notes.txt" {
		t.Errorf("claude skill folder holds %v", got)
	}
	if got := dirNames(t, filepath.Join(codexHome, "skills", "dlgt")); strings.Join(got, " ") != "SKILL.md" {
		t.Errorf("codex skill folder holds %v", got)
	}

	// Idempotent: the second install writes nothing (same inode).
	before, _ := os.Stat(claudePath)
	code, doc, _ = runSkill(t, home, codexHome, "install")
	if code != cli.ExitOK || statuses(doc)["claude"] != setup.SkillUnchanged || statuses(doc)["codex"] != setup.SkillUnchanged {
		t.Fatalf("second install: exit %d %+v", code, doc)
	}
	if after, _ := os.Stat(claudePath); !os.SameFile(before, after) {
		t.Errorf("an unchanged install replaced the file")
	}
	code, doc, _ = runSkill(t, home, codexHome, "install", "--check")
	if code != cli.ExitOK || !doc.OK || statuses(doc)["claude"] != setup.SkillCurrent || statuses(doc)["codex"] != setup.SkillCurrent {
		t.Fatalf("check after install: exit %d %+v", code, doc)
	}

	// Stale and missing, one harness at a time.
	os.WriteFile(claudePath, []byte("an older guide"), 0o644)
	os.Remove(codexPath)
	code, doc, _ = runSkill(t, home, codexHome, "install", "--check", "--claude")
	if code != cli.ExitError || doc.OK || len(doc.Targets) != 1 || statuses(doc)["claude"] != setup.SkillStale {
		t.Fatalf("check stale claude: exit %d %+v", code, doc)
	}
	e, out, _ := skillEnv(t, home, codexHome)
	if code := run([]string{"skill", "install", "--check", "-o", "text"}, e); code != cli.ExitError ||
		!regexp.MustCompile(`(?m)^claude +stale +`+regexp.QuoteMeta(claudePath)+`$`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^codex +missing +`+regexp.QuoteMeta(codexPath)+`$`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "fix: dlgt skill install --harness claude\nfix: dlgt skill install --harness codex\n") {
		t.Fatalf("check -o text: exit %d\n%s", code, out)
	}
	code, doc, _ = runSkill(t, home, codexHome, "install", "--codex")
	if code != cli.ExitOK || len(doc.Targets) != 1 || statuses(doc)["codex"] != setup.SkillWritten {
		t.Fatalf("install --codex: exit %d %+v", code, doc)
	}
	if data, _ := os.ReadFile(claudePath); string(data) != "an older guide" {
		t.Errorf("install --codex touched the claude copy")
	}
	// The same text with another mode is rewritten 0644.
	os.WriteFile(claudePath, skillGuide, 0o600)
	os.Chmod(claudePath, 0o600)
	code, doc, _ = runSkill(t, home, codexHome, "install", "--claude")
	if code != cli.ExitOK || statuses(doc)["claude"] != setup.SkillWritten || mode(t, claudePath) != 0o644 {
		t.Fatalf("install over a 0600 copy: exit %d %+v, mode %v", code, doc, mode(t, claudePath))
	}
}

// CLAUDE_CONFIG_DIR, when set, is where Claude Code reads user skills
// from (measured with the pinned CLI), so the claude copy goes there.
func TestSkillInstallClaudeConfigDir(t *testing.T) {
	home, cfg := t.TempDir(), t.TempDir()
	e, out, _ := testEnv(t, map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": cfg}, "")
	if code := run([]string{"skill", "install", "--claude"}, e); code != cli.ExitOK ||
		!strings.Contains(out.String(), `"path":"`+filepath.Join(cfg, "skills", "dlgt", "SKILL.md")+`","status":"written"`) {
		t.Fatalf("exit %d, %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude")); !os.IsNotExist(err) {
		t.Fatalf("~/.claude was created although CLAUDE_CONFIG_DIR is set")
	}
}

// CODEX_HOME unset means ~/.codex; a symlinked SKILL.md is written through.
func TestSkillInstallDefaultsAndSymlink(t *testing.T) {
	home := t.TempDir()
	dotfiles := filepath.Join(t.TempDir(), "SKILL.md")
	os.WriteFile(dotfiles, []byte("old"), 0o644)
	link := filepath.Join(home, ".codex", "skills", "dlgt", "SKILL.md")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(dotfiles, link); err != nil {
		t.Fatal(err)
	}
	code, doc, _ := runSkill(t, home, "", "install", "--codex")
	if code != cli.ExitOK || len(doc.Targets) != 1 || doc.Targets[0].Path != link || doc.Targets[0].Status != setup.SkillWritten {
		t.Fatalf("exit %d %+v", code, doc)
	}
	if mode(t, link)&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced")
	}
	if data, _ := os.ReadFile(dotfiles); !bytes.Equal(data, skillGuide) {
		t.Fatalf("the link's target was not written")
	}
	if code, doc, _ := runSkill(t, home, "", "install", "--check", "--codex"); code != cli.ExitOK || statuses(doc)["codex"] != setup.SkillCurrent {
		t.Fatalf("check through the link: exit %d %+v", code, doc)
	}
}

// Bad input is a typed error and changes nothing.
func TestSkillInstallBadInput(t *testing.T) {
	dir := t.TempDir()
	codexHome := filepath.Join(dir, "codex")
	for _, tc := range []struct {
		name, want string
		vars       map[string]string
		args       []string
	}{
		{"no HOME", "HOME is", map[string]string{"CODEX_HOME": codexHome}, nil},
		{"relative HOME", "not an absolute path", map[string]string{"HOME": "home"}, []string{"--codex"}},
		{"relative CODEX_HOME", "CODEX_HOME is", map[string]string{"HOME": dir, "CODEX_HOME": "rel/codex"}, []string{"--codex"}},
		{"relative CLAUDE_CONFIG_DIR", "CLAUDE_CONFIG_DIR is", map[string]string{"HOME": dir, "CODEX_HOME": codexHome, "CLAUDE_CONFIG_DIR": "rel"}, nil},
		{"an argument", "unknown command", map[string]string{"HOME": dir, "CODEX_HOME": codexHome}, []string{"now"}},
		{"bad output", "--output must be json or text", map[string]string{"HOME": dir, "CODEX_HOME": codexHome}, []string{"-o", "yaml"}},
	} {
		e, out, _ := testEnv(t, tc.vars, "")
		code := run(append([]string{"skill", "install"}, tc.args...), e)
		if code != cli.ExitError || !strings.HasPrefix(out.String(), `{"ok":false,"error":{"code":"INVALID_ARGUMENT"`) || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: exit %d, %q", tc.name, code, out)
		}
		if _, err := os.Stat(codexHome); !os.IsNotExist(err) {
			t.Fatalf("%s: %s was created", tc.name, codexHome)
		}
		if _, err := os.Stat(filepath.Join(dir, ".claude")); !os.IsNotExist(err) {
			t.Fatalf("%s: ~/.claude was created", tc.name)
		}
	}
	// A file where the skill folder should be: the failure names it, and
	// the file is left as it was.
	home := t.TempDir()
	blocker := filepath.Join(home, ".claude", "skills", "dlgt")
	os.MkdirAll(filepath.Dir(blocker), 0o755)
	os.WriteFile(blocker, []byte("not a folder"), 0o644)
	e, out, _ := skillEnv(t, home, codexHome)
	if code := run([]string{"skill", "install", "--claude"}, e); code != cli.ExitError ||
		!strings.Contains(out.String(), `"code":"INVALID_ARGUMENT"`) || !strings.Contains(out.String(), blocker) {
		t.Fatalf("exit %d, %q", code, out)
	}
	if data, _ := os.ReadFile(blocker); string(data) != "not a folder" {
		t.Fatalf("the blocking file changed")
	}
}

// doctor reports a missing or stale skill as a warning, never a failure;
// a missing one only for a harness that is installed.
func TestDoctorSkillWarnings(t *testing.T) {
	dir := shortDir(t)
	home := filepath.Join(dir, "user")
	os.MkdirAll(home, 0o700)
	vars := map[string]string{"DLGT_HOME": filepath.Join(dir, "fresh"), "PATH": filepath.Join(dir, "empty"), "HOME": home}
	code, doc, c := runDoctor(t, vars)
	if code != cli.ExitOK || !doc.OK {
		t.Fatalf("no harness, no skill: exit %d %+v", code, doc)
	}
	for _, h := range []string{"claude", "codex"} {
		if s := c["skill."+h]; !s.OK || s.Warning || !strings.Contains(s.Detail, h+" is not installed either") {
			t.Errorf("missing %s skill, %s not installed: %+v", h, h, s)
		}
	}
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	vars["PATH"] = bin
	vars["DLGT_CODEX_BIN"] = fakeBinary(t, dir, "mycodex", "echo 'codex-cli 0.1.2'")
	fakeBinary(t, bin, "claude", "echo '1.0.0 (Claude Code)'")
	code, doc, c = runDoctor(t, vars)
	if code != cli.ExitOK || !doc.OK {
		t.Fatalf("missing skills failed doctor: exit %d %+v", code, doc)
	}
	for _, h := range []string{"claude", "codex"} {
		s := c["skill."+h]
		if !s.OK || !s.Warning || !strings.Contains(s.Detail, "no dlgt skill at "+home) || s.Fix != "run `dlgt skill install --harness "+h+"`" {
			t.Errorf("missing %s skill: %+v", h, s)
		}
	}
	if code, _, _ := runSkill(t, home, "", "install"); code != cli.ExitOK {
		t.Fatal("install failed")
	}
	os.WriteFile(filepath.Join(home, ".codex", "skills", "dlgt", "SKILL.md"), []byte("old"), 0o644)
	code, doc, c = runDoctor(t, vars)
	if code != cli.ExitOK || !doc.OK {
		t.Fatalf("stale skill failed doctor: exit %d %+v", code, doc)
	}
	if s := c["skill.claude"]; !s.OK || s.Warning || s.Fix != "" || !strings.Contains(s.Detail, "matches this binary's guide") {
		t.Errorf("current claude skill: %+v", s)
	}
	if s := c["skill.codex"]; !s.OK || !s.Warning || !strings.Contains(s.Detail, "differs") || !strings.Contains(s.Fix, "--harness codex") {
		t.Errorf("stale codex skill: %+v", s)
	}
	e, out, _ := testEnv(t, vars, "")
	if code := run([]string{"doctor", "-o", "text"}, e); code != cli.ExitOK ||
		!strings.Contains(out.String(), "[warn] skill.codex: ") || !strings.Contains(out.String(), "       fix: run `dlgt skill install --harness codex`\n") ||
		!strings.Contains(out.String(), "[ok]   skill.claude: ") {
		t.Fatalf("doctor -o text: exit %d\n%s", code, out)
	}
}

// The guide joins a chunked final_text from -o text by dropping the one
// line break that ends each continued piece: it is there even when the
// piece itself ends with a line break.
func TestResultTextContinuedPieceEndsWithOneAddedBreak(t *testing.T) {
	no, yes, off := false, true, 0
	for _, tc := range []struct {
		piece    string
		complete *bool
		want     string
	}{
		{"abc", &no, "abc\n"},
		{"abc\n", &no, "abc\n\n"},
		{"abc", &yes, "abc\n"},
		{"abc\n", &yes, "abc\n"},
	} {
		var b bytes.Buffer
		text := tc.piece
		render.Result(&b, rpc.Result{ExecutionSeq: 1, Status: "completed", FinalText: &text, FinalTextComplete: tc.complete, FinalTextOffset: &off}, time.Now())
		_, body, _ := strings.Cut(b.String(), "\n")
		if body != tc.want {
			t.Errorf("piece %q complete %v: printed %q, want %q", tc.piece, *tc.complete, body, tc.want)
		}
	}
}
