package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every dlgt command runs the initialisation of every package the binary
// links, whatever the command does. dlgt's own packages keep theirs
// small: patterns compile and the build information is read on first use
// (sync.OnceValue), so a command that only talks to the socket does not
// pay for them (docs/design.md, "the CLI's start"). Bytes allocated are
// counted, not time: GODEBUG=inittrace=1 prints both for each package.
const ownInitBytes = 4096

var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, ([0-9]+) bytes, [0-9]+ allocs$`)

func TestOwnPackagesInitSmall(t *testing.T) {
	if os.Getenv("DLGT_INITTRACE_CHILD") == "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnPackagesInitSmall$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "DLGT_INITTRACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		m := initLine.FindStringSubmatch(line)
		// The test kit is no part of the binary; this package's own line
		// here counts its tests' values too.
		if m == nil || !strings.HasPrefix(m[1], "github.com/dlgt-dev/dlgt/") ||
			strings.HasPrefix(m[1], "github.com/dlgt-dev/dlgt/harnesstest") || m[1] == "github.com/dlgt-dev/dlgt/cmd/dlgt" {
			continue
		}
		seen++
		if n, _ := strconv.Atoi(m[2]); n > ownInitBytes {
			t.Errorf("%s allocates %d bytes at init (bound %d): make its package-level values lazy", m[1], n, ownInitBytes)
		}
	}
	if seen < 5 {
		t.Fatalf("only %d of dlgt's packages in the init trace:\n%s", seen, out)
	}
}
