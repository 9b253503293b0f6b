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
