package daemon

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/vt"
	"github.com/dlgt-dev/dlgt/vt/vttest"
)

// Real-CLI tests of inline (main-screen) TUIs: a long reply scrolls off
// the top of the screen into stable rows, each line once and in order, as
// in a terminal's own scrollback, and the same bytes give the same history
// in tmux. Skipped when the pinned CLI is absent.
//
// DLGT_INLINE_CAPTURE_DIR, when set, receives each Session's raw PTY bytes
// (<harness>-inline-<cols>x<rows>.bin), the captures vt's golden
// comparison against tmux replays (see vt/testdata/captures/README.md).

const (
	inlineRows, inlineCols = 40, 100
	inlineLines            = 150
	inlineTail             = 60 // a second reply's lines, after a resize
)

// inlineParagraph is one paragraph of 12 sentences the TUIs wrap at the
// screen's width.
var inlineParagraph = strings.Repeat("This paragraph is wrapped by the TUI itself at the width of the screen. ", 12)

// inlineLine is line i of the long reply: numbered, some with wide
// characters (CJK, emoji) and the narrow symbols Claude Code draws.
func inlineLine(i int) string {
	s := fmt.Sprintf("row %03d of the inline history", i)
	switch i % 5 {
	case 0:
		s += " 你好，世界"
	case 1:
		s += " ● ❯ ✻ marks"
	case 2:
		s += " 🙂 ✅ done"
	}
	return s
}

func inlineReply() string {
	lines := make([]string, inlineLines)
	for i := range lines {
		lines[i] = inlineLine(i + 1)
	}
	return strings.Join(lines, "\n")
}

// startInline starts a daemon and a mock for harness, with the long reply
// scripted for prompts starting INLINE-150.
func startInline(t *testing.T, harness string) *e2eClaude {
	t.Helper()
	script := mockapi.Script{
		mockapi.Prefix("INLINE-150", mockapi.Reply{Text: inlineReply(), Chunk: 64}),
		// The same reply streamed slowly: the TUI repaints its live area
		// (spinner, partial message) many times while lines scroll off.
		// A paragraph the TUI wraps itself, then the numbered lines.
		mockapi.Prefix("INLINE-WRAP", mockapi.Reply{Text: inlineParagraph + "\n\n" + inlineReply(), Chunk: 64}),
		mockapi.Prefix("INLINE-STREAM", mockapi.Reply{Text: inlineReply(), Chunk: 24, Delay: 15 * time.Millisecond}),
		mockapi.Prefix("INLINE-TAIL", mockapi.Reply{Text: mockapi.Lines("tail row", inlineTail), Chunk: 64}),
	}
	switch harness {
	case "claude":
		return startE2EClaude(t, script)
	case "codex":
		e, _ := startE2ECodex(t, script)
		return e
	case "gemini":
		e := geminiRig(t, script)
		e.td = startTestDaemonWith(t, e.env)
		return e
	}
	t.Fatalf("unknown harness %q", harness)
	return nil
}

// inlineStable pages session.fetch from cursor with the screen and returns
// every stable row after it (joined fragments), the last screen and the
// final cursor.
func (e *e2eClaude) inlineStable(t *testing.T, id, cursor string) ([]string, *rpc.Screen, string) {
	t.Helper()
	var rows []string
	var last *rpc.Screen
	partial := ""
	for range 200 {
		var doc rpc.FetchDocument
		e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "screen": true}, &doc)
		cursor = doc.Cursor
		if len(doc.Sessions) == 1 && doc.Sessions[0].Screen != nil {
			sc := doc.Sessions[0].Screen
			last = sc
			if sc.Reset {
				t.Errorf("screen reset (%v) while paging the turn's rows", sc.ResetReason)
			}
			if f := sc.FragmentBefore; f != nil {
				partial += f.Text
				if f.Complete {
					rows, partial = append(rows, partial), ""
				}
			}
			rows = append(rows, sc.Stable...)
			if f := sc.FragmentAfter; f != nil {
				partial += f.Text
			}
		}
		if !doc.HasMore {
			return rows, last, cursor
		}
	}
	t.Fatal("session.fetch kept has_more:true for 200 pages")
	return nil, nil, ""
}

