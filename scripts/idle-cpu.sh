#!/usr/bin/env bash
# Idle cost of a real daemon, as seen from outside
# (docs/measurements/2026-12-04-idle-daemon.md): a `dlgt daemon` holding N Sessions of the
# fake Claude Code, each idle after one finished turn, next to a tmux server
# holding N idle panes (each running cat), all measured over the same
# windows after a settle:
#   - CPU: the precise on-CPU time, the sum of /proc/PID/task/*/schedstat,
#     and utime+stime from /proc/PID/stat (clock ticks, 10 ms each, too
#     coarse for an idle process but what top shows);
#   - wake-ups: context switches summed over the process's threads
#     (voluntary + involuntary, /proc/PID/task/*/status), per second;
#   - with -strace, one more window per daemon under `strace -f -c` (it
#     slows what it watches; its counts, not its times, are the point).
#
#   scripts/idle-cpu.sh [-sessions N] [-windows N] [-seconds S] [-settle S]
#                       [-bin DIR] [-compare DIR] [-strace] [-keep]
#
# The dlgt and benchclaude binaries are built from this tree unless -bin
# DIR holds them. -compare DIR runs a second daemon from the binaries in
# DIR (an older build: go build -o DIR/dlgt ./cmd/dlgt and -o
# DIR/benchclaude ./harnesstest/benchclaude at that commit) with
# its own N Sessions, measured in the same windows. The settle starts
# when the last Session's turn ended; a daemon polls a transcript for a
# few seconds after its turn, so settle ≥ 4 s measures the idle state.
# The harness processes are not counted: they are the Sessions' own, as
# the panes' cat processes are tmux's.
set -euo pipefail
cd "$(dirname "$0")/.."

sessions=16 windows=3 seconds=10 settle=4 bin="" compare="" use_strace=0 keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	-sessions) sessions="$2"; shift 2 ;;
	-windows) windows="$2"; shift 2 ;;
	-seconds) seconds="$2"; shift 2 ;;
	-settle) settle="$2"; shift 2 ;;
	-bin) bin="$2"; shift 2 ;;
	-compare) compare="$2"; shift 2 ;;
	-strace) use_strace=1; shift ;;
	-keep) keep=1; shift ;;
	*) echo "usage: $0 [-sessions N] [-windows N] [-seconds S] [-settle S] [-bin DIR] [-compare DIR] [-strace] [-keep]" >&2; exit 2 ;;
	esac
done
for tool in jq tmux; do
	command -v "$tool" >/dev/null || { echo "$0 needs $tool" >&2; exit 2; }
done

