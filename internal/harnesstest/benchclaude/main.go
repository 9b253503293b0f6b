// Command benchclaude is the harness of the outside-in benchmark
// (bench/outside): the fake Claude Code (fakeclaude) with every hook
// command in its --settings prefixed by the program named in
// DLGT_BENCH_STAMP_BIN (bench/outside/stamp), which timestamps the moment
// the hook starts.
package main

import (
	"encoding/json"
	"os"

	"dlgt/internal/harnesstest/fakeclaude"
)

func main() {
	os.Exit(fakeclaude.Main(stampHooks(os.Args[1:], os.Getenv("DLGT_BENCH_STAMP_BIN"))))
}

// stampHooks prefixes every hook command in the --settings argument with
// the stamp program.
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
		for _, entries := range hooks {
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
