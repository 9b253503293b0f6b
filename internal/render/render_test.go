package render

import (
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestRelTime(t *testing.T) {
	now := time.UnixMilli(1_000_000_000_000)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{0, "just now"}, {30 * time.Second, "30s ago"}, {5 * time.Minute, "5m ago"},
		{3 * time.Hour, "3h ago"}, {72 * time.Hour, "3d ago"}, {-time.Minute, "now"},
	} {
		if got := RelTime(now.Add(-tc.ago).UnixMilli(), now); got != tc.want {
			t.Errorf("%v ago: %q, want %q", tc.ago, got, tc.want)
		}
	}
	if RelTime(0, now) != "-" {
		t.Error("a zero time is not -")
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"review": "review", "claude:0199a4c2-1111": "claude:0199a4c2-1111", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'",
	} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHostSessionTable(t *testing.T) {
	var b strings.Builder
	now := time.UnixMilli(1_000_000_000_000)
	HostSessionTable(&b, []rpc.Session{{ID: "claude:01", State: "idle", Harness: "claude", Title: "t"}}, []string{"box"}, []string{"box", "longerhost"}, now, 120)
	want := "HOST        SESSION    STATE  HARNESS  TITLE  CREATED  UPDATED\n" +
		"box         claude:01  idle   claude   t      -        -\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
