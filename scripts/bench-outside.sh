#!/usr/bin/env bash
# Outside-in benchmark (docs/measurements/2026-12-04-outside-in-benchmark.md): builds
# dlgt, dlgt-hook and the bench programs, then measures a real daemon as
# a client process sees it, contenders interleaved in each round, every
# row of issue 16's table against its peer (tmux, a raw PTY read,
# /bin/true), and closes with a summary table.
#   scripts/bench-outside.sh [-rev COMMIT] [-rows create,send,hook,waiters,ingest,idle,poll,neighbour]
#                            [-rounds N] [-hook-rounds N] [-old-dlgt PATH] [-perf DIR] [-keep] ...
# -rev builds dlgt and dlgt-hook from that commit (git archive, the
# working tree untouched) instead of the working tree; the bench programs
# always come from the working tree. `-h` lists every flag of the runner.
# Whole-process timing of the hook forwarder with hyperfine (Debian
# package "hyperfine"), when installed, follows the Go runner's figures.
# DLGT_HOOKS=http in the environment reaches the daemon: the Stop rows
# then measure Claude's http hooks instead of the forwarder.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=""
if [ "${1:-}" = "-rev" ]; then
	rev="${2:?-rev needs a commit}"
	shift 2
fi
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
if [ -n "$rev" ]; then
	mkdir "$bin/src"
	git archive "$rev" | tar -x -C "$bin/src"
	(cd "$bin/src" && go build -o "$bin/dlgt" ./cmd/dlgt && go build -o "$bin/dlgt-hook" ./cmd/dlgt-hook)
	echo "dlgt built from commit $(git rev-parse --short "$rev")"
else
	go build -o "$bin/dlgt" ./cmd/dlgt
	go build -o "$bin/dlgt-hook" ./cmd/dlgt-hook
	dirty=""
	git diff --quiet HEAD -- . ':!docs' 2>/dev/null || dirty=" plus uncommitted changes"
	echo "dlgt built from the working tree: $(git rev-parse --short HEAD)$dirty"
fi
go build -o "$bin/stamp" ./bench/outside/stamp
go build -o "$bin/benchclaude" ./harnesstest/benchclaude
go build -o "$bin/outside" ./bench/outside
"$bin/outside" -bin "$bin" "$@"
