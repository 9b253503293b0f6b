// Command benchclaude is the harness of the outside-in benchmark
// (bench/outside): the fake Claude Code (fakeclaude) with the hook
// commands in its --settings that it times prefixed by the program in
// DLGT_BENCH_STAMP_BIN (bench/outside/stamp), which timestamps the moment
// the hook starts: SessionStart and Stop, the hooks the benchmark times.
//
// The hooks dlgt injects as http hooks the fake posts itself; it stamps
// those through fakeclaude.HTTPHookStarted.
//
// For the ingest and neighbour rows it also prints a stream on demand:
// with DLGT_BENCH_INGEST naming a file, each SIGUSR1 copies that file to
// the terminal as fast as the PTY takes it (what `cat FILE` does in a
// tmux pane), then prints "BENCH-INGEST-DONE N" (N counting the signals
// from 1) and enough empty lines to scroll it into the stable rows, where
// a client sees it with scrollback.read. DLGT_BENCH_PIDFILE names a file
// to write the process id to, so the benchmark can signal it.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dlgt/internal/harnesstest/fakeclaude"
)

func main() {
	if pf := os.Getenv("DLGT_BENCH_PIDFILE"); pf != "" {
		os.WriteFile(pf, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if stream := os.Getenv("DLGT_BENCH_INGEST"); stream != "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGUSR1)
		go printOnSignal(sig, stream, os.Stdout)
	}
	if path := os.Getenv("DLGT_BENCH_STAMPS"); path != "" {
		fakeclaude.HTTPHookStarted = func(event string) { stampHTTP(path, event) }
	}
	os.Exit(fakeclaude.Main(stampHooks(os.Args[1:], os.Getenv("DLGT_BENCH_STAMP_BIN"))))
}

// stampHTTP stamps a timed hook that the harness posts itself (an http
// hook): it has no forwarder, so the hook's start is also the moment its
// request goes out, and both stamps (EVENT and EVENT-sent, in the stamp
// program's format) carry the same time.
func stampHTTP(path, event string) {
	if !stamped[event] {
		return
	}
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		f.WriteString(event + " " + now + "\n" + event + "-sent " + now + "\n")
		f.Close()
	}
}

// ingestTail follows the stream: the marker line, then empty lines that
// push it off a 40-row screen.
func ingestTail(n int) string {
	return fmt.Sprintf("\r\nBENCH-INGEST-DONE %d\r\n", n) + strings.Repeat("\r\n", 60)
}

// printOnSignal copies the stream file to out on each signal, then the
// numbered marker.
func printOnSignal(sig <-chan os.Signal, stream string, out io.Writer) {
	buf := make([]byte, 128<<10) // cat's buffer size
	for n := 1; ; n++ {
		<-sig
		if f, err := os.Open(stream); err == nil {
			io.CopyBuffer(struct{ io.Writer }{out}, f, buf)
			f.Close()
		}
		io.WriteString(out, ingestTail(n))
	}
}

// stamped are the hooks whose start the benchmark times; the others run
// as dlgt injected them, so a path the benchmark ends on another hook
// (UserPromptSubmit confirms a prompt) carries no extra exec.
var stamped = map[string]bool{"SessionStart": true, "Stop": true}

// stampHooks prefixes the stamped hook commands in the --settings
// argument with the stamp program.
func stampHooks(args []string, stamp string) []string {
	if stamp == "" {
		return args
	}
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] != "--settings" {
			continue
		}
		var settings map[string]any
		if json.Unmarshal([]byte(out[i+1]), &settings) != nil {
			return args
		}
		hooks, _ := settings["hooks"].(map[string]any)
		for event, entries := range hooks {
			if !stamped[event] {
				continue
			}
			list, _ := entries.([]any)
			for _, e := range list {
				m, _ := e.(map[string]any)
				inner, _ := m["hooks"].([]any)
				for _, h := range inner {
					if hm, ok := h.(map[string]any); ok {
						if cmd, ok := hm["command"].(string); ok {
							hm["command"] = stamp + " " + cmd
						}
					}
				}
			}
		}
		b, _ := json.Marshal(settings)
		out[i+1] = string(b)
	}
	return out
}
