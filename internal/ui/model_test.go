package ui

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

func testModel(noColor bool, states ...string) *model {
	m := newModel(context.Background(), Options{NoColor: noColor, Cwd: "/tmp"})
	now := time.Now().UnixMilli()
	for i, st := range states {
		id := fmt.Sprintf("claude:%08d-0000-0000-0000-000000000000", i)
		text := strings.Repeat("a long final text with wide 字符 ", 10) + "\nsecond line"
		m.rows[id] = &row{s: rpc.Session{ID: id, Alias: fmt.Sprintf("s%d-%s", i, st), Title: strings.Repeat("title ", 30),
			Harness: "claude", Cwd: "/work/somewhere", State: st, CreatedAtMS: now - 90_000, UpdatedAtMS: now - int64(i)},
			res: &rpc.Result{ExecutionSeq: 1, Status: rpc.StatusCompleted, FinalText: &text, Usage: []byte(`{"total_tokens":12345}`)}, hasRes: true}
	}
	m.connected = true
	m.resort()
	return m
}

// press is the key message of one typed character.
func press(text string) tea.KeyPressMsg {
	return runeKey([]rune(text)[0])
}

func TestListSortsWhatNeedsAPersonFirst(t *testing.T) {
	m := testModel(false, rpc.StateIdle, rpc.StateStopped, rpc.StateBusy, rpc.StateFailed, rpc.StateBlocked, rpc.StateStarting)
	var got []string
	for _, id := range m.order {
		got = append(got, m.rows[id].s.State)
	}
	want := []string{rpc.StateBlocked, rpc.StateFailed, rpc.StateBusy, rpc.StateStarting, rpc.StateIdle, rpc.StateStopped}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("order %v, want %v", got, want)
	}
	if m.sel != m.order[0] {
		t.Fatalf("selected %s, want the first row", m.sel)
	}
}

// Every line fits the width (clipped, never wrapped) and the view fills
// the height exactly, at any size.
func TestViewFitsTheTerminal(t *testing.T) {
	for _, size := range [][2]int{{20, 5}, {40, 10}, {60, 20}, {80, 24}, {120, 40}, {250, 60}} {
		m := testModel(false, rpc.StateBlocked, rpc.StateIdle, rpc.StateBusy)
		m.rows[m.order[0]].s.Pending = &rpc.Pending{ID: "p1", Kind: rpc.PendingPermission, Tool: "Bash", Input: strings.Repeat("rm -rf / ", 100)}
		m.screenID, m.screen = m.sel, []string{strings.Repeat("x", 500), "漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字"}
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, md := range []mode{modeList, modeHelp, modeNew, modeSend, modeDeny, modeConfirm} {
			m.mode = md
			lines := strings.Split(m.View().Content, "\n")
			if len(lines) != size[1] {
				t.Fatalf("%v mode %d: %d lines, want %d", size, md, len(lines), size[1])
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Fatalf("%v mode %d: a line of %d cells: %q", size, md, w, l)
				}
			}
		}
	}
}

var sgrRE = regexp.MustCompile(`\x1b\[([0-9;]*)m`)

func hasColor(s string) bool {
	for _, m := range sgrRE.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.Split(m[1], ";") {
			if n, _ := strconv.Atoi(p); (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || (n >= 90 && n <= 107) {
				return true
			}
		}
	}
	return false
}

func TestNoColor(t *testing.T) {
	for _, noColor := range []bool{false, true} {
		m := testModel(noColor, rpc.StateBlocked, rpc.StateFailed, rpc.StateBusy, rpc.StateIdle)
		m.sel = m.order[3] // the colored state cells are not the selected row
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
		v := m.View().Content
		if hasColor(v) == noColor {
			t.Fatalf("NoColor %v: colors drawn %v:\n%q", noColor, hasColor(v), v)
		}
		for _, mark := range []string{"! blocked", "✗ failed", "● busy", "○ idle"} {
			if !strings.Contains(ansi.Strip(v), mark) {
				t.Fatalf("NoColor %v: no %q marker", noColor, mark)
			}
		}
	}
}

func TestPreviewRowsBounded(t *testing.T) {
	lines := make([]string, 5000)
	for i := range lines {
		lines[i] = fmt.Sprintf("row %d\x1b[31m", i)
	}
	got := cleanRows(append(lines, "", "  "))
	if len(got) != previewLines || got[len(got)-1] != "row 4999[31m" {
		t.Fatalf("%d rows, last %q", len(got), got[len(got)-1])
	}
}

