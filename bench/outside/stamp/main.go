// Command stamp is the bench's hook timestamp: `stamp CMD ARG...` appends
// "EVENT UNIX_NANO" (EVENT being the last argument) to the file named by
// DLGT_BENCH_STAMPS, then becomes CMD (exec, same stdin). It links as
// little as possible so that the stamp is taken right after the harness
// started the hook.
//
// When CMD is the hook forwarder (dlgt-hook), stamp becomes itself in
// forwarding mode instead (`stamp -forward ARG...`, one more exec of a
// small Go program, as exec'ing dlgt-hook would be), which runs the same
// forwarder code (internal/hookfwd) and also appends "EVENT-sent
// UNIX_NANO" once it has read the hook's input, right before the
// forwarder connects and writes its one line. So the benchmark can split
// a hook's time into the forwarder's process start and what the daemon
// does from the line's arrival on.
package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"dlgt/internal/hookfwd"
)

func main() {
	now := time.Now().UnixNano()
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "-forward" {
		os.Exit(forward(args[1:]))
	}
	if len(args) == 0 {
		os.Stderr.WriteString("usage: stamp CMD [ARG...]\n")
		os.Exit(2)
	}
	event := args[len(args)-1]
	stamp(event, now)
	argv0, argv := args[0], args
	if filepath.Base(args[0]) == "dlgt-hook" {
		if self, err := os.Executable(); err == nil {
			argv0, argv = self, append([]string{"stamp", "-forward"}, args[1:]...)
		}
	}
	err := syscall.Exec(argv0, argv, os.Environ())
	os.Stderr.WriteString("stamp: " + argv0 + ": " + err.Error() + "\n")
	os.Exit(1)
}

// stamp appends "EVENT NANOS" to the stamp file, if one is named.
func stamp(event string, nanos int64) {
	if path := os.Getenv("DLGT_BENCH_STAMPS"); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.WriteString(event + " " + strconv.FormatInt(nanos, 10) + "\n")
			f.Close()
		}
	}
}

// forward is dlgt-hook's main with a stdin that notes the time when the
// forwarder has read all of it; the EVENT-sent stamp is written once the
// forwarder is done, so writing it is not inside the time it measures.
func forward(args []string) int {
	event := "?"
	if len(args) > 0 {
		event = args[len(args)-1]
	}
	in := &eofTime{r: os.Stdin}
	code := hookfwd.Main(args, in, os.Stderr)
	if in.at != 0 {
		stamp(event+"-sent", in.at)
	}
	return code
}

// eofTime is a reader that notes when its reader first reported EOF.
type eofTime struct {
	r  io.Reader
	at int64
}

func (e *eofTime) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && e.at == 0 {
		e.at = time.Now().UnixNano()
	}
	return n, err
}
