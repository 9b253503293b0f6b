#!/bin/sh
# Long soak, kill -9 loop and scale figures of
# docs/measurements/2026-12-03-scale-and-soak.md. Run from the repository root:
#
#   scripts/soak.sh                 # all three, 3-minute load soak, 40 kills
#   DLGT_SOAK_DURATION=10m DLGT_SOAK_KILLS=100 scripts/soak.sh
#   scripts/soak.sh TestSoakScale   # one of them
#
# The figures are built without -race (the race detector multiplies CPU
# and memory); the CI forms run under -race with `go test -race -run Soak
# ./daemon/`. Figures are printed as "soak:", "kill loop:" and "scale:"
# log lines.
set -eu
run=${1:-'^(TestSoakLoadLong|TestSoakKillLoopLong|TestSoakScale)$'}
bin=$(mktemp -d)/daemon.soak.test
go test -c -tags soak -o "$bin" ./daemon/
cd daemon
exec "$bin" -test.run "$run" -test.v -test.timeout 60m
