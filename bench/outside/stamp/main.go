// Command stamp is the bench's hook forwarder: the harness (benchclaude)
// runs it in place of dlgt-hook for the hooks the benchmark times. It is
// dlgt-hook's code (hookfwd) with one addition: it appends
// "EVENT-sent UNIX_NANO" (EVENT being the last argument) to the file
// named by DLGT_BENCH_STAMPS once it has read the hook's input, right
// before the forwarder connects and writes its one line. The harness
// stamps the hook's start itself, so the benchmark can split a hook's
// time into the forwarder's start (the shell, the exec, the Go runtime)
// and what the daemon does from the line's arrival on. It links as
// little as dlgt-hook does.
package main

import (
	"io"
	"os"
	"strconv"
	"time"

	"github.com/dlgt-dev/dlgt/hookfwd"
)

func main() {
	args := os.Args[1:]
	event := "?"
	if len(args) > 0 {
		event = args[len(args)-1]
	}
	in := &eofTime{r: os.Stdin}
	code := hookfwd.Main(args, in, os.Stdout, os.Stderr)
	// Written once the forwarder is done, so that writing it is not inside
	// the time it measures.
	if path := os.Getenv("DLGT_BENCH_STAMPS"); path != "" && in.at != 0 {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.WriteString(event + "-sent " + strconv.FormatInt(in.at, 10) + "\n")
			f.Close()
		}
	}
	os.Exit(code)
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
