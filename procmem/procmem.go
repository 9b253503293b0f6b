// Package procmem reads a process's memory figures from /proc, for the
// soak and load tests and the outside-in benchmark.
package procmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Of returns pid's resident set now and its peak so far (VmRSS and VmHWM
// of /proc/PID/status), in KiB.
func Of(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm, nil
}

// GroupRSS returns the summed resident set, in KiB, of every process in
// process group pgid (a harness and the helpers it started: a PTY child
// leads its own group). Processes that exit during the scan are skipped.
// RSS counts shared pages once per process, so the sum is an upper bound
// of what the group costs.
func GroupRSS(pgid int) (int64, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields start after the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if rss, _, err := Of(pid); err == nil {
			sum += rss
		}
	}
	return sum, nil
}