// inlineRaw reads the Session's whole raw PTY transcript.
func (e *e2eClaude) inlineRaw(t *testing.T, id string) []byte {
	t.Helper()
	var out []byte
	var after int64
	for {
		var page rpc.RawPage
		e.call(t, rpc.MethodTranscriptReadRaw, rpc.TranscriptReadRawParams{Session: id, After: after, LimitBytes: 8 << 20}, &page)
		if page.Start != 0 && after == 0 {
			t.Fatalf("raw transcript starts at %d: retention dropped the head", page.Start)
		}
		b, err := base64.StdEncoding.DecodeString(page.DataBase64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		after = page.NextAfter
		if !page.HasMore {
			return out
		}
	}
}

// inlineSettle waits until the Session's raw output has not grown for a
// second.
// inlineTurn creates a Session with p in a fresh directory on an
// inlineRows×inlineCols terminal, waits for its completed result and for
// the TUI to settle, and returns the receipt.
func (e *e2eClaude) inlineTurn(t *testing.T, p rpc.SessionCreateParams) rpc.Receipt {
	t.Helper()
	p.Cwd, p.Rows, p.Cols = t.TempDir(), inlineRows, inlineCols
	var r rpc.Receipt
	e.accept(t, rpc.MethodSessionCreate, p, &r)
	id := r.Session.ID
	if _, res := e.waitResult(t, id, r.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if p.Harness == "gemini" {
		e.geminiReady(t, id)
	}
	e.inlineSettle(t, id)
	return r
}

// geminiTitle matches Gemini CLI's window title (OSC 0), which tracks its
// state: "◇  Ready (dir)", "✦  Working… (dir)", "✋  Action Required".
var geminiTitle = regexp.MustCompile("\x1b\\]0;([^\x07\x1b]*)")

// geminiReady waits until Gemini CLI's last window title says Ready: its
// result can come while it still renders a streamed reply, and under load
// it went quiet for over a second while its title said Working.
func (e *e2eClaude) geminiReady(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		titles := geminiTitle.FindAllSubmatch(e.inlineRaw(t, id), -1)
		if n := len(titles); n > 0 && strings.Contains(string(titles[n-1][1]), "Ready") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Gemini CLI's title did not say Ready within 60 s")
		}
	}
}

func (e *e2eClaude) inlineSettle(t *testing.T, id string) {
	t.Helper()
	var prev int64 = -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		end := max(prev, 0)
		for {
			var page rpc.RawPage
			e.call(t, rpc.MethodTranscriptReadRaw, rpc.TranscriptReadRawParams{Session: id, After: end, LimitBytes: 8 << 20}, &page)
			end = page.NextAfter
			if !page.HasMore {
				break
			}
		}
		if end == prev {
			return
		}
		prev = end
	}
	t.Fatal("the TUI kept writing for 30 s")
}

// scrollbackAll is scrollback.read with the largest page.
func (e *e2eClaude) scrollbackAll(t *testing.T, id string) rpc.ScrollbackPage {
	t.Helper()
	var page rpc.ScrollbackPage
	e.call(t, rpc.MethodScrollbackRead, rpc.ScrollbackReadParams{Session: id, Lines: 10000}, &page)
	return page
}

// replyOnce checks that rows hold every reply line exactly once, in
// order, each as a whole row after the harness's bullet or indent.
func replyOnce(t *testing.T, what string, rows []string) (first, last int) {
	t.Helper()
	first, last, msg := replyCheck(rows)
	if msg != "" {
		t.Errorf("%s: %s", what, msg)
	}
	return first, last
}