work="$(mktemp -d /tmp/dlgt-idle.XXXXXX)"
tmux_sock="$work/tmux.sock"
names=() pids=()
cleanup() {
	local i
	for i in "${!pids[@]}"; do # the daemons (not this shell's children)
		[ "${names[$i]}" = tmux ] && continue
		kill -INT "${pids[$i]}" 2>/dev/null || continue
		for _ in $(seq 200); do
			[ -e "/proc/${pids[$i]}" ] || break
			sleep 0.05
		done
	done
	tmux -S "$tmux_sock" kill-server 2>/dev/null || true
	if [ "$keep" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

if [ -z "$bin" ]; then
	bin="$work/bin"
	go build -o "$bin/dlgt" ./cmd/dlgt
	go build -o "$bin/benchclaude" ./harnesstest/benchclaude
fi

# start_daemon NAME DIR: a daemon from DIR's binaries on a home of its
# own, with $sessions Sessions each after one finished turn.
start_daemon() (
	local name="$1" dir="$2" home="$work/$1" i r id cursor f
	mkdir -p -m 0700 "$home/cwd"
	export DLGT_HOME="$home" DLGT_SOCKET="$home/d.sock" DLGT_NO_AUTOSTART=1
	# The client environment travels with create: the fake harness,
	# started at once, and its one-shot idle Notification (60 s after a
	# turn, as the real CLI) pushed past the measurement.
	export HOME="$home" DLGT_CLAUDE_BIN="$dir/benchclaude" FAKECLAUDE_STARTUP_MS=0 FAKECLAUDE_IDLE_MS=3600000
	"$dir/dlgt" daemon 2>"$home/daemon.log" >/dev/null &
	echo $! >"$home/pid"
	for _ in $(seq 200); do
		[ "$("$dir/dlgt" daemon status 2>/dev/null | jq -r .running 2>/dev/null)" = true ] && break
		sleep 0.05
	done
	for i in $(seq "$sessions"); do
		r="$("$dir/dlgt" session create --harness claude --cwd "$home/cwd" --title "idle-$i" --request-id "idle-$i" -- "hello $i")"
		id="$(jq -r .session.id <<<"$r")" cursor="$(jq -r .cursor <<<"$r")"
		f="$("$dir/dlgt" session fetch "$id" --cursor "$cursor" --wait 30s --until result)"
		[ "$(jq -r .reason <<<"$f")" = result ] || { echo "$name: Session $i: no result: $f" >&2; exit 1; }
	done
)

names+=(dlgt)
start_daemon dlgt "$bin" & starting=($!)
if [ -n "$compare" ]; then
	names+=(compare)
	start_daemon compare "$compare" & starting+=($!)
fi
for p in "${starting[@]}"; do wait "$p"; done
for n in "${names[@]}"; do pids+=("$(cat "$work/$n/pid")"); done

tmux -S "$tmux_sock" -f /dev/null new-session -d -x 80 -y 24 cat
for _ in $(seq 2 "$sessions"); do tmux -S "$tmux_sock" new-window -d cat; done
names+=(tmux) pids+=("$(tmux -S "$tmux_sock" display-message -p '#{pid}')")

# sample PID: on-CPU ns (schedstat), clock ticks (stat), context switches.
sample() {
	local ns=0 sw=0 t a b ticks
	for t in /proc/"$1"/task/*; do
		read -r a _ <"$t/schedstat" && ns=$((ns + a))
		b=$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$t/status") && sw=$((sw + b))
	done
	ticks=$(awk '{print $14 + $15}' "/proc/$1/stat")
	echo "$ns $ticks $sw"
}

sleep "$settle"
clk=$(getconf CLK_TCK)
echo "idle cost, $sessions Sessions / panes each, ${seconds}s windows after ${settle}s settle (% of one core; wake-ups = context switches per second)"
[ -n "$compare" ] && echo "dlgt: $bin/dlgt; compare: $compare/dlgt"
printf '%-8s %-8s %10s %10s %12s\n' window process cpu-% tick-cpu-% wakeups/s
results=()
for w in $(seq "$windows"); do
	before=()
	for i in "${!pids[@]}"; do before+=("$(sample "${pids[$i]}")"); done
	sleep "$seconds"
	for i in "${!pids[@]}"; do
		read -r n0 t0 s0 <<<"${before[$i]}"
		read -r n1 t1 s1 <<<"$(sample "${pids[$i]}")"
		line=$(awk -v n=$((n1 - n0)) -v t=$((t1 - t0)) -v s=$((s1 - s0)) -v sec="$seconds" -v clk="$clk" \
			'BEGIN {printf "%10.3f %10.3f %12.1f", n / (sec * 1e7), t * 100 / (clk * sec), s / sec}')
		printf '%-8s %-8s %s\n' "$w" "${names[$i]}" "$line"
		results+=("${names[$i]} $line")
	done
done
for p in "${names[@]}"; do
	printf '%-8s %-8s' median "$p"
	for col in 2 3 4; do
		printf ' %s' "$(printf '%s\n' "${results[@]}" | awk -v p="$p" -v c="$col" '$1 == p {print $c}' | sort -g |
			awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%10.3f", m}')"
	done
	echo
done

if [ "$use_strace" = 1 ]; then
	for i in "${!pids[@]}"; do
		echo
		echo "syscalls of ${names[$i]} (pid ${pids[$i]}) over ${seconds}s (strace -f -c):"
		timeout -s INT "$seconds" strace -f -c -p "${pids[$i]}" -o "$work/strace.txt" 2>/dev/null || true
		if [ -s "$work/strace.txt" ]; then cat "$work/strace.txt"; else echo "  (none)"; fi
	done
fi
