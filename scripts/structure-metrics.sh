#!/usr/bin/env bash
# Prints the structure figures docs/measurements/2026-12-05-one-client.md
# quotes, for the checkout it is run in (or the one given): non-test and
# test lines per package, the daemon runtime's methods, and the non-test Go
# files outside harness/ that name a harness in a string literal, and how
# many packages `go list -deps ./client` lists.
#   scripts/structure-metrics.sh [CHECKOUT]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

lines() { # lines of the .go files given on stdin, 0 for none
	xargs -r cat | wc -l
}
echo "package non-test test"
for d in cmd/dlgt client mcp daemon harness rpc statedir store vt pty internal; do
	[ -d "$d" ] || continue
	src=$(find "$d" -name '*.go' ! -name '*_test.go' | lines)
	tst=$(find "$d" -name '*_test.go' | lines)
	echo "$d $src $tst"
done
echo "runtime methods: $(find daemon -maxdepth 1 -name '*.go' ! -name '*_test.go' -print0 |
	xargs -0 grep -hE '^func \(rt \*runtime\)' | wc -l)"
echo "files naming a harness outside harness/: $(grep -rlE '"(claude|codex|gemini)"' --include='*.go' . |
	grep -v '_test.go$' | grep -vE '^\./(harness|harnesstest|bench|examples|\.cache)/' | wc -l)"
echo "go list -deps ./client: $(go list -deps ./client | wc -l) packages"