// replyCheck is replyOnce's check: msg says what is wrong, or is "".
func replyCheck(rows []string) (first, last int, msg string) {
	first, last = -1, -1
	next := 1
	for i, r := range rows {
		for n := 1; n <= inlineLines; n++ {
			want := inlineLine(n)
			if !strings.HasSuffix(r, want) || strings.TrimLeft(strings.TrimSuffix(r, want), " ●•⏺✦") != "" {
				continue
			}
			if n != next {
				return first, last, fmt.Sprintf("row %d is reply line %d, want line %d: %q", i, n, next, r)
			}
			if first < 0 {
				first = i
			}
			last = i
			next++
		}
	}
	if next != inlineLines+1 {
		return first, last, fmt.Sprintf("found reply lines 1..%d of %d", next-1, inlineLines)
	}
	return first, last, ""
}

// inlineVTHistory is what a fresh vt.Screen makes of data: its stable rows
// (resets marked as "<reset REASON>" rows) and its live grid.
func inlineVTHistory(data []byte, rows, cols int) (hist, live []string) {
	s := vt.New(rows, cols, vt.Callbacks{
		Stable: func(r []string) { hist = append(hist, r...) },
		Reset:  func(reason vt.ResetReason) { hist = append(hist, "<reset "+string(reason)+">") },
	})
	s.Write(data)
	return hist, s.Live()
}

// inlineVTScrollback is what scrollback.read joins for data replayed in one
// Write: the stable rows, then the grid without its trailing blank rows
// and without the rows at its top that repeat the history
// (Screen.LiveRepeated).
func inlineVTScrollback(data []byte, rows, cols int) []string {
	var hist []string
	s := vt.New(rows, cols, vt.Callbacks{Stable: func(r []string) { hist = append(hist, r...) }})
	s.Write(data)
	live := inlineTrimTail(s.Live())
	return append(hist, live[min(s.LiveRepeated(), len(live)):]...)
}

// inlineSameAsTmux compares vt's history with tmux's on the same bytes.
// They are the same unless the TUI repainted a frame taller than the
// screen from its top row (Claude Code on a starved CPU): tmux then keeps
// the rows that scroll off a second time and vt drops them
// (vt/testdata/captures/claude-inline-overflow-100x40.bin), so tmux's
// history repeats reply lines and vt's, checked by the caller, does not.
func inlineSameAsTmux(t *testing.T, harness string, hist []string, tm *vttest.TmuxScreen) {
	t.Helper()
	if _, _, msg := replyCheck(append(slices.Clone(tm.History), tm.Grid...)); msg != "" {
		t.Logf("%s repainted rows that had scrolled off (tmux history+grid: %s); vt %d lines, tmux %d", harness, msg, len(hist), len(tm.History))
		return
	}
	if d := inlineDiff(hist, tm.History); d != "" {
		t.Errorf("vt history differs from tmux's (%d vs %d lines):\n%s", len(hist), len(tm.History), d)
	}
}

func TestInlineHistoryClaudeE2E(t *testing.T) { testInlineHistory(t, "claude") }
func TestInlineHistoryCodexE2E(t *testing.T)  { testInlineHistory(t, "codex") }
func TestInlineHistoryGeminiE2E(t *testing.T) { testInlineHistory(t, "gemini") }

