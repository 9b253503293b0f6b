#!/usr/bin/env bash
# Outside-in benchmark (docs/design.md, "Measured from outside"): builds
# dlgt, dlgt-hook and the bench programs, then measures a real daemon as
# a client process sees it, contenders interleaved in each round.
#   scripts/bench-outside.sh [-rounds N] [-hook-rounds N] [-old-dlgt PATH] [-keep]
# Whole-process timing of the hook forwarder with hyperfine (Debian
# package "hyperfine"), when installed, follows the Go runner's figures.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/dlgt" ./cmd/dlgt
go build -o "$bin/dlgt-hook" ./cmd/dlgt-hook
go build -o "$bin/stamp" ./bench/outside/stamp
go build -o "$bin/benchclaude" ./internal/harnesstest/benchclaude
go build -o "$bin/outside" ./bench/outside
"$bin/outside" -bin "$bin" "$@"