// Keys that destroy ask first: c, x and r only open the question, and
// any key but y declines it.
func TestDestructiveKeysAskFirst(t *testing.T) {
	m := testModel(true, rpc.StateBusy)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	for _, k := range []string{"c", "x", "r"} {
		_, cmd := m.Update(press(k))
		if cmd != nil || m.mode != modeConfirm {
			t.Fatalf("%s: mode %d, cmd %v", k, m.mode, cmd != nil)
		}
		if !strings.Contains(m.View().Content, "? y/N") {
			t.Fatalf("%s: no question", k)
		}
		_, cmd = m.Update(press("n"))
		if cmd != nil || m.mode != modeList || !strings.HasPrefix(m.status, "did not ") {
			t.Fatalf("%s then n: mode %d, status %q", k, m.mode, m.status)
		}
	}
	if _, cmd := m.Update(press("q")); cmd == nil {
		t.Fatal("q returns no command")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
}

// A blocked Session's pending request can be recorded after the event
// that said blocked, with no event of its own: while the selected Session
// stays blocked, each preview tick reads its snapshot again.
func TestBlockedSelectionRereadsItsSnapshot(t *testing.T) {
	m := testModel(true, rpc.StateBlocked)
	m.previewTicking, m.screenReading = true, true
	m.Update(previewTickMsg{gen: m.previewGen})
	if !m.rows[m.sel].reading {
		t.Fatal("the tick did not read the blocked Session again")
	}
	// A quiet (idle) one is not read on a tick.
	m = testModel(true, rpc.StateIdle)
	m.previewTicking, m.screenReading = true, true
	m.Update(previewTickMsg{gen: m.previewGen})
	if m.rows[m.sel].reading {
		t.Fatal("an idle Session was read on a tick")
	}
}

// msgsOf runs cmd and what it batches, collecting their messages (a
// tick's after its delay).
func msgsOf(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, msgsOf(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

// The harness repaints after its turn ends: when the selected Session
// goes quiet its screen is read once more a moment later.
func TestQuietSelectionScreenReadAgain(t *testing.T) {
	m := testModel(true, rpc.StateBusy)
	r := m.rows[m.sel]
	r.reading = true
	idle := r.s
	idle.State = rpc.StateIdle
	_, cmd := m.Update(readMsg{id: m.sel, res: rpc.SessionReadResult{Session: idle}})
	var settled *settledMsg
	for _, msg := range msgsOf(cmd) {
		if s, ok := msg.(settledMsg); ok {
			settled = &s
		}
	}
	if settled == nil || settled.id != m.sel {
		t.Fatalf("no later screen read for the Session that went quiet (%v)", settled)
	}
	m.screenReading = false
	m.Update(*settled)
	if !m.screenReading {
		t.Fatal("the settled message did not read the screen")
	}
}

// y, n and 1-9 answer only what the selected Session waits on; anything
// else says why on the status line and sends nothing.
func TestAnswerKeysCheckThePendingRequest(t *testing.T) {
	key := func(m *model, k string) tea.Cmd {
		msg := press(k)
		switch k {
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		}
		_, cmd := m.Update(msg)
		return cmd
	}
	m := testModel(true, rpc.StateIdle)
	if cmd := key(m, "y"); cmd != nil || !strings.Contains(m.status, "is not waiting for an answer") {
		t.Fatalf("y on an idle Session: cmd %v, status %q", cmd != nil, m.status)
	}
	m = testModel(true, rpc.StateBlocked)
	m.rows[m.sel].s.Pending = &rpc.Pending{ID: "p1", Kind: rpc.PendingQuestion, Question: "which?",
		Options: []rpc.PendingOption{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}
	if cmd := key(m, "y"); cmd != nil || !strings.Contains(m.status, "with its number (1-2)") {
		t.Fatalf("y on a question: cmd %v, status %q", cmd != nil, m.status)
	}
	if cmd := key(m, "5"); cmd != nil || !strings.Contains(m.status, "has 2 options") {
		t.Fatalf("5 on a two-option question: cmd %v, status %q", cmd != nil, m.status)
	}
	if cmd := key(m, "2"); cmd == nil || !strings.HasPrefix(m.status, "answering ") {
		t.Fatalf("2 on a two-option question: cmd %v, status %q", cmd != nil, m.status)
	}
	m.rows[m.sel].s.Pending = &rpc.Pending{ID: "p2", Kind: rpc.PendingPermission, Tool: "Bash", Input: "ls"}
	if cmd := key(m, "3"); cmd != nil || !strings.Contains(m.status, "y allows, n denies") {
		t.Fatalf("3 on a permission: cmd %v, status %q", cmd != nil, m.status)
	}
	// n asks for a reason first: typed keys (and a paste) edit it, Esc
	// leaves the request waiting, Enter denies.
	if cmd := key(m, "n"); cmd != nil || m.mode != modeDeny {
		t.Fatalf("n on a permission: mode %d, cmd %v", m.mode, cmd != nil)
	}
	if v := m.View().Content; !strings.Contains(v, "denied Bash for s0-blocked, a reason for the model") {
		t.Fatalf("no question for the reason:\n%s", v)
	}
	if cmd := key(m, "esc"); cmd != nil || m.mode != modeList || m.status != "did not deny s0-blocked" {
		t.Fatalf("esc: mode %d, cmd %v, status %q", m.mode, cmd != nil, m.status)
	}
	key(m, "n")
	for _, k := range []string{"n", "o", "t", " "} {
		key(m, k)
	}
	m.Update(tea.PasteMsg{Content: "on\nmain"})
	if got := m.input.String(); got != "not on main" {
		t.Fatalf("the reason reads %q", got)
	}
	if cmd := key(m, "enter"); cmd == nil || m.mode != modeList || m.deny.params.Decision != rpc.DecisionDeny ||
		m.deny.params.PendingID != "p2" || !strings.HasPrefix(m.status, "answering ") {
		t.Fatalf("enter: cmd %v, mode %d, params %+v, status %q", cmd != nil, m.mode, m.deny.params, m.status)
	}
}

// Every key counts, however the keys arrive: the terminal reader makes a
// message of each key of a read holding several ("jj" typed fast,
// key repeat, a batch over ssh), and each moves the selection. A paste
// (bracketed) moves by its j k g G and does nothing else.
func TestEveryKeyCounts(t *testing.T) {
	m := testModel(true, rpc.StateIdle, rpc.StateIdle, rpc.StateIdle, rpc.StateIdle, rpc.StateIdle)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	m.screenReading = true // no screen read (no client here)
	for _, k := range []string{"j", "j"} {
		m.Update(press(k))
	}
	if i := m.selIndex(); i != 2 {
		t.Fatalf("two j keys: row %d, want 2", i)
	}
	m.Update(tea.PasteMsg{Content: "jj"})
	if i := m.selIndex(); i != 4 {
		t.Fatalf("a pasted jj: row %d, want 4", i)
	}
	// One key message of several characters (what Bubble Tea v1 made of
	// a read holding kk): each counts.
	m.Update(tea.KeyPressMsg{Code: tea.KeyExtended, Text: "kk"})
	if i := m.selIndex(); i != 2 {
		t.Fatalf("one message of kk: row %d, want 2", i)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyExtended, Text: "jj"})
	m.Update(tea.PasteMsg{Content: "kxqk"})
	if i := m.selIndex(); i != 2 || m.mode != modeList || !strings.Contains(m.status, "a paste moves the selection only") {
		t.Fatalf("a pasted kxqk: row %d, mode %d, status %q", m.selIndex(), m.mode, m.status)
	}
}

// What the UI keeps of attach's stderr is bounded, and a failure line in
// it gives the status line its message.
func TestAttachStderr(t *testing.T) {
	b := &tailBuffer{max: 10}
	b.Write([]byte("0123456789"))
	b.Write([]byte("abc"))
	if got := b.String(); got != "3456789abc" {
		t.Fatalf("kept %q", got)
	}
	out := "warning: x\n" + `{"ok":false,"error":{"code":"ALREADY_ATTACHED","message":"another client holds the attach lease"}}` + "\n"
	if got := failureMessage(out); got != "another client holds the attach lease" {
		t.Fatalf("failure message %q", got)
	}
	if got := failureMessage("exit status 1\n"); got != "" {
		t.Fatalf("failure message of no JSON line: %q", got)
	}
}

// The new-delegation form offers the first harness the client knows, in
// the registry's order: the UI names none itself.
func TestFormHarnessFromClient(t *testing.T) {
	ds := []harness.Descriptor{{Name: "second-first", DisplayName: "S"}, {Name: "other", DisplayName: "O"}}
	c, err := client.New(client.Options{Harnesses: ds, Getenv: func(string) string { return "" }, NoAutostart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := newModel(context.Background(), Options{Client: c, Cwd: "/tmp"})
	if got := string(m.form.fields[0].r); got != "second-first" {
		t.Errorf("the form's harness is %q, want the client's first, second-first", got)
	}
}

// s on a busy Session offers steer (Enter) or queue (Tab); on an idle
// one Tab is just typed and Enter sends.
func TestSendKeyOffersSteerOrQueueWhenBusy(t *testing.T) {
	key := func(m *model, msg tea.KeyPressMsg) tea.Cmd {
		_, cmd := m.Update(msg)
		return cmd
	}
	enter, tab := tea.KeyPressMsg{Code: tea.KeyEnter}, tea.KeyPressMsg{Code: tea.KeyTab}
	for _, c := range []struct {
		state string
		busy  bool
	}{{rpc.StateBusy, true}, {rpc.StateIdle, false}} {
		m := testModel(true, c.state)
		key(m, press("s"))
		if m.mode != modeSend || m.sendBusy != c.busy {
			t.Fatalf("%s: mode %d, sendBusy %v", c.state, m.mode, m.sendBusy)
		}
		offers := strings.Contains(m.View().Content, "Enter steers its running turn, Tab queues after it")
		if offers != c.busy {
			t.Fatalf("%s: steer/queue offered %v:\n%s", c.state, offers, m.View().Content)
		}
		key(m, press("x"))
		cmd := key(m, tab)
		if c.busy != (cmd != nil) || c.busy != (m.mode == modeList) {
			t.Fatalf("%s: tab gave cmd %v, mode %d", c.state, cmd != nil, m.mode)
		}
		if !c.busy {
			if cmd := key(m, enter); cmd == nil || m.mode != modeList {
				t.Fatalf("idle: enter gave cmd %v, mode %d", cmd != nil, m.mode)
			}
		}
	}
}