func testInlineHistory(t *testing.T, harness string) {
	e := startInline(t, harness)
	cwd := t.TempDir()

	var hl rpc.HarnessListResult
	e.call(t, rpc.MethodHarnessList, rpc.HarnessListParams{Harness: harness}, &hl)
	if len(hl.Harnesses) != 1 || hl.Harnesses[0].ScreenMode != rpc.ScreenInline {
		t.Fatalf("harness.list = %+v, want screen_mode inline", hl.Harnesses)
	}

	var r rpc.Receipt
	e.accept(t, rpc.MethodSessionCreate, rpc.SessionCreateParams{
		Title: "inline " + harness, Harness: harness, Cwd: cwd, Prompt: "INLINE-150 print the numbered rows",
		RequestID: "inline-1", Environment: e.env, Rows: inlineRows, Cols: inlineCols,
	}, &r)
	id := r.Session.ID
	_, res := e.waitResult(t, id, r.Cursor)
	if res.Status != rpc.StatusCompleted || res.FinalText == nil || *res.FinalText != inlineReply() {
		t.Fatalf("result = %+v text %q", res, fetchdoc.DerefText(&res))
	}

	// The TUI finishes drawing after its Stop hook: wait until the rows
	// hold the last reply line (it may still be on the live grid) and
	// nothing changed for a second. Gemini CLI may erase its last lines
	// itself (geminiReplyShown): wait for its output to stop instead.
	var stable []string
	var screen *rpc.Screen
	if harness == "gemini" {
		e.geminiReady(t, id)
		e.inlineSettle(t, id)
	}
	deadline := time.Now().Add(30 * time.Second)
	prev := ""
	for {
		stable, screen, _ = e.inlineStable(t, id, r.Cursor)
		all := strings.Join(append(slices.Clone(stable), screen.Live...), "\n")
		if all == prev && (harness == "gemini" || strings.Contains(all, inlineLine(inlineLines))) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen did not settle with the whole reply; stable %d rows, live:\n%s", len(stable), strings.Join(screen.Live, "\n"))
		}
		prev = all
		time.Sleep(time.Second)
	}

	// What the TUI printed, for Gemini's checks below.
	raw := e.inlineRaw(t, id)

	// session.fetch from the turn's receipt: the reply in stable rows (the
	// last rows may still be on the live grid), each line once, in order.
	live := screen.Live
	if harness == "gemini" {
		// Gemini reprints its whole transcript after erasing the
		// scrollback (geminiSameAsTmux): the grid's top rows may repeat
		// the last stable rows until they scroll off; fetch's live is the
		// screen as it is.
		live = live[liveRepeats(stable, live):]
	}
	visible := append(slices.Clone(stable), live...)
	geminiReplyShown(t, harness, "fetch stable+live", visible, raw)
	inStable := 0
	for _, row := range stable {
		if strings.Contains(row, "of the inline history") {
			inStable++
		}
	}
	if inStable < inlineLines-inlineRows {
		t.Errorf("only %d reply lines in stable rows; want at least %d", inStable, inlineLines-inlineRows)
	}
	t.Logf("%s: %d stable rows from the receipt, %d of them reply lines; live grid %d rows", harness, len(stable), inStable, len(screen.Live))

	// scrollback.read: the same, with nothing of the live area repeated
	// into history.
	page := e.scrollbackAll(t, id)
	geminiReplyShown(t, harness, "scrollback.read", page.Lines, raw)
	noRepaintedLiveArea(t, harness, page.Lines, len(screen.Live))

	// The same bytes through a fresh vt.Screen and through tmux give the
	// same history and grid.
	raw = e.inlineRaw(t, id)
	if dir := os.Getenv("DLGT_INLINE_CAPTURE_DIR"); dir != "" {
		name := fmt.Sprintf("%s-inline-%dx%d.bin", harness, inlineCols, inlineRows)
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(string(raw), "\x1b[?1049h") {
		t.Errorf("%s wrote ESC[?1049h: it switched to the alternate screen", harness)
	}
	hist, vtLive := inlineVTHistory(raw, inlineRows, inlineCols)
	tm, err := vttest.TmuxReplay(raw, inlineRows, inlineCols)
	if err != nil {
		t.Fatalf("tmux replay: %v", err)
	}
	if harness == "gemini" {
		geminiSameAsTmux(t, raw, tm)
	} else {
		inlineSameAsTmux(t, harness, hist, tm)
	}
	if d := inlineDiff(inlineTrimTail(vtLive), inlineTrimTail(tm.Grid)); d != "" {
		t.Errorf("vt grid differs from tmux's:\n%s", d)
	}
	geminiReplyShown(t, harness, "vt history+grid", inlineVTScrollback(raw, inlineRows, inlineCols), raw)
	t.Logf("%s: %d raw bytes; vt history %d lines, tmux history %d lines", harness, len(raw), len(hist), len(tm.History))

	// A person attaches (the daemon nudges the TUI into a repaint by a
	// one-row resize and back) and narrows the terminal: the column change
	// starts a new epoch, and what the TUI repaints for it (Codex erases
	// the scrollback and prints its whole transcript again; Claude Code
	// reprints the tail that fits) is not stored a second time. A second
	// turn then scrolls the repainted screen into history.
	epoch := screen.Epoch
	var doc rpc.FetchDocument
	e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "screen": true}, &doc)
	cursor := doc.Cursor
	w, err := e.td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	e.inlineSettle(t, id)
	resizedAt := len(e.inlineRaw(t, id))
	e.call(t, rpc.MethodTerminalResize, rpc.TerminalResizeParams{Session: id, Token: w.ack.Token, Rows: inlineRows, Cols: 80}, nil)
	e.inlineSettle(t, id)
	e.call(t, rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
	e.call(t, rpc.MethodSessionFetch, map[string]any{"session": id, "cursor": cursor, "screen": true}, &doc)
	sc := doc.Sessions[0].Screen
	if sc == nil || !sc.Reset || sc.Epoch <= epoch || sc.ResetReason == nil || (*sc.ResetReason != "resize" && *sc.ResetReason != "erase_scrollback") {
		t.Fatalf("screen after a column change = %+v, want a reset to a later epoch than %d", sc, epoch)
	}
	if harness == "claude" && *sc.ResetReason != "resize" {
		t.Errorf("reset_reason = %q, want resize", *sc.ResetReason)
	}
	t.Logf("%s: column change: epoch %d -> %d, reset_reason %s", harness, epoch, sc.Epoch, *sc.ResetReason)
	var r2 rpc.Receipt
	e.accept(t, rpc.MethodSessionSend, rpc.SessionSendParams{Session: id, Prompt: "INLINE-TAIL more rows", RequestID: "inline-2"}, &r2)
	if _, res := e.waitResult(t, id, r2.Cursor); res.Status != rpc.StatusCompleted {
		t.Fatalf("second turn: %+v", res)
	}
	if harness == "gemini" {
		e.geminiReady(t, id)
	}
	e.inlineSettle(t, id)
	page = e.scrollbackAll(t, id)
	if dir := os.Getenv("DLGT_INLINE_CAPTURE_DIR"); dir != "" && harness == "gemini" {
		// Gemini's whole transcript: the column change (100 -> 80) came
		// at byte resizedAt; the second turn's reprint must match the
		// history (vt's TestInlineGeminiResize).
		name := fmt.Sprintf("%s-inline-resize-%dx%d.bin", harness, inlineCols, inlineRows)
		if err := os.WriteFile(filepath.Join(dir, name), e.inlineRaw(t, id), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: columns 100 -> 80 at byte %d", name, resizedAt)
	}
	first, last := geminiReplyShown(t, harness, "scrollback.read after a resize", page.Lines, raw)
	tails := 0
	for i, l := range page.Lines {
		if strings.Contains(l, "tail row ") {
			if i < last {
				t.Errorf("tail row %q at line %d, before the first reply's last line %d", l, i, last)
			}
			tails++
			if want := fmt.Sprintf("tail row %d", tails); !strings.HasSuffix(l, want) {
				t.Errorf("line %d = %q, want %q", i, l, want)
			}
		}
	}
	if tails != inlineTail {
		whole := e.inlineRaw(t, id)
		tailLine := func(i int) string { return fmt.Sprintf("tail row %d", i) }
		if harness == "gemini" && geminiErased(whole, tails, inlineTail, tailLine) {
			t.Logf("%d tail rows in scrollback of %d; Gemini CLI had printed the missing ones (it erased them)", tails, inlineTail)
		} else {
			t.Errorf("%d tail rows in scrollback, want %d", tails, inlineTail)
		}
	}
	t.Logf("%s: after the resize and a second turn: %d lines, first reply at lines %d..%d", harness, len(page.Lines), first, last)

	// After a daemon restart, the history reads the same.
	before := page.Lines
	e.td.stop()
	e.td.start()
	after := e.scrollbackAll(t, id)
	geminiReplyShown(t, harness, "scrollback.read after a daemon restart", after.Lines, raw)
	n := min(len(before), len(after.Lines)) - inlineRows
	if n > 0 && !slices.Equal(before[:n], after.Lines[:n]) {
		t.Errorf("history changed across a daemon restart:\n%s", inlineDiff(before[:n], after.Lines[:n]))
	}
}

// liveRepeats is how many rows at the top of live repeat the last rows of
// stable (the longest such run).
func liveRepeats(stable, live []string) int {
	for k := min(len(stable), len(live)); k > 0; k-- {
		if slices.Equal(live[:k], stable[len(stable)-k:]) {
			return k
		}
	}
	return 0
}

// geminiReplyShown is replyOnce, except that for Gemini CLI a few reply
// lines may be missing at the end when raw has each of them (geminiErased):
// Gemini printed them, then erased them. Gemini
// CLI 0.61.0 (its Ink renderer) does so at the first redraw of its live
// area after it cleared the screen and printed its whole transcript
// again: it left the cursor 3 rows up, in its input box, and erases its
// frame's height upward from there without first moving down, so the last
// rows above the live area are blanked and the bottom of the old frame
// stays below the new one. tmux, fed the same bytes, shows the same; the
// lines never scroll off, and Gemini's next reprint of them is a reprint
// (vt/reprint.go), not stored either.
func geminiReplyShown(t *testing.T, harness, what string, rows []string, raw []byte) (first, last int) {
	t.Helper()
	first, last, msg := replyCheck(rows)
	if msg == "" {
		return first, last
	}
	n := 0
	for _, r := range rows[:last+1] {
		if strings.Contains(r, "of the inline history") {
			n++
		}
	}
	if harness == "gemini" && strings.HasPrefix(msg, "found reply lines") && geminiErased(raw, n, inlineLines, inlineLine) {
		t.Logf("%s: %s; Gemini CLI had printed the missing lines (it erased them)", what, msg)
		return first, last
	}
	t.Errorf("%s: %s", what, msg)
	return first, last
}

// geminiErased reports whether lines found+1..want (line(i) is line i)
// are few enough for Gemini's erase (geminiReplyShown) and each was
// printed in raw.
func geminiErased(raw []byte, found, want int, line func(int) string) bool {
	if want-found > inlineRows/4 {
		return false
	}
	printed := sgr.ReplaceAllString(string(raw), "")
	for i := found + 1; i <= want; i++ {
		if !strings.Contains(printed, line(i)) {
			return false
		}
	}
	return true
}

// sgr matches SGR escape sequences (colours, attributes).
var sgr = regexp.MustCompile("\x1b\\[[0-9;:]*m")

// geminiSameAsTmux compares vt with tmux on Gemini CLI's bytes. When a
// reply moves into its history Gemini clears the screen and the scrollback
// (CSI 2 J 3 J) and prints its whole transcript again, several times a
// long turn. tmux's history is then what scrolled off after the last
// clear; vt keeps what scrolled off before and does not store the
// reprint's repeat of it again, so the two histories end at different
// rows. History and grid together (vt's without the grid rows that repeat
// its history) are the same.
func geminiSameAsTmux(t *testing.T, raw []byte, tm *vttest.TmuxScreen) {
	t.Helper()
	if !strings.Contains(string(raw), "\x1b[3J") {
		t.Logf("gemini did not erase the scrollback")
	}
	want := append(slices.Clone(tm.History), inlineTrimTail(tm.Grid)...)
	if d := inlineDiff(inlineVTScrollback(raw, inlineRows, inlineCols), want); d != "" {
		t.Errorf("vt history+grid differs from tmux's:\n%s", d)
	}
}

// noRepaintedLiveArea checks that no row of the TUI's redrawn region
// (input box, status line, spinner) was pushed into history more than
// once: any non-blank row repeated in history that is not a reply line is
// reported, except rows the TUI legitimately prints once per turn.
func noRepaintedLiveArea(t *testing.T, harness string, lines []string, live int) {
	t.Helper()
	hist := lines[:max(0, len(lines)-live)]
	seen := map[string]int{}
	for _, l := range hist {
		if s := strings.TrimSpace(l); s != "" && strings.Trim(s, "─━—-") != "" {
			seen[s]++
		}
	}
	for s, n := range seen {
		if n > 1 {
			t.Errorf("%s: %q is %d times in history", harness, s, n)
		}
	}
}

func inlineTrimTail(rows []string) []string {
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// inlineDiff lists the first differing lines of a and b, or "".
func inlineDiff(a, b []string) string {
	var out []string
	for i := 0; i < max(len(a), len(b)) && len(out) < 12; i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		} else {
			x = "<none>"
		}
		if i < len(b) {
			y = b[i]
		} else {
			y = "<none>"
		}
		if x != y {
			out = append(out, fmt.Sprintf("  line %d: %q vs %q", i, x, y))
		}
	}
	return strings.Join(out, "\n")
}

