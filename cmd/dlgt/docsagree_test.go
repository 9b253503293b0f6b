package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readDoc returns a file of the repository, by its path from the root.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docsAgentsProfileLines are the lines of docs/agents.md's worked example
// that write the profile: from the block's start to the heredoc's end.
func docsAgentsProfileLines(t *testing.T) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readDoc(t, "docs/agents.md"), -1) {
		if head, _, ok := strings.Cut(m[1], "\nTOML\n"); ok && strings.Contains(head, "[profiles.careful]") {
			return head + "\nTOML\n"
		}
	}
	t.Fatal("docs/agents.md has no sh block writing [profiles.careful] through a TOML heredoc")
	return ""
}

// docs/agents.md's profile example writes the file dlgt reads, whichever
// of DLGT_PROFILES, DLGT_HOME (the README's `DLGT_HOME=$(mktemp -d)`),
// XDG_STATE_HOME or only HOME the shell has: `dlgt profiles` then lists it.
func TestDocsAgentsProfileExampleWritesTheReadFile(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	lines := docsAgentsProfileLines(t)
	// Each case sets one variable (none: HOME only) to a path under a new
	// directory; HOME is always there too.
	for _, c := range []struct{ name, path string }{
		{"DLGT_HOME", ""}, {"XDG_STATE_HOME", ""}, {"DLGT_PROFILES", "p.toml"}, {"HOME only", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			vars := map[string]string{"HOME": filepath.Join(dir, "home")}
			if c.name != "HOME only" {
				vars[c.name] = filepath.Join(dir, c.path)
			}
			cmd := exec.Command("bash", "--norc", "--noprofile", "-euc", lines)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			for k, v := range vars {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the example's lines: %v\n%s", err, out)
			}
			vars["DLGT_NO_AUTOSTART"] = "1"
			var out, errb bytes.Buffer
			e := &env{getenv: func(k string) string { return vars[k] }, environ: func() []string { return nil },
				stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
			if code := run([]string{"profiles"}, e); code != exitOK || !strings.Contains(out.String(), `"name":"careful"`) {
				t.Fatalf("dlgt profiles after the example: exit %d\n%s%s", code, out.String(), errb.String())
			}
		})
	}
}
