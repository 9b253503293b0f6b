// Command benchclaude is the harness of the outside-in benchmark
// (bench/outside): the fake Claude Code (fakeclaude) that timestamps the
// hooks the benchmark times, SessionStart and Stop, as it starts them
// (fakeclaude.HookStarted: before the shell of a command hook, before
// an http hook's request), in the file DLGT_BENCH_STAMPS names. In those
// command hooks the forwarder dlgt injected (dlgt-hook) is replaced by
// the program in DLGT_BENCH_STAMP_BIN (bench/outside/stamp): the same
// forwarder code, which also stamps the moment it sends its line, so the
// benchmark can tell the forwarder's start from what follows.
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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/fakeclaude"
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
		fakeclaude.HookStarted = func(event string, http bool) { stampStart(path, event, http) }
	}
	os.Exit(fakeclaude.Main(stampHooks(os.Args[1:], os.Getenv("DLGT_BENCH_STAMP_BIN"))))
}

// stampStart stamps a timed hook as the harness starts it. An http hook
// has no forwarder, so its start is also the moment its request goes
// out: it gets both stamps (EVENT and EVENT-sent, in the stamp program's
// format) with the same time.
func stampStart(path, event string, http bool) {
	if !stamped[event] {
		return
	}
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	line := event + " " + now + "\n"
	if http {
		line += event + "-sent " + now + "\n"
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		f.WriteString(line)
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

// stampHooks replaces the forwarder, dlgt-hook, by the stamp program in
// the stamped command hooks of the --settings argument.
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
							hm["command"] = replaceForwarder(cmd, stamp)
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

// replaceForwarder puts stamp in place of the dlgt-hook program in a
// hook command line ("exec /path/dlgt-hook --socket ..."); any other
// command is left as it is.
func replaceForwarder(cmd, stamp string) string {
	exec, rest := "", cmd
	if r, ok := strings.CutPrefix(cmd, "exec "); ok {
		exec, rest = "exec ", r
	}
	prog, args, _ := strings.Cut(rest, " ")
	if filepath.Base(prog) != "dlgt-hook" {
		return cmd
	}
	return exec + stamp + " " + args
}