// A user's explicit choice of the alternate screen is respected (Claude
// Code: the variable in the client's environment; Codex: its
// tui.alternate_screen option; Gemini CLI: ui.useAlternateBuffer in the
// user's settings.json, default false), keeps the seed's rule (nothing of
// the alternate screen becomes history) and scrollback.read says so.
func TestAlternateScreenChoiceClaudeE2E(t *testing.T) { testAlternateScreenChoice(t, "claude") }
func TestAlternateScreenChoiceCodexE2E(t *testing.T)  { testAlternateScreenChoice(t, "codex") }
func TestAlternateScreenChoiceGeminiE2E(t *testing.T) { testAlternateScreenChoice(t, "gemini") }

func testAlternateScreenChoice(t *testing.T, harness string) {
	e := startInline(t, harness)
	env := maps.Clone(e.env)
	var opts []string
	switch harness {
	case "claude":
		env["CLAUDE_CODE_DISABLE_ALTERNATE_SCREEN"] = "0"
	case "codex":
		opts = []string{`tui.alternate_screen="always"`}
	case "gemini":
		// The user's settings (GEMINI_CLI_HOME names their Gemini home)
		// with the alternate buffer on; dlgt copies them into the
		// Session's own settings.json.
		home := t.TempDir()
		if err := mockapi.WriteGeminiHome(home); err != nil {
			t.Fatal(err)
		}
		settings := mockapi.GeminiSettings()
		settings["ui"].(map[string]any)["useAlternateBuffer"] = true
		b, err := json.Marshal(settings)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		env["GEMINI_CLI_HOME"] = home
	}
	r := e.inlineTurn(t, rpc.SessionCreateParams{
		Title: "alternate " + harness, Harness: harness, Prompt: "INLINE-150 print the numbered rows",
		RequestID: "alt-1", Environment: env, HarnessOptions: opts,
	})
	id := r.Session.ID
	if raw := e.inlineRaw(t, id); !strings.Contains(string(raw), "\x1b[?1049h") {
		t.Fatalf("%s did not switch to the alternate screen: the user's choice was not passed on", harness)
	}
	page := e.scrollbackAll(t, id)
	if !page.AlternateScreen {
		t.Errorf("scrollback.read alternate_screen = false while %s draws on the alternate screen", harness)
	}
	stable, _, _ := e.inlineStable(t, id, r.Cursor)
	for _, row := range stable {
		if strings.Contains(row, "of the inline history") {
			t.Fatalf("a reply line became a stable row on the alternate screen: %q", row)
		}
	}
	t.Logf("%s on the alternate screen: %d stable rows after the receipt, none from the reply; alternate_screen %v", harness, len(stable), page.AlternateScreen)
}

