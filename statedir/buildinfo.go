package statedir

import (
	"runtime/debug"
	"sync"
)

// CommitID is Commit, or, for a dlgt built with `go build` or `go install`
// from a git checkout (the go command records the revision by default)
// and no -ldflags setting Commit, that revision, so `dlgt version`,
// `daemon status` and doctor tell builds apart. It reads the build
// information on first use, not at every command's start (docs/design.md).
var CommitID = sync.OnceValue(func() string {
	if Commit != "unknown" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if c := commitOf(bi.Settings); c != "" {
			return c
		}
	}
	return Commit
})

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
