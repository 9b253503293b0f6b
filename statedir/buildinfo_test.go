package statedir

import (
	"runtime/debug"
	"testing"
)

func TestCommitOf(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}
	for _, c := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, ""},
		{[]debug.BuildSetting{{Key: "vcs", Value: "git"}}, ""},
		{[]debug.BuildSetting{rev}, "0123456789ab"},
		{[]debug.BuildSetting{rev, {Key: "vcs.modified", Value: "false"}}, "0123456789ab"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, rev}, "0123456789ab-dirty"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "abc"},
	} {
		if got := commitOf(c.settings); got != c.want {
			t.Errorf("commitOf(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
}
