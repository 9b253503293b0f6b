package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The docs point only at files of the repository: every relative markdown
// link and every `../…` path in README.md and docs/*.md resolves, from the
// document's directory, to a file or directory inside the repository.
func TestDocsPointInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	span := regexp.MustCompile("`(\\.\\./[^`\\s]+)`")
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			targets = append(targets, m[1])
		}
		for _, m := range span.FindAllStringSubmatch(string(data), -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs := filepath.Join(filepath.Dir(doc), target)
			rel, err := filepath.Rel(root, abs)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				t.Errorf("%s points outside the repository: %s", filepath.Base(doc), target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s points at a missing path: %s", filepath.Base(doc), target)
			}
		}
	}
}
