package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// No editor runs here, so docs/acp.md's editor setups are checked as far
// as that allows: every copy-paste block parses (JSON with encoding/json;
// Lua and Emacs Lisp with the lexical checks below, balanced brackets and
// terminated strings and comments, since no Lua or Emacs is installed),
// and the command each one runs is one `dlgt acp` accepts: it answers
// initialize and exits 0 when stdin ends. The synopsis names only flags
// the command has.
func TestACPDocsEditorBlocks(t *testing.T) {
	doc := readDoc(t, "docs/acp.md")
	_, setup, ok := strings.Cut(doc, "\n## Editor setup\n")
	if !ok {
		t.Fatal("docs/acp.md has no Editor setup section")
	}
	setup, _, _ = strings.Cut(setup, "\n## ")
	blocks := regexp.MustCompile("(?s)```([a-z]+)\n(.*?)```").FindAllStringSubmatch(setup, -1)
	langs := map[string]int{}
	for _, b := range blocks {
		lang, body := b[1], b[2]
		langs[lang]++
		var argvs [][]string
		var err error
		switch lang {
		case "json":
			argvs, err = jsonAgentCommands(body)
		case "lua":
			if err = lexBalanced(body, luaLexer); err == nil {
				argvs, err = luaCommands(body)
			}
		case "elisp":
			if err = lexBalanced(body, lispLexer); err == nil {
				argvs, err = lispCommands(body)
			}
		default:
			err = fmt.Errorf("no check for a %s block", lang)
		}
		if err != nil {
			t.Errorf("%s block: %v\n%s", lang, err, body)
			continue
		}
		for _, argv := range argvs {
			checkACPArgv(t, lang, argv)
		}
	}
	if langs["json"] != 2 || langs["lua"] != 1 || langs["elisp"] != 1 {
		t.Errorf("blocks %v, want Zed's and JetBrains' JSON, CodeCompanion's Lua and agent-shell's Elisp", langs)
	}

	// The synopsis: every --flag it names is one of dlgt acp's.
	synopsis := regexp.MustCompile("(?s)```\n(dlgt acp .*?)```").FindStringSubmatch(doc)
	if synopsis == nil {
		t.Fatal("docs/acp.md has no dlgt acp synopsis block")
	}
	e, _, _ := testEnv(t, nil, "")
	cmd := newACPCommand(e)
	for _, f := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(synopsis[1], -1) {
		if cmd.Flags().Lookup(f[1]) == nil && f[1] != "host" {
			t.Errorf("the synopsis names --%s, which dlgt acp does not take", f[1])
		}
	}
}

