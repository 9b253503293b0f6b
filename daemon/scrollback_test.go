package daemon

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestScrollbackAndRawTranscript(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "sb-1", "[[flood 250]] lots")
	td.waitResult(t, r.Session.ID, r.Cursor)
	var page rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: r.Session.ID, Lines: 50}, &page)
	if len(page.Lines) != 50 || !page.Truncated || page.Before == "" {
		t.Fatalf("page: %d lines truncated=%v before=%q", len(page.Lines), page.Truncated, page.Before)
	}
	// Older pages follow the opaque cursor back to FLOOD 000001.
	var all []string
	all = append(all, page.Lines...)
	for before := page.Before; before != ""; {
		var older rpc.ScrollbackPage
		td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: r.Session.ID, Lines: 100, Before: before}, &older)
		all = append(older.Lines, all...)
		before = older.Before
	}
	var flood []string
	for _, l := range all {
		if strings.HasPrefix(l, "FLOOD ") {
			flood = append(flood, l[:12])
		}
	}
	if len(flood) != 250 || flood[0] != "FLOOD 000001" || flood[249] != "FLOOD 000250" {
		t.Fatalf("scrollback has %d flood rows (first %v)", len(flood), flood[:min(3, len(flood))])
	}
	// Raw pages, followed by next_after, hold the flood bytes.
	var raw []byte
	after := int64(0)
	for {
		var rp rpc.RawPage
		td.mustCall(rpc.MethodTranscriptReadRaw, rpc.TranscriptReadRawParams{Session: r.Session.ID, After: after, LimitBytes: 4096}, &rp)
		data, err := base64.StdEncoding.DecodeString(rp.DataBase64)
		if err != nil || len(data) != rp.ByteLen || rp.ByteLen > 4096 {
			t.Fatalf("raw page: len=%d byte_len=%d err=%v", len(data), rp.ByteLen, err)
		}
		raw = append(raw, data...)
		if !rp.HasMore {
			break
		}
		after = rp.NextAfter
	}
	if !strings.Contains(string(raw), "FLOOD 000250") {
		t.Fatalf("raw transcript lacks the flood (%d bytes)", len(raw))
	}
	// Rows survive a daemon restart, and so does the final screen below them.
	td.stop()
	td.start()
	var again rpc.ScrollbackPage
	td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: r.Session.ID, Lines: 10000}, &again)
	n := 0
	for _, l := range again.Lines {
		if strings.HasPrefix(l, "FLOOD ") {
			n++
		}
	}
	if n != 250 {
		t.Fatalf("after restart %d flood rows, want 250", n)
	}
}

// TestScrollbackLinesBound pins the lines parameter: the default is the latest
// 100 rows, any value is clamped to 1..10,000, a small page returns only the
// newest rows (even fewer than the live grid holds), and truncated/before
// lead back through every older row exactly once.
func TestScrollbackLinesBound(t *testing.T) {
	td := startTestDaemon(t)
	r := td.create(t, "sb-lines", "[[flood 250]] lots")
	td.waitResult(t, r.Session.ID, r.Cursor)
	read := func(lines int, before string) rpc.ScrollbackPage {
		t.Helper()
		var page rpc.ScrollbackPage
		td.mustCall(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: r.Session.ID, Lines: lines, Before: before}, &page)
		return page
	}
	// The result can come before the harness's last redraw: wait for the
	// screen to settle so every read below sees the same rows.
	whole := read(10000, "")
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		again := read(10000, "")
		if strings.Join(again.Lines, "\n") == strings.Join(whole.Lines, "\n") {
			break
		}
		whole = again
	}
	if whole.Truncated || whole.Before != "" || len(whole.Lines) < 250 {
		t.Fatalf("whole read: %d lines truncated=%v before=%q", len(whole.Lines), whole.Truncated, whole.Before)
	}
	tail := func(k int) []string { return whole.Lines[len(whole.Lines)-k:] }
	for _, tc := range []struct{ lines, want int }{
		{0, 100}, {1, 1}, {-1, 1}, {-500, 1}, {2, 2}, {5, 5}, {30, 30}, {100, 100},
	} {
		page := read(tc.lines, "")
		if len(page.Lines) != tc.want || !page.Truncated || page.Before == "" {
			t.Fatalf("lines=%d: %d lines truncated=%v before=%q, want %d truncated", tc.lines, len(page.Lines), page.Truncated, page.Before, tc.want)
		}
		if strings.Join(page.Lines, "\n") != strings.Join(tail(tc.want), "\n") {
			t.Fatalf("lines=%d: not the newest rows: %q", tc.lines, page.Lines)
		}
	}
	if page := read(len(whole.Lines)+50, ""); page.Truncated || page.Before != "" || len(page.Lines) != len(whole.Lines) {
		t.Fatalf("lines beyond the history: %d lines truncated=%v", len(page.Lines), page.Truncated)
	}
	// Paging back with every small page size rebuilds the whole read.
	for _, size := range []int{1, 3, 7, 100} {
		page := read(size, "")
		got := page.Lines
		for pages := 0; page.Before != ""; pages++ {
			if pages > len(whole.Lines) {
				t.Fatalf("size %d: the cursor does not end", size)
			}
			page = read(size, page.Before)
			if len(page.Lines) == 0 || len(page.Lines) > size {
				t.Fatalf("size %d: an older page of %d lines", size, len(page.Lines))
			}
			got = append(append([]string(nil), page.Lines...), got...)
		}
		if strings.Join(got, "\n") != strings.Join(whole.Lines, "\n") {
			t.Fatalf("size %d: paging back gave %d lines, want the %d of the whole read", size, len(got), len(whole.Lines))
		}
	}
	for _, bad := range []string{"nope", "scr_", "scr_zz.0", "scr_1.-1", "scr_1.2.3", "scr_!"} {
		var page rpc.ScrollbackPage
		if err := td.call(rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: r.Session.ID, Before: bad}, &page); err == nil || rpc.AsError(err).Code != rpc.CodeInvalidArgument {
			t.Fatalf("before=%q: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}
