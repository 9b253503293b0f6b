package daemon

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// The fake Claude prints history the way Codex's inline viewport does: a
// scroll region 1..k above its fixed lower rows, each line entered with
// CR LF at row k. Rows leaving the top of that region are history (xterm
// and tmux do the same), so through the whole pipeline (PTY, vt, row store,
// scrollback.read) each line is history once, in order, wide characters
// intact, and the rows below the region are never pushed into it.
func TestInlineScrollRegionHistoryFake(t *testing.T) {
	td := startTestDaemon(t)
	var seq strings.Builder
	seq.WriteString("\x1b[1;6r\x1b[6;1H") // region rows 1..6, cursor at its bottom
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&seq, "\r\nregion line %02d 你好", i)
	}
	seq.WriteString("\x1b[r\x1b[10;1H") // region reset; back to the footer row
	var r rpc.Receipt
	td.mustCall(rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "inline fake", Harness: "claude", Cwd: t.TempDir(), Prompt: "region [[raw " + hex.EncodeToString([]byte(seq.String())) + "]]",
		RequestID: "if-1", Environment: td.env, Rows: 10, Cols: 60,
	}, &r)
	id := r.Session.ID
	td.waitResult(t, id, r.Cursor)
	// A second turn scrolls the whole screen into history.
	var r2 rpc.Receipt
	td.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "more [[long 20]]", RequestID: "if-2"}, &r2)
	td.waitResult(t, id, r2.Cursor)

	var page rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: id, Lines: 10000}, &page)
	next, lastAt := 1, -1
	for i, l := range page.Lines {
		if !strings.HasPrefix(l, "region line ") {
			continue
		}
		if want := fmt.Sprintf("region line %02d 你好", next); l != want {
			t.Fatalf("line %d = %q, want %q\n%s", i, l, want, strings.Join(page.Lines, "\n"))
		}
		next, lastAt = next+1, i
	}
	if next != 13 {
		t.Fatalf("found region lines 1..%d of 12:\n%s", next-1, strings.Join(page.Lines, "\n"))
	}
	if page.AlternateScreen {
		t.Error("alternate_screen set for a main-screen TUI")
	}
	// Everything after the region lines is the second turn, with the
	// first turn's footer and prompt at most once each.
	seen := map[string]int{}
	for _, l := range page.Lines[lastAt+1:] {
		if s := strings.TrimSpace(l); s != "" {
			seen[s]++
			if seen[s] > 1 {
				t.Errorf("%q repeated in history after the region lines", s)
			}
		}
	}
}