// The long reply streamed slowly (about 250 deltas): history is still each
// line once, in order, and the same as tmux's on the same bytes.
func TestInlineStreamClaudeE2E(t *testing.T) { testInlineStream(t, "claude") }
func TestInlineStreamCodexE2E(t *testing.T)  { testInlineStream(t, "codex") }
func TestInlineStreamGeminiE2E(t *testing.T) { testInlineStream(t, "gemini") }

func testInlineStream(t *testing.T, harness string) {
	e := startInline(t, harness)
	r := e.inlineTurn(t, rpc.SessionCreateParams{
		Title: "stream " + harness, Harness: harness, Prompt: "INLINE-STREAM print the numbered rows",
		RequestID: "stream-1", Environment: e.env,
	})
	id := r.Session.ID
	before := e.inlineRaw(t, id)
	page := e.scrollbackAll(t, id)
	raw := e.inlineRaw(t, id)
	if dir := os.Getenv("DLGT_INLINE_CAPTURE_DIR"); dir != "" {
		name := fmt.Sprintf("%s-inline-stream-%dx%d.bin", harness, inlineCols, inlineRows)
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hist, _ := inlineVTHistory(raw, inlineRows, inlineCols)
	tm, err := vttest.TmuxReplay(raw, inlineRows, inlineCols)
	if err != nil {
		t.Fatalf("tmux replay: %v", err)
	}
	if harness == "gemini" {
		geminiSameAsTmux(t, raw, tm)
	} else {
		inlineSameAsTmux(t, harness, hist, tm)
	}
	// What the daemon stored from its PTY reads (boundaries set by
	// timing) is what one Write of the raw transcript gives.
	if string(before) == string(raw) {
		if d := inlineDiff(page.Lines, inlineVTScrollback(raw, inlineRows, inlineCols)); d != "" {
			t.Errorf("scrollback.read differs from a replay of the raw transcript:\n%s", d)
		}
	}
	geminiReplyShown(t, harness, "scrollback.read", page.Lines, raw)
	t.Logf("%s: %d raw bytes streamed; history %d lines, tmux's %d", harness, len(raw), len(hist), len(tm.History))
}

// A column change makes the TUI wrap its transcript again: Codex reprints
// every paragraph wrapped for the new width. The reprint is recognised word
// by word, so the paragraph stays in history once. Gemini CLI 0.61.0 has
// no row here: a column change makes it redraw only its input area (about
// 2 KB after 100 -> 80 columns in TestInlineHistoryGeminiE2E), nothing of
// its transcript, and the paragraph's repeated sentence trips its loop
// detection ("A potential loop was detected", a dialog ending the turn).
func TestInlineRewrapClaudeE2E(t *testing.T) { testInlineRewrap(t, "claude") }
func TestInlineRewrapCodexE2E(t *testing.T)  { testInlineRewrap(t, "codex") }

func testInlineRewrap(t *testing.T, harness string) {
	e := startInline(t, harness)
	r := e.inlineTurn(t, rpc.SessionCreateParams{
		Title: "rewrap " + harness, Harness: harness, Prompt: "INLINE-WRAP print the numbered rows",
		RequestID: "wrap-1", Environment: e.env,
	})
	id := r.Session.ID
	w, err := e.td.attach(t, id, rpc.AttachWrite)
	if err != nil {
		t.Fatal(err)
	}
	e.inlineSettle(t, id)
	e.call(t, rpc.MethodTerminalResize, rpc.TerminalResizeParams{Session: id, Token: w.ack.Token, Rows: inlineRows, Cols: 80}, nil)
	e.inlineSettle(t, id)
	e.call(t, rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: id, Token: w.ack.Token}, nil)
	e.inlineSettle(t, id)
	page := e.scrollbackAll(t, id)
	replyOnce(t, "scrollback.read after a column change", page.Lines)
	words := strings.Join(strings.Fields(strings.Join(page.Lines, " ")), " ")
	if n := strings.Count(words, "This paragraph is wrapped"); n != 12 {
		t.Errorf("the paragraph's 12 sentences are %d times in scrollback", n)
	}
	t.Logf("%s: after a column change %d lines", harness, len(page.Lines))
}
