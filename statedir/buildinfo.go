package statedir

import "runtime/debug"

// A dlgt built with `go build` or `go install` from a git checkout (the
// go command records the revision by default) reports that revision as
// its Commit when no -ldflags set one, so `dlgt version`, `daemon status`
// and doctor tell builds apart.
func init() {
	if Commit != "unknown" {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if c := commitOf(bi.Settings); c != "" {
			Commit = c
		}
	}
}

// commitOf is the short revision the build settings record ("" when
// none), with "-dirty" when the working tree had changes.
func commitOf(settings []debug.BuildSetting) string {
	var rev string
	dirty := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	rev = rev[:min(len(rev), 12)]
	if dirty {
		rev += "-dirty"
	}
	return rev
}
