package daemon

import (
	"encoding/base64"
	"strings"
	"testing"

	"dlgt/rpc"
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
