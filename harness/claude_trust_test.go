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

// A project already trusted needs no write, so a lock left behind by a
// killed Claude does not stand in the way of a resume; an untrusted one
// waits for the lock.
func TestTrustClaudeProjectAlreadyTrustedSkipsLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	if err := os.WriteFile(path, []byte(`{"projects": {"/a": {"hasTrustDialogAccepted": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path+".lock", 0o700); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- trustClaudeProject(path, "/a") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("trusting a trusted project waited for the lock")
	}
	go func() { done <- trustClaudeProject(path, "/b") }()
	select {
	case err := <-done:
		t.Fatalf("an untrusted project was written past a held lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	os.Remove(path + ".lock")
	if err := <-done; err != nil || !claudeTrusts(path, "/b") || !claudeTrusts(path, "/a") {
		t.Fatalf("after the lock was released: %v", err)
	}
}
