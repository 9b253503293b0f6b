package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTrustClaudeProjectKeepsOtherKeysAndNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	orig := `{"numStartups": 12345678901234567, "projects": {"/a": {"allowedTools": ["x"]}}, "theme": "dark"}`
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := trustClaudeProject(path, "/b"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "12345678901234567") {
		t.Fatalf("number changed: %s", data)
	}
	var st struct {
		Projects map[string]map[string]any `json:"projects"`
		Theme    string                    `json:"theme"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if st.Theme != "dark" || st.Projects["/b"]["hasTrustDialogAccepted"] != true || st.Projects["/a"]["allowedTools"] == nil {
		t.Fatalf("state = %s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v", fi.Mode())
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("lock left behind: %v", err)
	}
}

// Concurrent trust writes (many Sessions starting at once) never lose an
// entry, and a writer waits for a held lock.
func TestTrustClaudeProjectConcurrentAndLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	if err := os.Mkdir(path+".lock", 0o700); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, func() { os.Remove(path + ".lock") })
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := trustClaudeProject(path, filepath.Join("/p", string(rune('a'+i)))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var st struct {
		Projects map[string]any `json:"projects"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &st); err != nil || len(st.Projects) != 16 {
		t.Fatalf("projects = %d (%v): %s", len(st.Projects), err, data)
	}
}

// A lock left behind by a killed Claude (stale: not touched for
// claudeLockStale) is broken, also for a project already trusted, and
// the file is left as it was.
func TestTrustClaudeProjectBreaksStaleLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	orig := `{"projects": {"/a": {"hasTrustDialogAccepted": true}}}`
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path+".lock", 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-claudeLockStale - time.Second)
	if err := os.Chtimes(path+".lock", old, old); err != nil {
		t.Fatal(err)
	}
	if err := trustClaudeProject(path, "/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("stale lock left: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != orig {
		t.Fatalf("a trusted project's file was rewritten: %s", data)
	}
}
