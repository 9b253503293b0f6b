package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/attach"
	"github.com/dlgt-dev/dlgt/internal/render"
)

// Output for people: JSON stays the default (agents and scripts parse it);
// -o text prints the same answer as a table or a few readable lines.
// Failures follow: printed as text on stderr under -o text (printFailure).

// AddOutputFlag registers -o/--output on a command people read.
func AddOutputFlag(cmd *cobra.Command) {
	cmd.Flags().StringP("output", "o", "json", "output format: json (one JSON line, the default) or text (for people)")
}

// TextOutput reports whether the command was asked for -o text; any value
// other than json or text is a usage error.
func TextOutput(cmd *cobra.Command) (bool, error) {
	v, _ := cmd.Flags().GetString("output")
	switch v {
	case "", "json":
		return false, nil
	case "text":
		return true, nil
	}
	return false, Usagef("--output must be json or text, not %q", v)
}

// tableWidth is how many columns a table written to w may take: the
// terminal's width when w is one, else $COLUMNS when that is a positive
// number, else render.DefaultTableWidth.
func (e *Env) tableWidth(w any) int {
	if e.Terminal(w) {
		if _, cols, ok := attach.Size(w); ok {
			return cols
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(e.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	return render.DefaultTableWidth
}
