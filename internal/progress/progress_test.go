package progress

import (
	"strings"
	"testing"
	"time"
)

// The indicator never wraps: it is cut to width-1 columns with an
// ellipsis (moved here from cmd/dlgt with the indicator).
func TestProgressLineClipsToWidth(t *testing.T) {
	l := Line("claude:x", "busy", strings.Repeat("é", 300), 65*time.Second, time.Hour, 60)
	if n := len([]rune(l)); n != 59 || !strings.HasSuffix(l, "…") || !strings.HasPrefix(l, "waiting · claude:x · busy · 1:05/1:00:00") {
		t.Fatalf("line (%d runes) = %q", n, l)
	}
}
