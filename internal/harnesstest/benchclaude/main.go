// Command benchclaude is the harness of the outside-in benchmark
// (bench/outside): the fake Claude Code (fakeclaude) with the hook
// commands in its --settings that it times prefixed by the program in
// DLGT_BENCH_STAMP_BIN (bench/outside/stamp), which timestamps the moment
// the hook starts: SessionStart and Stop, the hooks the benchmark times.
package main

import (
	"encoding/json"
	"os"

	"dlgt/internal/harnesstest/fakeclaude"
)

func main() {
	os.Exit(fakeclaude.Main(stampHooks(os.Args[1:], os.Getenv("DLGT_BENCH_STAMP_BIN"))))
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
