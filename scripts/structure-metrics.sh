#!/usr/bin/env bash
# Prints the structure figures docs/measurements/2026-12-05-one-client.md
# and 2026-12-07-structure.md quote, for the checkout it is run in (or the
# one given):
#   - non-test and test lines per top folder, and per daemon package;
#   - the daemon runtime's methods;
#   - imports that run from a lower layer to a higher one: between
#     packages (by the layer table below) and between top folders (a folder
#     import lying on a cycle of folder imports runs back up in any order of
#     the folders);
#   - the non-test Go files outside harness/ that name a harness in a string
#     literal, and how many packages `go list -deps ./client` lists;
#   - repeated code in the product (non-test .go files), when the
#     `duplicates` command is installed.
#   scripts/structure-metrics.sh [CHECKOUT]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
mod=$(go list -m)

lines() { # lines of the .go files given on stdin, 0 for none
	xargs -r cat | wc -l
}
echo "package non-test test"
for d in cmd/dlgt cmd/dlgtc internal/cli client mcp acp daemon harness rpc statedir store vt pty internal; do
	[ -d "$d" ] || continue
	src=$(find "$d" -name '*.go' ! -name '*_test.go' | lines)
	tst=$(find "$d" -name '*_test.go' | lines)
	echo "$d $src $tst"
done
echo "daemon packages (non-test test):"
for d in $(go list -f '{{.Dir}}' ./daemon/...); do
	rel=${d#"$PWD"/}
	src=$(find "$rel" -maxdepth 1 -name '*.go' ! -name '*_test.go' | lines)
	tst=$(find "$rel" -maxdepth 1 -name '*_test.go' | lines)
	echo "  $rel $src $tst"
done
echo "runtime methods: $(find daemon -maxdepth 1 -name '*.go' ! -name '*_test.go' -print0 |
	xargs -0 grep -hE '^func \([a-z]+ \*runtime\)' | wc -l)"

# The layer of a package, lowest first. An import from a package to one of
# a higher layer runs up. The test kit is above everything: no product
# package may import it.
layer() {
	case $1 in
	rpc | store | vt | vt/* | pty | statedir | hookfwd | procmem) echo 1 ;; # leaves
	harness | harness/*) echo 2 ;;                                                         # harness adapters
	client | client/*) echo 3 ;;                                                           # the typed client
	harnesstest | harnesstest/*) echo 9 ;;                               # the test kit
	internal/ui | internal/ui/* | mcp | mcp/* | acp | acp/*) echo 5 ;;                     # front-ends
	internal/*) echo 4 ;;                                                                  # front-end helpers
	daemon/*) echo 6 ;;                                                                    # the daemon's parts
	daemon) echo 7 ;;                                                                      # the composition root
	cmd/* | bench/* | examples/*) echo 8 ;;                                                # programs
	*) echo 0 ;;
	esac
}
edges=$(go list -f '{{$p := .ImportPath}}{{range .Imports}}{{$p}} {{.}}{{"\n"}}{{end}}' ./... |
	awk -v m="$mod/" 'index($1, m) == 1 && index($2, m) == 1 { print substr($1, length(m) + 1), substr($2, length(m) + 1) }' |
	grep -v '^harnesstest' || true)
up=0
while read -r from to; do
	[ -n "$from" ] || continue
	lf=$(layer "$from") lt=$(layer "$to")
	if [ "$lf" = 0 ] || [ "$lt" = 0 ]; then
		echo "  unlayered package in $from -> $to: add it to layer() in $0" >&2
	elif [ "$lt" -gt "$lf" ]; then
		echo "  up: $from -> $to"
		up=$((up + 1))
	fi
done <<<"$edges"
echo "package imports running up: $up"
# Folder imports on a cycle: the transitive closure of the folder graph.
awk '{ split($1, a, "/"); split($2, b, "/"); if (a[1] != b[1]) print a[1], b[1] }' <<<"$edges" | sort -u |
	awk '{ e[$1 " " $2] = 1; r[$1, $2] = 1; n[$1] = 1; n[$2] = 1 }
	END {
		for (k in n) for (i in n) for (j in n) if (r[i, k] && r[k, j]) r[i, j] = 1
		c = 0
		for (x in e) { split(x, p, " "); if (r[p[2], p[1]]) { print "  on a cycle: " x; c++ } }
		print "folder imports running up (on a cycle): " c
	}'
echo "files naming a harness outside harness/: $(grep -rlE '"(claude|codex|gemini)"' --include='*.go' . |
	grep -v '_test.go$' | grep -vE '^\./(harness|harnesstest|bench|examples|\.cache)/' | wc -l)"
echo "go list -deps ./client: $(go list -deps ./client | wc -l) packages"
if command -v duplicates >/dev/null; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	git ls-files '*.go' | grep -v '_test\.go$' | grep -vE '^(harnesstest|bench|examples)/' |
		while read -r f; do mkdir -p "$tmp/$(dirname "$f")" && cp "$f" "$tmp/$f"; done
	echo "repeated code in the product: $(duplicates --repo "$tmp" --seconds 120 | head -1)"
fi