// checkACPArgv runs argv (dlgt and its arguments) as the editor would,
// with an initialize request on stdin.
func checkACPArgv(t *testing.T, lang string, argv []string) {
	t.Helper()
	if len(argv) < 2 || argv[0] != "dlgt" || argv[1] != "acp" {
		t.Errorf("%s block runs %q, not dlgt acp", lang, argv)
		return
	}
	e, out, errb := testEnv(t, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	if code := run(argv[1:], e); code != 0 || !strings.Contains(out.String(), `"protocolVersion":1`) {
		t.Errorf("%s block's %q: exit %d, stdout %q, stderr %q", lang, argv, code, out, errb)
	}
}

// jsonAgentCommands are the commands of a settings file's agent_servers.
func jsonAgentCommands(body string) ([][]string, error) {
	var doc struct {
		AgentServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"agent_servers"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return nil, err
	}
	if len(doc.AgentServers) == 0 {
		return nil, fmt.Errorf("no agent_servers")
	}
	var out [][]string
	for _, s := range doc.AgentServers {
		out = append(out, append([]string{s.Command}, s.Args...))
	}
	return out, nil
}

// luaCommands are the argv tables of CodeCompanion's commands.
func luaCommands(body string) ([][]string, error) {
	m := regexp.MustCompile(`commands\s*=\s*\{\s*default\s*=\s*\{([^}]*)\}`).FindStringSubmatch(body)
	if m == nil {
		return nil, fmt.Errorf("no commands = { default = { ... } }")
	}
	return [][]string{quotedStrings(m[1])}, nil
}

// lispCommands are agent-shell's :command and :command-params.
func lispCommands(body string) ([][]string, error) {
	c := regexp.MustCompile(`:command\s+"([^"]*)"`).FindStringSubmatch(body)
	p := regexp.MustCompile(`:command-params\s+'\(([^)]*)\)`).FindStringSubmatch(body)
	if c == nil || p == nil {
		return nil, fmt.Errorf("no :command \"...\" with :command-params '(...)")
	}
	return [][]string{append([]string{c[1]}, quotedStrings(p[1])...)}, nil
}

func quotedStrings(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`"([^"\\]*)"`).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// lexer says, at src[i], how long a string or comment starting there is
// (0: none), or an error when it is not terminated.
type lexer func(src string, i int) (int, error)

// lexBalanced checks that src's brackets balance outside its strings and
// comments, and that every string and comment ends.
func lexBalanced(src string, skip lexer) error {
	var stack []byte
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{'}
	for i := 0; i < len(src); i++ {
		n, err := skip(src, i)
		if err != nil {
			return err
		}
		if n > 0 {
			i += n - 1
			continue
		}
		switch c := src[i]; c {
		case '(', '[', '{':
			stack = append(stack, c)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return fmt.Errorf("unbalanced %q at byte %d", c, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("%d brackets left open", len(stack))
	}
	return nil
}

// quoted is the length of the string at src[i] closed by q, with
// backslash escapes.
func quoted(src string, i int, q byte) (int, error) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j - i + 1, nil
		case '\n':
			if q == '\'' {
				return 0, fmt.Errorf("string at byte %d runs past its line", i)
			}
		}
	}
	return 0, fmt.Errorf("string at byte %d is not terminated", i)
}

// luaLexer: "…", '…', [[…]] strings, -- and --[[…]] comments.
func luaLexer(src string, i int) (int, error) {
	rest := src[i:]
	switch {
	case strings.HasPrefix(rest, "--[["):
		if end := strings.Index(rest, "]]"); end >= 0 {
			return end + 2, nil
		}
		return 0, fmt.Errorf("comment at byte %d is not terminated", i)
	case strings.HasPrefix(rest, "--"):
		if end := strings.IndexByte(rest, '\n'); end >= 0 {
			return end, nil
		}
		return len(rest), nil
	case strings.HasPrefix(rest, "[["):
		if end := strings.Index(rest, "]]"); end >= 0 {
			return end + 2, nil
		}
		return 0, fmt.Errorf("long string at byte %d is not terminated", i)
	case rest[0] == '"' || rest[0] == '\'':
		n, err := quoted(src, i, rest[0])
		if err == nil && rest[0] == '"' && strings.Contains(src[i:i+n], "\n") {
			return 0, fmt.Errorf("string at byte %d runs past its line", i)
		}
		return n, err
	}
	return 0, nil
}

// lispLexer: "…" strings, ; comments, ?x character literals.
func lispLexer(src string, i int) (int, error) {
	switch src[i] {
	case '"':
		return quoted(src, i, '"')
	case ';':
		if end := strings.IndexByte(src[i:], '\n'); end >= 0 {
			return end, nil
		}
		return len(src) - i, nil
	case '?':
		if i+1 < len(src) && src[i+1] == '\\' {
			return min(3, len(src)-i), nil
		}
		return min(2, len(src)-i), nil
	}
	return 0, nil
}

// The lexical checks catch what a copy-paste error makes.
func TestLexBalanced(t *testing.T) {
	for _, tc := range []struct {
		src  string
		lex  lexer
		good bool
	}{
		{`f({ a = "x)", b = [[ ) ]] }) -- ) comment`, luaLexer, true},
		{`f({ a = "x" }`, luaLexer, false},
		{`f({ a = "x })`, luaLexer, false},
		{`f({ a = "x" ]`, luaLexer, false},
		{`(a "b)" ?\( ?) ; )` + "\n" + `)`, lispLexer, true},
		{`(a "b)" ?\( ?) ; )` + "\n", lispLexer, false},
		{`(a '("x" "y"))`, lispLexer, true},
		{`(a "unterminated)`, lispLexer, false},
	} {
		if err := lexBalanced(tc.src, tc.lex); (err == nil) != tc.good {
			t.Errorf("%q: %v, want good=%v", tc.src, err, tc.good)
		}
	}
}
