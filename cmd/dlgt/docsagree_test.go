package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/setup"
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
			e := &env{Getenv: func(k string) string { return vars[k] }, Environ: func() []string { return nil },
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
			if code := run([]string{"profiles"}, e); code != cli.ExitOK || !strings.Contains(out.String(), `"name":"careful"`) {
				t.Fatalf("dlgt profiles after the example: exit %d\n%s%s", code, out.String(), errb.String())
			}
		})
	}
}

// helpOf runs `dlgt ARGS... --help` and returns what it printed.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	e, out, errb := testEnv(t, nil, "")
	if code := run(append(args, "--help"), e); code != cli.ExitOK {
		t.Fatalf("dlgt %v --help: exit %d: %s", args, code, errb)
	}
	return out.String()
}

// wordList splits "a, b and c" (or "a, b or c") into its words.
func wordList(s string) []string {
	var out []string
	for _, part := range regexp.MustCompile(`,\s*|\s+and\s+|\s+or\s+`).Split(strings.TrimSpace(s), -1) {
		out = append(out, strings.Trim(part, "` "))
	}
	return out
}

// `dlgt mcp --help` and docs/agents.md's table name every tool the MCP
// server lists in tools/list, and no other, with the same read-only ones:
// a tool added to the server without its documentation fails here.
func TestDocsNameEveryMCPTool(t *testing.T) {
	e, _, _ := cliEnv(t, testkit.NewFakeDaemon(t), nil, nil, "")
	res, err := mcpClient(t, e, 5*time.Second).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, readOnly []string
	rpcOf := map[string]string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
			readOnly = append(readOnly, tool.Name)
		}
	}
	if len(names) < 9 {
		t.Fatalf("tools/list has %d tools: %v", len(names), names)
	}
	// Compared as sets: tools/list is in name order, the texts in the
	// order a leader uses them.
	same := func(a, b []string) bool {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(a, b)
	}

	// The help: "Tools: NAME (session.METHOD…), … X, Y and Z are marked read-only."
	help := strings.Join(strings.Fields(helpOf(t, "mcp")), " ")
	_, tools, ok := strings.Cut(help, "Tools:")
	tools, _, ok2 := strings.Cut(tools, " are marked read-only.")
	if !ok || !ok2 {
		t.Fatalf("dlgt mcp --help has no \"Tools: … are marked read-only.\":\n%s", help)
	}
	list, marked, _ := cutLast(tools, ". ")
	var helped []string
	for _, m := range regexp.MustCompile(`(?:^|, )([a-z]+) \((session\.[a-z.]+)`).FindAllStringSubmatch(strings.TrimSpace(list), -1) {
		helped = append(helped, m[1])
		rpcOf[m[1]] = m[2]
	}
	if !same(helped, names) {
		t.Errorf("dlgt mcp --help lists the tools %v; tools/list has %v", helped, names)
	}
	if got := wordList(marked); !same(got, readOnly) {
		t.Errorf("dlgt mcp --help marks %v read-only; tools/list marks %v", got, readOnly)
	}

	// docs/agents.md's table: | `NAME` | `session.METHOD` … | yes/no | … |
	_, section, _ := strings.Cut(readDoc(t, "docs/agents.md"), "## The MCP server")
	section, _, _ = strings.Cut(section, "\n## ")
	var documented, docReadOnly []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| `(session\\.[a-z.]+)`[^|]*\\| (yes|no) \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
		if m[3] == "yes" {
			docReadOnly = append(docReadOnly, m[1])
		}
		if rpcOf[m[1]] != "" && rpcOf[m[1]] != m[2] {
			t.Errorf("tool %s: docs/agents.md says %s, dlgt mcp --help %s", m[1], m[2], rpcOf[m[1]])
		}
	}
	if !same(documented, names) {
		t.Errorf("docs/agents.md's tool table has %v; tools/list has %v", documented, names)
	}
	if !same(docReadOnly, readOnly) {
		t.Errorf("docs/agents.md's table marks %v read-only; tools/list marks %v", docReadOnly, readOnly)
	}

	// docs/design.md's package table: "the tools A, B and C, each a method".
	m := regexp.MustCompile(`the tools ([a-z, ]+?), each a method`).FindStringSubmatch(readDoc(t, "docs/design.md"))
	if m == nil || !same(wordList(m[1]), names) {
		t.Errorf("docs/design.md's mcp row names the tools %v; tools/list has %v", m, names)
	}
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// docs/agents.md names the variables a Codex leader forwards to the MCP
// server as `mcp config` writes them (setup.ForwardEnv over the harness
// registry), in order, and counts them right.
func TestDocsForwardedVariables(t *testing.T) {
	want := setup.ForwardEnv(harness.All())
	doc := readDoc(t, "docs/agents.md")
	_, list, ok := strings.Cut(doc, "the variables dlgt and the harnesses need (")
	list, _, ok2 := strings.Cut(list, ");")
	if !ok || !ok2 {
		t.Fatal("docs/agents.md does not list \"the variables dlgt and the harnesses need (…);\"")
	}
	var got []string
	for _, m := range regexp.MustCompile("`([A-Z_]+)`").FindAllStringSubmatch(list, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("docs/agents.md lists\n%v\nmcp config forwards\n%v", got, want)
	}
	counts := regexp.MustCompile(`the (\d+) variables above`).FindAllStringSubmatch(doc, -1)
	if len(counts) == 0 {
		t.Error("docs/agents.md no longer says \"the N variables above\"; if it counts them elsewhere, check that count here")
	}
	for _, m := range counts {
		if m[1] != strconv.Itoa(len(want)) {
			t.Errorf("docs/agents.md says %q; there are %d", m[0], len(want))
		}
	}
}

