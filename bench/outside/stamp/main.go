// Command stamp is the bench's hook timestamp: `stamp CMD ARG...` appends
// "EVENT UNIX_NANO" (EVENT being the last argument) to the file named by
// DLGT_BENCH_STAMPS, then becomes CMD (exec, same stdin). It links as
// little as possible so that the stamp is taken right after the harness
// started the hook.
package main

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

func main() {
	now := time.Now().UnixNano()
	args := os.Args[1:]
	if len(args) == 0 {
		os.Stderr.WriteString("usage: stamp CMD [ARG...]\n")
		os.Exit(2)
	}
	if path := os.Getenv("DLGT_BENCH_STAMPS"); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.WriteString(args[len(args)-1] + " " + strconv.FormatInt(now, 10) + "\n")
			f.Close()
		}
	}
	err := syscall.Exec(args[0], args, os.Environ())
	os.Stderr.WriteString("stamp: " + args[0] + ": " + err.Error() + "\n")
	os.Exit(1)
}
