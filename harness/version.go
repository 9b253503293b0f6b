package harness

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
)

// versionRE finds a release number in a harness's --version output
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0").
var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+\.\d+\.\d+[0-9A-Za-z.+-]*`) })

// ProbeVersion runs `bin --version` with env (nil: the caller's own) and
// returns the release number it prints. ctx bounds the run; the error
// carries the output when the command failed or printed no version.
func ProbeVersion(ctx context.Context, bin string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if err != nil {
		return "", fmt.Errorf("%s --version failed: %v: %s", bin, err, text)
	}
	// A sentence's period is not part of the number ("GitHub Copilot CLI
	// 1.0.102.").
	v := strings.TrimRight(versionRE().FindString(string(out)), ".")
	if v == "" {
		return "", fmt.Errorf("%s --version printed no version: %q", bin, text)
	}
	return v, nil
}