// Every text that lists the harnesses lists the registry's: dlgt --help,
// the skill's front matter and introduction, dlgt skill --help, docs/cli.md's
// completion paragraph, every --harness flag's usage and completion.
func TestHelpAndDocsNameEveryHarness(t *testing.T) {
	reg := harness.All()
	names, display := harness.Names(reg), harness.DisplayNames(reg)
	if len(reg) < 3 {
		t.Fatalf("the registry has %v", names)
	}
	if h := helpOf(t); !strings.Contains(strings.Join(strings.Fields(h), " "), "hosts "+harness.AndList(display)+" sessions") {
		t.Errorf("dlgt --help does not say it hosts %s sessions:\n%s", harness.AndList(display), h)
	}
	skills := harness.DisplayNames(harness.Filter(reg, cli.LoadsSkills))
	if h := strings.Join(strings.Fields(helpOf(t, "skill")), " "); !strings.Contains(h, "is what "+harness.AndList(skills)+" read") {
		t.Errorf("dlgt skill --help does not name %s:\n%s", harness.AndList(skills), h)
	}
	front, body, _ := strings.Cut(strings.TrimPrefix(string(skillGuide), "---\n"), "\n---\n")
	intro, _, _ := strings.Cut(strings.TrimSpace(body[strings.Index(body, "\n\n"):]), "\n\n")
	for _, d := range skills {
		if !strings.Contains(front, d) {
			t.Errorf("the skill's description does not name %s", d)
		}
		if !strings.Contains(strings.Join(strings.Fields(intro), " "), d) {
			t.Errorf("the skill's introduction does not name %s: %q", d, intro)
		}
	}
	m := regexp.MustCompile("`--harness` to the harnesses dlgt knows \\(([^)]*)\\)").FindStringSubmatch(readDoc(t, "docs/cli.md"))
	if m == nil || strings.Join(wordList(m[1]), ",") != strings.Join(names, ",") {
		t.Errorf("docs/cli.md's completion paragraph names %v, the registry %v", m, names)
	}

	// Every --harness flag: its usage names all harnesses or none, and it
	// completes to all of them.
	e, _, _ := testEnv(t, nil, "")
	var visit func(c *cobra.Command)
	seen := 0
	visit = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			visit(sub)
		}
		f := c.Flags().Lookup("harness")
		if f == nil {
			return
		}
		seen++
		named := 0
		for _, n := range names {
			if regexp.MustCompile(`\b` + n + `\b`).MatchString(f.Usage) {
				named++
			}
		}
		if named != 0 && !strings.Contains(f.Usage, harness.OrList(names)) {
			t.Errorf("%s --harness: %q names some harnesses, not %s", c.CommandPath(), f.Usage, harness.OrList(names))
		}
		args := append(strings.Fields(c.CommandPath())[1:], "--harness", "")
		if got, _ := complete(t, e, args...); strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("%s --harness completes %v, want %v", c.CommandPath(), got, names)
		}
	}
	visit(newRootCommand(e))
	if seen < 5 {
		t.Errorf("only %d commands have --harness", seen)
	}
}

// dlgt session --help says what its subcommands print: -o text for those
// that take it, and by name each that prints something other than the JSON
// line by default (diff's raw diff, attach's terminal).
func TestSessionHelpSaysWhatEachPrints(t *testing.T) {
	e, _, _ := testEnv(t, nil, "")
	var session *cobra.Command
	for _, c := range newRootCommand(e).Commands() {
		if c.Name() == "session" {
			session = c
		}
	}
	long := strings.Join(strings.Fields(session.Long), " ")
	text := false
	for _, c := range session.Commands() {
		f := c.Flags().Lookup("output")
		if f != nil && strings.Contains(f.Usage, "text") {
			text = true
		}
		if f == nil || f.DefValue != "json" {
			what := "it takes no -o"
			if f != nil {
				what = "its -o defaults to " + f.DefValue
			}
			if !regexp.MustCompile(`\b` + c.Name() + ` (prints|hands)`).MatchString(long) {
				t.Errorf("session --help does not say what %s prints (%s):\n%s", c.Name(), what, session.Long)
			}
		}
	}
	if text && !strings.Contains(long, "With -o text it prints") {
		t.Errorf("session --help does not say what -o text prints:\n%s", session.Long)
	}
}

// Every DLGT_ variable the product reads (a "DLGT_…" literal in a non-test
// file outside the test doubles and benchmarks) has its row in
// docs/cli.md's Environment table, but for those dlgt sets for a harness
// it launches, which rpc.md and design.md describe.
func TestDocsEnvironmentTableNamesEveryVariable(t *testing.T) {
	_, table, _ := strings.Cut(readDoc(t, "docs/cli.md"), "\n## Environment\n")
	table, _, _ = strings.Cut(table, "\n\n## ")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(DLGT_[A-Z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	literal := regexp.MustCompile(`"(DLGT_[A-Z_]+)"`)
	read := map[string]string{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch filepath.ToSlash(rel) {
			case ".cache", ".git", "bench", "harnesstest", "examples":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			read[m[1]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) < 10 {
		t.Fatalf("found only %d DLGT_ variables in the sources: %v", len(read), read)
	}
	setForHarness := map[string]bool{"DLGT_HOOK_TOKEN": true}
	for v, file := range read {
		if !rows[v] && !setForHarness[v] {
			t.Errorf("%s (read in %s) has no row in docs/cli.md's Environment table", v, file)
		}
	}
}
