#!/usr/bin/env bash
# Idle cost of a real daemon, as seen from outside (docs/design.md, "Idle
# daemon, measured from outside"): a `dlgt daemon` holding N Sessions of the
# fake Claude Code, each idle after one finished turn, next to a tmux server
# holding N idle panes (each running cat), both measured over the same
# windows after a settle:
#   - CPU: utime+stime from /proc/PID/stat (clock ticks, 10 ms each) and the
#     precise on-CPU time, the sum of /proc/PID/task/*/schedstat;
#   - wake-ups: context switches summed over the process's threads
#     (voluntary + involuntary, /proc/PID/task/*/status);
#   - with -strace, one more window under `strace -f -c` (slows what it
#     watches; its counts, not its times, are the point).
#
#   scripts/idle-cpu.sh [-sessions N] [-windows N] [-seconds S] [-settle S]
#                       [-bin DIR] [-strace] [-keep]
#
# -bin DIR uses the dlgt and benchclaude binaries in DIR instead of building
# them (e.g. an older dlgt, to compare). Prints one line per window and the
# median. The harness processes are not counted: they are the Sessions'
# own, as the panes' cat processes are tmux's.
set -euo pipefail
cd "$(dirname "$0")/.."

sessions=16 windows=3 seconds=10 settle=2 bin="" use_strace=0 keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	-sessions) sessions="$2"; shift 2 ;;
	-windows) windows="$2"; shift 2 ;;
	-seconds) seconds="$2"; shift 2 ;;
	-settle) settle="$2"; shift 2 ;;
	-bin) bin="$2"; shift 2 ;;
	-strace) use_strace=1; shift ;;
	-keep) keep=1; shift ;;
	*) echo "usage: $0 [-sessions N] [-windows N] [-seconds S] [-settle S] [-bin DIR] [-strace] [-keep]" >&2; exit 2 ;;
	esac
done

work="$(mktemp -d /tmp/dlgt-idle.XXXXXX)"
daemon_pid="" tmux_sock="$work/tmux.sock"
cleanup() {
	[ -n "$daemon_pid" ] && kill -INT "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	tmux -S "$tmux_sock" kill-server 2>/dev/null || true
	if [ "$keep" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

if [ -z "$bin" ]; then
	bin="$work/bin"
	go build -o "$bin/dlgt" ./cmd/dlgt
	go build -o "$bin/benchclaude" ./internal/harnesstest/benchclaude
fi
dlgt="$bin/dlgt"

home="$work/home" cwd="$work/cwd"
mkdir -p -m 0700 "$home" "$cwd"
export DLGT_HOME="$home" DLGT_SOCKET="$work/d.sock" DLGT_NO_AUTOSTART=1
# The client environment travels with create: the fake harness, started at
# once, and its one-shot idle Notification (60 s after a turn, as the real
# CLI) pushed past the measurement.
export HOME="$home" DLGT_CLAUDE_BIN="$bin/benchclaude" FAKECLAUDE_STARTUP_MS=0 FAKECLAUDE_IDLE_MS=3600000

"$dlgt" daemon 2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 200); do
	[ "$("$dlgt" daemon status 2>/dev/null | jq -r .running 2>/dev/null)" = true ] && break
	sleep 0.05
done

for i in $(seq "$sessions"); do
	r="$("$dlgt" session create --harness claude --cwd "$cwd" --title "idle-$i" --request-id "idle-$i" -- "hello $i")"
	id="$(jq -r .session.id <<<"$r")" cursor="$(jq -r .cursor <<<"$r")"
	f="$("$dlgt" session fetch "$id" --cursor "$cursor" --wait 30s --until result)"
	[ "$(jq -r .reason <<<"$f")" = result ] || { echo "Session $i: no result: $f" >&2; exit 1; }
done

tmux -S "$tmux_sock" -f /dev/null new-session -d -x 80 -y 24 cat
for _ in $(seq 2 "$sessions"); do tmux -S "$tmux_sock" new-window -d cat; done
tmux_pid="$(tmux -S "$tmux_sock" display-message -p '#{pid}')"

# sample PID: on-CPU ns (schedstat), clock ticks (stat), context switches.
sample() {
	local ns=0 sw=0 t a b
	for t in /proc/"$1"/task/*; do
		read -r a _ <"$t/schedstat" && ns=$((ns + a))
		b=$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$t/status") && sw=$((sw + b))
	done
	local ticks
	ticks=$(awk '{print $14 + $15}' "/proc/$1/stat")
	echo "$ns $ticks $sw"
}

sleep "$settle"
clk=$(getconf CLK_TCK)
echo "idle cost, $sessions Sessions / panes, ${seconds}s windows after ${settle}s settle (% of one core; wake-ups = context switches per second)"
printf '%-8s %-8s %10s %10s %12s\n' window process cpu-% tick-cpu-% wakeups/s
results=()
for w in $(seq "$windows"); do
	read -r dn0 dt0 ds0 <<<"$(sample "$daemon_pid")"
	read -r tn0 tt0 ts0 <<<"$(sample "$tmux_pid")"
	sleep "$seconds"
	read -r dn1 dt1 ds1 <<<"$(sample "$daemon_pid")"
	read -r tn1 tt1 ts1 <<<"$(sample "$tmux_pid")"
	for p in dlgt tmux; do
		if [ $p = dlgt ]; then n=$((dn1 - dn0)) t=$((dt1 - dt0)) s=$((ds1 - ds0)); else n=$((tn1 - tn0)) t=$((tt1 - tt0)) s=$((ts1 - ts0)); fi
		line=$(awk -v n="$n" -v t="$t" -v s="$s" -v sec="$seconds" -v clk="$clk" \
			'BEGIN {printf "%10.3f %10.3f %12.1f", n / (sec * 1e7), t * 100 / (clk * sec), s / sec}')
		printf '%-8s %-8s %s\n' "$w" "$p" "$line"
		results+=("$p $line")
	done
done
for p in dlgt tmux; do
	printf '%-8s %-8s' median "$p"
	for col in 2 3 4; do
		printf ' %s' "$(printf '%s\n' "${results[@]}" | awk -v p="$p" -v c="$col" '$1 == p {print $c}' | sort -g |
			awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%10.3f", m}')"
	done
	echo
done

if [ "$use_strace" = 1 ]; then
	echo
	echo "syscalls of the daemon over ${seconds}s (strace -f -c):"
	timeout -s INT "$seconds" strace -f -c -p "$daemon_pid" -o "$work/strace.txt" 2>/dev/null || true
	cat "$work/strace.txt"
	echo "syscalls of the tmux server over ${seconds}s (strace -f -c):"
	timeout -s INT "$seconds" strace -f -c -p "$tmux_pid" -o "$work/strace-tmux.txt" 2>/dev/null || true
	[ -s "$work/strace-tmux.txt" ] && cat "$work/strace-tmux.txt" || echo "  (none)"
fi
