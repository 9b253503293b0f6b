package rpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The contract "wire shapes live in rpc", made precise in two halves:
//
//  1. Every struct type a method's params or result is made of (through
//     pointers, slices, arrays, maps and fields, to any depth) is declared
//     in package rpc: the descriptors of rpc.Public and rpc.Internal are
//     the wire, and nothing they carry comes from another package.
//  2. Outside rpc, no product package (non-test files; not the test kit
//     under harnesstest, bench/ or examples/) declares an exported
//     struct type with json tags, unless notWire names it with the reason
//     it is not a dlgt RPC shape. A new exported JSON shape therefore goes
//     into rpc, or into notWire with its reason, where a reviewer sees it.
//     Unexported ones (stored records, a harness's own formats, the MCP
//     and ACP protocols) cannot leak onto the wire from another package.

// notWire are the exported json-tagged structs outside rpc, by package
// name and type, and why each is not a dlgt RPC shape.
var notWire = map[string]string{
	"client.Wait":           "what the client's WaitResult composed from rpc shapes; printed by the CLI, never sent",
	"client.SessionResults": "the client's Results, composed from rpc.Result pages; printed by the CLI",
	"attach.Ending":         "how an attach ended, for the CLI's --json output",
	"doctor.Check":          "a doctor check, for dlgt doctor --json",
	"follow.Fields":         "the CLI's follow output fields",
	"notify.Pending":        "the notifier's own pending-request file",
	"notify.PendingOption":  "the notifier's own pending-request file",
	"setup.File":            "a setup plan's file, for dlgt setup --json",
	"setup.SkillTarget":     "a skill install target, for dlgt setup --json",
	"receipts.Stored":       "an acceptance receipt as the daemon stores it; the wire carries its rpc.Receipt",
	"fetchdoc.Mark":         "a position's watermark vector as the daemon stores it; the wire carries only the position's number",
}

func TestWireShapesAreRPCs(t *testing.T) {
	rpcPkg := reflect.TypeFor[Method[struct{}, struct{}]]().PkgPath()
	descs := slices.Concat(Public, Internal)
	if len(descs) < 20 {
		t.Fatalf("only %d descriptors", len(descs))
	}
	for _, d := range descs {
		for _, v := range []any{d.NewParams(), d.NewResult()} {
			for _, bad := range foreignStructs(reflect.TypeOf(v), rpcPkg, map[reflect.Type]bool{}) {
				t.Errorf("%s carries %s, declared outside rpc", d.MethodName(), bad)
			}
		}
	}
}

// foreignStructs lists the named struct types t is made of that are not
// declared in package pkg (nor the standard library's).
func foreignStructs(t reflect.Type, pkg string, seen map[reflect.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return foreignStructs(t.Elem(), pkg, seen)
	case reflect.Map:
		return append(foreignStructs(t.Key(), pkg, seen), foreignStructs(t.Elem(), pkg, seen)...)
	case reflect.Struct:
		if p := t.PkgPath(); t.Name() != "" && p != pkg && strings.Contains(p, ".") {
			return []string{p + "." + t.Name()}
		}
		var out []string
		for i := range t.NumField() {
			out = append(out, foreignStructs(t.Field(i).Type, pkg, seen)...)
		}
		return out
	}
	return nil
}

func TestForeignStructsFindsOne(t *testing.T) {
	type outer struct {
		A []map[string]*token.Position // standard library: allowed
		B *Session
	}
	rpcPkg := reflect.TypeFor[Session]().PkgPath()
	if got := foreignStructs(reflect.TypeFor[outer](), rpcPkg, map[reflect.Type]bool{}); len(got) != 0 {
		t.Errorf("rpc and standard types reported: %q", got)
	}
	// Seen from another package, a params type made of an rpc struct
	// reports the outermost foreign struct.
	type params struct{ C []map[string]*fakeForeign }
	got := foreignStructs(reflect.TypeFor[params](), "elsewhere.org/x", map[reflect.Type]bool{})
	if len(got) != 1 || !strings.HasSuffix(got[0], "rpc.params") {
		t.Errorf("foreign structs = %q, want rpc.params", got)
	}
	type wrap struct{ Token token.Position }
	got = foreignStructs(reflect.TypeFor[struct{ W []wrap }](), "elsewhere.org/x", map[reflect.Type]bool{})
	if len(got) != 1 || !strings.HasSuffix(got[0], "rpc.wrap") {
		t.Errorf("foreign structs in an unnamed struct = %q, want rpc.wrap", got)
	}
}

type fakeForeign struct{ Y int }

func TestNoJSONShapesOutsideRPC(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	found := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."),
				rel == "rpc", rel == "bench", rel == "examples", rel == "docs",
				strings.HasPrefix(rel, "harnesstest"),
				strings.HasSuffix(rel, "testdata"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		seen++
		for _, name := range exportedJSONStructs(f) {
			key := f.Name.Name + "." + name
			found[key] = true
			if _, ok := notWire[key]; !ok {
				t.Errorf("%s declares %s, an exported struct with json tags: a wire shape belongs in rpc (or in notWire, with why it is not one)", rel, key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("read %d Go files under %s", seen, root)
	}
	for k := range notWire {
		if !found[k] {
			t.Errorf("notWire names %s, which no longer exists: drop it", k)
		}
	}
}

// exportedJSONStructs names f's exported struct types with a json tag.
func exportedJSONStructs(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || !ts.Name.IsExported() {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		for _, fl := range st.Fields.List {
			if fl.Tag == nil {
				continue
			}
			tag, err := strconv.Unquote(fl.Tag.Value)
			if err == nil && reflect.StructTag(tag).Get("json") != "" {
				out = append(out, ts.Name.Name)
				break
			}
		}
		return true
	})
	return out
}

func TestExportedJSONStructs(t *testing.T) {
	src := "package p\ntype A struct{ X int `json:\"x\"` }\ntype b struct{ X int `json:\"x\"` }\ntype C struct{ X int }\ntype D struct{ X int `yaml:\"x\"` }\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := exportedJSONStructs(f); !slices.Equal(got, []string{"A"}) {
		t.Errorf("exportedJSONStructs = %q, want [A]", got)
	}
}
