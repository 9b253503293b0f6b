package ui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// SGR codes. Colors are left out under NO_COLOR; reverse video and bold
// (attributes, not colors) mark the selection either way.
const (
	sgrBold    = "1"
	sgrDim     = "2"
	sgrReverse = "7"
	sgrRed     = "31"
	sgrGreen   = "32"
	sgrYellow  = "33"
	sgrMagenta = "35"
	sgrCyan    = "36"
)

func sgr(code, s string) string {
	if s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// color applies a color code unless colors are off.
func (m *model) color(code, s string) string {
	if m.noColor {
		return s
	}
	return sgr(code, s)
}

// stateMark is a state's marker and color: a glyph that tells busy,
// blocked and failed apart without color.
func stateMark(state string) (string, string) {
	switch state {
	case rpc.StateBlocked:
		return "!", sgrYellow + ";" + sgrBold
	case rpc.StateFailed:
		return "✗", sgrRed + ";" + sgrBold
	case rpc.StateBusy:
		return "●", sgrGreen
	case rpc.StateStarting, rpc.StateRestarting:
		return "◐", sgrCyan
	case rpc.StateCanceling, rpc.StateStopping:
		return "◌", sgrMagenta
	case rpc.StateIdle:
		return "○", ""
	}
	return "·", sgrDim
}

// fit clips s to w cells ("…" marks a cut) and pads it to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", max(0, w-ansi.StringWidth(s)))
}

// age is a compact duration since ms: 42s, 7m, 3h, 2d.
func age(ms int64, now time.Time) string {
	if ms <= 0 {
		return "-"
	}
	d := now.Sub(time.UnixMilli(ms))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d/time.Second)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// tokens is a usage total, compact: 950, 12.3k, 4.1M.
func tokens(raw []byte) string {
	u, err := rpc.DecodeUsage(raw)
	if err != nil || u == nil {
		return ""
	}
	n := float64(u.TotalTokens)
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	}
	return fmt.Sprintf("%d", u.TotalTokens)
}

// lastResult is the first line of a result and its status.
func lastResult(r *row) string {
	if !r.hasRes {
		return ""
	}
	if r.res == nil {
		return "-"
	}
	s := fmt.Sprintf("#%d %s", r.res.ExecutionSeq, r.res.Status)
	text := ""
	switch {
	case r.res.Error != nil && r.res.Error.Message != "":
		text = r.res.Error.Message
	case r.res.FinalText != nil:
		text = *r.res.FinalText
	}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(stripControl(l)); l != "" {
			return s + ": " + l
		}
	}
	return s
}

// column is one list column: a fixed width, or a share of what is left.
type column struct {
	title string
	width int // 0: flexible
	share int // of the flexible width
	cell  func(r *row, now time.Time) string
}

func (m *model) columns() []column {
	cols := []column{
		{title: "STATE", width: 11, cell: func(r *row, _ time.Time) string {
			mark, _ := stateMark(r.s.State)
			return mark + " " + r.s.State
		}},
		{title: "HARNESS", width: 7, cell: func(r *row, _ time.Time) string { return r.s.Harness }},
		{title: "SESSION", width: 18, cell: func(r *row, _ time.Time) string { return render.SessionName(r.s) }},
		{title: "TITLE", share: 2, cell: func(r *row, _ time.Time) string { return stripControl(r.s.Title) }},
		{title: "AGE", width: 4, cell: func(r *row, now time.Time) string { return age(r.s.CreatedAtMS, now) }},
		{title: "LAST RESULT", share: 3, cell: func(r *row, _ time.Time) string { return lastResult(r) }},
		{title: "TOKENS", width: 6, cell: func(r *row, _ time.Time) string {
			if r.res == nil {
				return ""
			}
			return tokens(r.res.Usage)
		}},
	}
	// Narrow terminals drop the least needed columns first.
	drop := []string{"TOKENS", "AGE", "HARNESS", "TITLE"}
	for _, d := range drop {
		if m.fixedWidth(cols)+10 <= m.width {
			break
		}
		for i, c := range cols {
			if c.title == d {
				cols = append(cols[:i], cols[i+1:]...)
				break
			}
		}
	}
	return cols
}

// fixedWidth is what the cursor, the fixed columns and the gaps take.
func (m *model) fixedWidth(cols []column) int {
	w := 2
	for _, c := range cols {
		w += c.width + 1
	}
	return w
}

// widths resolves the flexible columns' widths for the terminal width.
func (m *model) widths(cols []column) []int {
	ws := make([]int, len(cols))
	rest, shares := m.width-m.fixedWidth(cols), 0
	for _, c := range cols {
		shares += c.share
	}
	for i, c := range cols {
		ws[i] = c.width
		if c.share > 0 && shares > 0 {
			ws[i] = max(0, rest*c.share/shares)
		}
	}
	return ws
}

// listHeight is how many Session rows the list shows.
func (m *model) listHeight() int {
	body := m.height - 4
	if body < 2 {
		return max(1, body)
	}
	return max(1, min(max(len(m.order), 1), max(3, body*2/5)))
}

