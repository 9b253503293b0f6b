package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The contract "harness CLIs are driven only through adapters", made
// precise: outside this package (product code: non-test files, not the
// test doubles under harnesstest, bench/ or examples/),
//
//   - no string literal is a flag this package passes to a harness CLI
//     (every "-x"/"--x" literal in its non-test files, but for the few
//     notHarnessFlags that are not the CLIs' own);
//   - no string literal names the environment variable that points at a
//     harness binary (a Descriptor's BinEnv);
//   - no call into os/exec (Command, CommandContext, LookPath) names a
//     harness binary (a Descriptor's BinName) in a literal.
//
// So a new front-end or daemon part that wants a harness to do something
// asks its Harness; it cannot spell the CLI's command line itself.

// notHarnessFlags are flag literals of this package that are not a
// harness CLI's, and why.
var notHarnessFlags = map[string]string{
	"-c":        "also sh -c; the adapters' codex -c overrides are built here",
	"--socket":  "dlgt hook's own flag, in the hook command lines the adapters install",
	"--launch":  "dlgt hook's own flag, in the hook command lines the adapters install",
	"--version": "dlgt's own flag too: the socket-only tree (internal/cli) answers it itself",
}

var flagLit = regexp.MustCompile(`^--?[a-zA-Z][-a-zA-Z0-9_]*(=.*)?$`)

// productFiles parses the repository's product Go files, calling f with
// each file's path relative to the root.
func productFiles(t *testing.T, f func(rel string, file *ast.File)) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" ||
				rel == "bench" || rel == "examples" || rel == "docs" || rel == "harnesstest") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		n++
		f(rel, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("read %d Go files under %s", n, root)
	}
}

func stringLits(n ast.Node) []string {
	var out []string
	ast.Inspect(n, func(n ast.Node) bool {
		if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			if s, err := strconv.Unquote(bl.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

// harnessFlags are the flag literals of this package's non-test files.
func harnessFlags(t *testing.T) map[string]bool {
	flags := map[string]bool{}
	productFiles(t, func(rel string, file *ast.File) {
		if filepath.Dir(rel) != "harness" {
			return
		}
		for _, s := range stringLits(file) {
			if flagLit.MatchString(s) && notHarnessFlags[s] == "" {
				flags[s] = true
			}
		}
	})
	return flags
}

func TestHarnessCLIsOnlyThroughAdapters(t *testing.T) {
	flags := harnessFlags(t)
	if !flags["--resume"] || !flags["--session-id"] {
		t.Fatalf("the adapters' flags were not found: %v", flags)
	}
	bins, envs := map[string]bool{}, map[string]bool{}
	for _, d := range registry {
		bins[d().BinName] = true
		envs[d().BinEnv] = true
	}
	if len(bins) < 3 {
		t.Fatalf("binaries %v", bins)
	}
	productFiles(t, func(rel string, file *ast.File) {
		if strings.HasPrefix(rel, "harness"+string(filepath.Separator)) {
			return
		}
		for _, bad := range driving(file, flags, bins, envs) {
			t.Errorf("%s: %s: drive the harness CLI through its harness.Harness adapter", rel, bad)
		}
	})
	for f := range notHarnessFlags {
		if !strings.HasPrefix(f, "-") {
			t.Errorf("notHarnessFlags holds %q, not a flag", f)
		}
	}
}

// driving lists what in file spells a harness CLI's command line.
func driving(file *ast.File, flags, bins, envs map[string]bool) []string {
	var out []string
	for _, s := range stringLits(file) {
		switch {
		case flags[s]:
			out = append(out, "names the harness flag "+strconv.Quote(s))
		case envs[s]:
			out = append(out, "names the harness binary variable "+strconv.Quote(s))
		}
	}
	execName := ""
	for _, im := range file.Imports {
		if im.Path.Value == `"os/exec"` {
			execName = "exec"
			if im.Name != nil {
				execName = im.Name.Name
			}
		}
	}
	if execName == "" {
		return out
	}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != execName {
			return true
		}
		for _, a := range call.Args {
			for _, s := range stringLits(a) {
				if bins[s] || bins[filepath.Base(s)] {
					out = append(out, "runs the harness binary "+strconv.Quote(s))
				}
			}
		}
		return true
	})
	return out
}

func TestDrivingFindsEachKind(t *testing.T) {
	src := `package p
import x "os/exec"
var a = []string{"--resume", "id"}
var b = "MYBIN_ENV"
func f() { x.Command("/usr/bin/clawd", "hi"); x.LookPath("ok") }
`
	file, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := driving(file, map[string]bool{"--resume": true}, map[string]bool{"clawd": true}, map[string]bool{"MYBIN_ENV": true})
	if len(got) != 3 {
		t.Errorf("driving = %q, want the flag, the variable and the binary", got)
	}
}
