package client

import (
	"strings"
	"testing"
)

func TestTitleFrom(t *testing.T) {
	for _, tc := range []struct{ prompt, want string }{
		{"Review the last commit", "Review the last commit"},
		{"\n\n  Fix\tthe test\nand more", "Fix the test"},
		{strings.Repeat("a", 70), strings.Repeat("a", 60) + "…"},
		{"\x1b[31mred\u202e", "[31mred"},
		{" \n\t\n", "delegated task"},
	} {
		if got := TitleFrom(tc.prompt); got != tc.want {
			t.Errorf("TitleFrom(%q) = %q, want %q", tc.prompt, got, tc.want)
		}
	}
}

func TestNewRequestID(t *testing.T) {
	a, b := NewRequestID("cli"), NewRequestID("cli")
	if a == b || !strings.HasPrefix(a, "cli-") || len(a) != len("cli-")+24 {
		t.Fatalf("ids %q %q", a, b)
	}
}