// View draws the model on the alternate screen.
func (m *model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	return v
}

// render is the screen's text: height lines of width cells at most.
func (m *model) render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	now := time.Now()
	lines := make([]string, 0, m.height)
	lines = append(lines, m.header())
	switch m.mode {
	case modeHelp:
		lines = append(lines, m.help()...)
	default:
		lines = append(lines, m.list(now)...)
		lines = append(lines, m.preview()...)
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = lines[:m.height-1]
	lines = append(lines, m.statusLine())
	for i, l := range lines {
		lines[i] = fitStyled(l, m.width)
	}
	return strings.Join(lines, "\n")
}

// fitStyled clips a line that may hold SGR sequences to w cells.
func fitStyled(s string, w int) string {
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

func (m *model) header() string {
	counts := map[string]int{}
	for _, r := range m.rows {
		counts[r.s.State]++
	}
	s := fmt.Sprintf("dlgt ui · %d %s", len(m.rows), render.Plural(len(m.rows), "Session", "Sessions"))
	for _, st := range []string{rpc.StateBlocked, rpc.StateFailed, rpc.StateBusy} {
		if n := counts[st]; n > 0 {
			mark, code := stateMark(st)
			s += " · " + m.color(code, fmt.Sprintf("%s %d %s", mark, n, st))
		}
	}
	switch {
	case m.connected:
		s += " · connected"
	case m.everUp:
		s += " · " + m.color(sgrYellow, "reconnecting… ("+m.connErr+")")
	case m.connErr != "":
		s += " · " + m.color(sgrYellow, "connecting… ("+m.connErr+")")
	default:
		s += " · connecting…"
	}
	return sgr(sgrBold, s)
}

func (m *model) list(now time.Time) []string {
	cols := m.columns()
	ws := m.widths(cols)
	var b strings.Builder
	b.WriteString("  ")
	for i, c := range cols {
		b.WriteString(fit(c.title, ws[i]))
		b.WriteByte(' ')
	}
	out := []string{sgr(sgrBold, strings.TrimRight(b.String(), " "))}
	h := m.listHeight()
	if len(m.order) == 0 {
		text := "  no Sessions yet: N starts a delegation"
		if !m.connected && !m.everUp {
			text = "  waiting for the daemon…"
		}
		out = append(out, text)
		for i := 1; i < h; i++ {
			out = append(out, "")
		}
		return out
	}
	sel := max(0, m.selIndex())
	if sel < m.top {
		m.top = sel
	}
	if sel >= m.top+h {
		m.top = sel - h + 1
	}
	m.top = max(0, min(m.top, len(m.order)-h))
	for i := m.top; i < m.top+h; i++ {
		if i >= len(m.order) {
			out = append(out, "")
			continue
		}
		r := m.rows[m.order[i]]
		b.Reset()
		selected := m.order[i] == m.sel
		if selected {
			b.WriteString("> ")
		} else {
			b.WriteString("  ")
		}
		for j, c := range cols {
			cell := fit(c.cell(r, now), ws[j])
			if j == 0 && !selected {
				_, code := stateMark(r.s.State)
				if code != "" {
					cell = m.color(code, cell)
				}
			}
			b.WriteString(cell)
			if j < len(cols)-1 {
				b.WriteByte(' ')
			}
		}
		line := b.String()
		if selected {
			line = sgr(sgrReverse, fit(line, m.width))
		}
		out = append(out, line)
	}
	return out
}

// preview is the selected Session's part: a title rule, its pending
// request in full, then the newest rows of its screen.
func (m *model) preview() []string {
	room := m.height - 2 - 1 - m.listHeight() - 1 // header, list header, list, status
	if room <= 0 {
		return nil
	}
	r := m.selected()
	if m.mode == modeNew {
		return m.formView(room)
	}
	if r == nil {
		return []string{m.rule("")}
	}
	s := r.s
	title := fmt.Sprintf(" %s · %s · %s · %s ", render.SessionName(s), s.State, s.Harness, s.Cwd)
	out := []string{m.rule(title)}
	if p := s.Pending; p != nil && s.State == rpc.StateBlocked {
		out = append(out, m.pendingLines(p, room-1)...)
	}
	rows := room - len(out)
	if m.screenErr != "" && rows > 0 {
		out = append(out, m.color(sgrRed, "screen: "+m.screenErr))
		rows--
	}
	screen := m.screen
	if m.screenID != m.sel {
		screen = nil
	}
	if rows > 0 && len(screen) > rows {
		screen = screen[len(screen)-rows:]
	}
	for _, l := range screen {
		out = append(out, fit(l, m.width))
	}
	return out
}

func (m *model) rule(title string) string {
	w := ansi.StringWidth(title)
	if w+4 > m.width {
		return fit(title, m.width)
	}
	return sgr(sgrDim, "──") + sgr(sgrBold, title) + sgr(sgrDim, strings.Repeat("─", m.width-w-2))
}

// pendingLines shows a pending request in full (wrapped, not clipped),
// within room lines, with the keys that answer it.
func (m *model) pendingLines(p *rpc.Pending, room int) []string {
	var text, keys string
	switch p.Kind {
	case rpc.PendingPermission:
		text = "wants to use " + orWord(p.Tool, "a tool")
		if p.Input != "" {
			text += ": " + p.Input
		}
		keys = "y allow · n deny"
	default:
		text = "asks: " + p.Question
		var opts []string
		for i, o := range p.Options {
			if i >= 9 {
				break
			}
			opts = append(opts, fmt.Sprintf("%d %s", i+1, o.Label))
		}
		keys = strings.Join(opts, " · ")
	}
	var out []string
	for _, para := range strings.Split(stripNewlines(text), "\n") {
		out = append(out, wrap(para, max(10, m.width-2))...)
	}
	limit := max(1, room/2)
	if len(out) > limit {
		out = append(out[:limit-1], "…")
	}
	for i := range out {
		out[i] = m.color(sgrYellow, "! "+out[i])
	}
	return append(out, sgr(sgrBold, "  "+keys))
}

// stripNewlines keeps newlines and drops other control characters.
func stripNewlines(s string) string {
	parts := strings.Split(s, "\n")
	for i := range parts {
		parts[i] = stripControl(parts[i])
	}
	return strings.Join(parts, "\n")
}

// wrap breaks s into lines of w cells at most.
func wrap(s string, w int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for ansi.StringWidth(s) > w {
		head := ansi.Truncate(s, w, "")
		if head == "" {
			break
		}
		out = append(out, head)
		s = s[len(head):]
	}
	return append(out, s)
}

func (m *model) formView(room int) []string {
	out := []string{m.rule(" new delegation: Tab moves, Enter on the prompt starts it, Esc leaves ")}
	for i, l := range formLabels {
		v := m.form.fields[i].String()
		prefix := fmt.Sprintf("  %-8s ", l)
		if i == m.form.focus {
			prefix = sgr(sgrBold, fmt.Sprintf("> %-8s ", l))
			v += "█"
		}
		// The end of a long field stays in view.
		vw := max(1, m.width-11)
		if ansi.StringWidth(v) > vw {
			v = "…" + ansi.TruncateLeft(v, ansi.StringWidth(v)-vw+1, "")
		}
		out = append(out, prefix+v)
	}
	if len(out) > room {
		out = out[:room]
	}
	return out
}

func (m *model) statusLine() string {
	switch m.mode {
	case modeConfirm:
		q := fmt.Sprintf("%s %s? y/N", m.confirm.verb, m.confirm.name)
		if m.confirm.force {
			q = fmt.Sprintf("stop %s (its turn is interrupted)? y/N", m.confirm.name)
		}
		return sgr(sgrReverse, fit(q, m.width))
	case modeSend:
		if m.sendBusy {
			return m.inputLine(m.name(m.sel) + " is busy: Enter steers its running turn, Tab queues after it, Esc leaves> ")
		}
		return m.inputLine("send to " + m.name(m.sel) + "> ")
	case modeDeny:
		return m.inputLine(m.deny.said + " for " + m.deny.name + ", a reason for the model (optional; Enter denies, Esc leaves)> ")
	case modeHelp:
		return "any key returns to the list"
	}
	if m.status != "" {
		return m.status
	}
	return sgr(sgrDim, "a attach · y/n answer · s send · c cancel · x stop · r restart · o open · N new · ? help · q quit")
}

// inputLine is the one-line input after prefix, its end in view.
func (m *model) inputLine(prefix string) string {
	prefix = fit(prefix, max(0, min(ansi.StringWidth(prefix), m.width-10)))
	v := m.input.String() + "█"
	vw := max(1, m.width-ansi.StringWidth(prefix))
	if ansi.StringWidth(v) > vw {
		v = "…" + ansi.TruncateLeft(v, ansi.StringWidth(v)-vw+1, "")
	}
	return sgr(sgrBold, prefix) + v
}

var helpText = []string{
	"Keys",
	"",
	"  ↑/k ↓/j PgUp PgDn g G   select a Session (a paste moves by its j k g G only)",
	"  a        attach to its terminal (Ctrl-] detaches and comes back here)",
	"  y / n    allow / deny the permission it is blocked on (n asks for a reason first;",
	"           Enter denies with it or without one, Esc leaves the request waiting)",
	"  1-9      answer the question it is blocked on with that option",
	"  s        send a follow-up prompt (Enter sends, Esc leaves); on a busy",
	"           Session Enter steers its running turn and Tab queues after it",
	"  c        cancel its running turn (asks first)",
	"  x        stop it (asks first; a busy Session's turn is interrupted)",
	"  r        restart (relaunch) it (asks first)",
	"  o        open its last result's final text in $PAGER",
	"  N        start a new delegation (harness, directory, prompt)",
	"  ?        this help",
	"  q Ctrl-C quit",
	"",
	"States: ! blocked  ✗ failed  ● busy  ◐ starting  ◌ canceling/stopping  ○ idle  · stopped",
	"The list follows the daemon's events; the preview shows the newest rows of the selected",
	"Session's screen (re-read every second while it is active).",
}

func (m *model) help() []string {
	return helpText
}
