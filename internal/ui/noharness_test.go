package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harness"
)

// The UI names no harness: the names it shows and offers come from the
// registry through the client, so adding a harness touches no file here.
func TestNamesNoHarness(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range harness.Names(harness.All()) {
			if strings.Contains(string(src), `"`+name) {
				t.Errorf("%s names the harness %q in a literal", f, name)
			}
		}
	}
}
