package daemon

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocMapsEveryFile: doc.go's map lists every non-test file of the
// package, one line each, and nothing else; and names every package under
// daemon/.
func TestDocMapsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`(?m)^//   - ([a-z_]+\.go): \S`).FindAllStringSubmatch(string(doc), -1)
	var inDoc []string
	for _, m := range listed {
		inDoc = append(inDoc, m[1])
	}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files, parts []string
	for _, e := range ents {
		switch {
		case e.IsDir():
			if gos, _ := filepath.Glob(filepath.Join(e.Name(), "*.go")); len(gos) > 0 {
				parts = append(parts, e.Name())
			}
		case strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go"):
			files = append(files, e.Name())
		}
	}
	if len(files) < 10 {
		t.Fatalf("found %d files", len(files))
	}
	for _, f := range files {
		if n := strings.Count(strings.Join(inDoc, " ")+" ", f+" "); n != 1 {
			t.Errorf("%s is listed %d times in doc.go's map, want once", f, n)
		}
	}
	for _, f := range inDoc {
		if !slices.Contains(files, f) {
			t.Errorf("doc.go's map lists %s, which is not a file of the package", f)
		}
	}
	for _, p := range parts {
		if !strings.Contains(string(doc), "//   - daemon/"+p+": ") {
			t.Errorf("doc.go does not name the package daemon/%s", p)
		}
	}
}
