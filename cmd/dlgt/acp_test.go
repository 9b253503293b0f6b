package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// dlgt acp checks its launch before serving: no harness, an unknown
// profile, a bad option or both worktree flags fail at start (exit 1, the
// JSON failure) with nothing served; a good launch serves until stdin ends.
func TestACPCommandLaunchChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acp"}, "missing --harness"},
		{[]string{"acp", "--profile", "nosuch"}, "nosuch"},
		{[]string{"acp", "--harness", "claude", "--harness-option", "novalue"}, "--harness-option"},
		{[]string{"acp", "--harness", "claude", "--worktree", "--no-worktree"}, "exclude each other"},
	} {
		e, out, _ := testEnv(t, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
		if code := run(tc.args, e); code != 1 {
			t.Errorf("%v: exit %d, want 1", tc.args, code)
		}
		var doc struct {
			OK    bool `json:"ok"`
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.OK || !strings.Contains(doc.Error.Message, tc.want) {
			t.Errorf("%v: stdout %q, want a failure naming %q", tc.args, out, tc.want)
		}
	}
	e, out, _ := testEnv(t, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	if code := run([]string{"acp", "--harness", "claude"}, e); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), `"id":1,"result":{`) || !strings.Contains(out.String(), `"protocolVersion":1`) {
		t.Errorf("initialize answered %q", out)
	}
}
