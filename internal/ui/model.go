// Package ui is `dlgt ui`: a full-screen terminal view of every Session
// of one daemon (Bubble Tea), sorted with what needs a person first,
// kept current from event.subscribe, with a preview of the selected
// Session's screen and single keys that act on it.
package ui

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// ageTick redraws the relative times (no RPC); previewTick re-reads the
// selected Session's screen while it is active (a repaint raises no
// event).
const (
	ageTick     = 5 * time.Second
	previewTick = time.Second
	uiFPS       = 20
	// firstReads is how many results the first read of a load asks for
	// (a screenful), before the rest, so the first screen is complete
	// sooner.
	firstReads = 48
)

// Options configure the UI.
type Options struct {
	Client *client.Client
	// Exe is the dlgt executable, run for attach with ExeArgs first
	// (--host).
	Exe     string
	ExeArgs []string
	// NoColor draws without colors (NO_COLOR).
	NoColor bool
	// Cwd is the default directory of a new delegation.
	Cwd string
}

// Run shows the UI on the terminal until the person quits or ctx ends,
// and restores the terminal on every way out (Bubble Tea restores it on a
// quit, an interrupt and a panic in Update, View or a command).
func Run(ctx context.Context, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, o)
	// 20 frames a second at most: the renderer wakes up at this rate
	// even when nothing changes, and a list needs no more.
	// Signals are the command's: it cancels ctx on SIGINT and SIGTERM,
	// and ctx ending quits the program. Bubble Tea's own handler is off:
	// its send of the quit message does not watch for the program having
	// ended, so a signal racing another way out hung the exit. The
	// alternate screen is the view's (View).
	p := tea.NewProgram(m, tea.WithFPS(uiFPS), tea.WithoutSignalHandler())
	go func() {
		<-ctx.Done()
		p.Quit()
	}()
	// The subscriber is no Bubble Tea command: a panic in it is handed to
	// Update, whose panic Bubble Tea recovers from, restoring the terminal.
	go func() {
		defer func() {
			if r := recover(); r != nil {
				p.Send(panicMsg{fmt.Sprintf("%v\n%s", r, debug.Stack())})
			}
		}()
		subscribe(ctx, o.Client, m.events)
	}()
	_, err := p.Run()
	return err
}

// settledMsg reads the screen of a Session once more after it went quiet.
type settledMsg struct{ id string }

// panicMsg carries a panic of the event subscriber into Update.
type panicMsg struct{ text string }

// row is one Session and what the UI knows of it.
type row struct {
	s      rpc.Session
	res    *rpc.Result
	hasRes bool
	// reading: a session.read is in flight; again: an event came since.
	reading, again bool
}

type mode int

const (
	modeList mode = iota
	modeConfirm
	modeSend
	modeDeny
	modeNew
	modeHelp
)

type model struct {
	ctx     context.Context
	c       *client.Client
	exe     string
	exeArgs []string
	noColor bool
	events  chan tea.Msg

	rows  map[string]*row
	order []string
	sel   string // selected Session id
	top   int    // first list row shown

	width, height int

	connected bool
	everUp    bool
	connErr   string

	// preview of sel
	screenID       string
	screen         []string
	screenErr      string
	screenReading  bool
	screenAgain    bool
	previewGen     int
	previewTicking bool

	status string

	// sendBusy: the send being typed is to a busy Session, which Enter
	// steers and Tab queues behind (session.send steer / queue).
	sendBusy bool

	mode    mode
	confirm struct {
		verb  string // "cancel", "stop" or "restart"
		id    string
		name  string
		force bool
	}
	// deny is the answer n prepared, sent with the reason typed in input.
	deny struct {
		params rpc.SessionRespondParams
		said   string
		name   string
	}
	input line
	form  newForm
}

func newModel(ctx context.Context, o Options) *model {
	cwd := o.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	m := &model{ctx: ctx, c: o.Client, exe: o.Exe, exeArgs: o.ExeArgs, noColor: o.NoColor,
		events: make(chan tea.Msg, eventQueue), rows: map[string]*row{}, width: 80, height: 24}
	if o.Client != nil {
		m.form = makeForm(o.Client.Harnesses(), cwd)
	} else {
		m.form = makeForm(nil, cwd)
	}
	return m
}

func (m *model) Init() tea.Cmd {
	return tea.Batch(waitMsg(m.events), tea.Tick(ageTick, func(time.Time) tea.Msg { return tickMsg{} }))
}

// priority orders the states: what needs a person first.
func priority(state string) int {
	switch state {
	case rpc.StateBlocked:
		return 0
	case rpc.StateFailed:
		return 1
	case rpc.StateBusy, rpc.StateStarting, rpc.StateCanceling, rpc.StateRestarting, rpc.StateStopping:
		return 2
	case rpc.StateIdle:
		return 3
	}
	return 4
}

// active states change their screen without events.
func active(state string) bool {
	return priority(state) <= 2 && state != rpc.StateFailed
}

func (m *model) resort() {
	m.order = m.order[:0]
	for id := range m.rows {
		m.order = append(m.order, id)
	}
	slices.SortFunc(m.order, func(a, b string) int {
		ra, rb := m.rows[a].s, m.rows[b].s
		if pa, pb := priority(ra.State), priority(rb.State); pa != pb {
			return pa - pb
		}
		// Newest first; creation times do not change, so rows do not
		// move under the cursor while their state stays in one group.
		if ra.CreatedAtMS != rb.CreatedAtMS {
			if ra.CreatedAtMS > rb.CreatedAtMS {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if _, ok := m.rows[m.sel]; !ok {
		m.sel = ""
		if len(m.order) > 0 {
			m.sel = m.order[0]
		}
	}
}

func (m *model) selIndex() int {
	return slices.Index(m.order, m.sel)
}

func (m *model) selected() *row {
	return m.rows[m.sel]
}

// selectionChanged starts the preview of the newly selected Session.
func (m *model) selectionChanged() tea.Cmd {
	if m.sel == m.screenID {
		return nil
	}
	m.screenID, m.screen, m.screenErr = m.sel, nil, ""
	m.screenReading, m.screenAgain = false, false
	return tea.Batch(m.refreshScreen(), m.schedulePreview())
}

// refreshScreen reads the selected Session's screen, at most one read in
// flight (a request during one reads again after it).
func (m *model) refreshScreen() tea.Cmd {
	if m.sel == "" {
		return nil
	}
	if m.screenReading {
		m.screenAgain = true
		return nil
	}
	m.screenReading = true
	return m.screenCmd(m.sel)
}

// schedulePreview keeps one timer re-reading the screen while the
// selected Session is active; none runs for a quiet one.
func (m *model) schedulePreview() tea.Cmd {
	r := m.selected()
	if r == nil || !active(r.s.State) || m.previewTicking {
		return nil
	}
	m.previewTicking = true
	m.previewGen++
	gen := m.previewGen
	return tea.Tick(previewTick, func(time.Time) tea.Msg { return previewTickMsg{gen} })
}

// readSession re-reads one Session after an event, one read in flight.
func (m *model) readSession(id string) tea.Cmd {
	r := m.rows[id]
	if r == nil {
		// Not listed until the read says what it is.
		return m.readCmd(id)
	}
	if r.reading {
		r.again = true
		return nil
	}
	r.reading = true
	return m.readCmd(id)
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case panicMsg:
		panic("event subscriber: " + msg.text)
	case tickMsg:
		return m, tea.Tick(ageTick, func(time.Time) tea.Msg { return tickMsg{} })
	case connMsg:
		m.connected = msg.up
		if msg.up {
			m.everUp, m.connErr = true, ""
			return m, tea.Batch(waitMsg(m.events), m.listCmd())
		}
		m.connErr = "daemon unavailable"
		if msg.err != nil {
			m.connErr = errText(msg.err)
		}
		return m, waitMsg(m.events)
	case eventMsg:
		cmds := []tea.Cmd{waitMsg(m.events)}
		if id := msg.ev.SessionID; id != "" {
			cmds = append(cmds, m.readSession(id))
			if id == m.sel {
				cmds = append(cmds, m.refreshScreen())
			}
		}
		return m, tea.Batch(cmds...)
	case listMsg:
		if msg.err != nil {
			m.status = "session.list: " + errText(msg.err)
			return m, nil
		}
		old := m.rows
		m.rows = make(map[string]*row, len(msg.sessions))
		for _, s := range msg.sessions {
			r := &row{s: s}
			if o := old[s.ID]; o != nil {
				r.res, r.hasRes = o.res, o.hasRes
			}
			m.rows[s.ID] = r
		}
		m.resort()
		// Results are read in the order shown: the first ones matter most.
		ids := slices.Clone(m.order)
		cmds := []tea.Cmd{m.resultsCmd(ids[:min(len(ids), firstReads)])}
		if len(ids) > firstReads {
			cmds = append(cmds, m.resultsCmd(ids[firstReads:]))
		}
		if m.sel != m.screenID {
			cmds = append(cmds, m.selectionChanged())
		} else {
			cmds = append(cmds, m.refreshScreen(), m.schedulePreview())
		}
		return m, tea.Batch(cmds...)
	case resultsMsg:
		for id, res := range msg.results {
			if r := m.rows[id]; r != nil {
				r.res, r.hasRes = res, true
			}
		}
		return m, nil
	case readMsg:
		r := m.rows[msg.id]
		var cmds []tea.Cmd
		if r != nil {
			r.reading = false
			if r.again {
				r.again = false
				cmds = append(cmds, m.readSession(msg.id))
			}
		}
		switch {
		case isNotFound(msg.err):
			delete(m.rows, msg.id)
		case msg.err != nil:
			return m, tea.Batch(cmds...)
		default:
			if r == nil {
				r = &row{}
				m.rows[msg.id] = r
			}
			if msg.id == m.sel && active(r.s.State) && !active(msg.res.Session.State) {
				// The harness may repaint once more after its turn
				// ended: its screen is read again a moment later.
				id := msg.id
				cmds = append(cmds, tea.Tick(previewTick, func(time.Time) tea.Msg { return settledMsg{id} }))
			}
			r.s, r.res, r.hasRes = msg.res.Session, msg.res.Result, true
		}
		prev := m.sel
		m.resort()
		if m.sel != prev {
			cmds = append(cmds, m.selectionChanged())
		}
		if msg.id == m.sel {
			cmds = append(cmds, m.schedulePreview())
		}
		return m, tea.Batch(cmds...)
	case screenMsg:
		m.screenReading = false
		if msg.id == m.screenID {
			if msg.err != nil {
				m.screen, m.screenErr = nil, errText(msg.err)
			} else {
				m.screen, m.screenErr = cleanRows(msg.page.Lines), ""
			}
		}
		if m.screenAgain || msg.id != m.sel {
			m.screenAgain = false
			return m, m.refreshScreen()
		}
		return m, nil
	case settledMsg:
		if msg.id != m.sel {
			return m, nil
		}
		return m, m.refreshScreen()
	case previewTickMsg:
		if msg.gen != m.previewGen {
			return m, nil
		}
		m.previewTicking = false
		r := m.selected()
		if r == nil || !active(r.s.State) || !m.connected {
			return m, nil
		}
		cmds := []tea.Cmd{m.refreshScreen(), m.schedulePreview()}
		if r.s.State == rpc.StateBlocked {
			// The pending request may be recorded after the event
			// that said blocked, and no event marks it: the snapshot
			// is read again while the Session stays blocked.
			cmds = append(cmds, m.readSession(r.s.ID))
		}
		return m, tea.Batch(cmds...)
	case actionMsg:
		if msg.err != nil {
			m.status = "✗ " + errText(msg.err)
		} else {
			m.status = "✓ " + msg.text
		}
		if msg.id != "" {
			return m, m.readSession(msg.id)
		}
		return m, nil
	case openMsg:
		m.status = "showing the result of " + msg.name
		return m, pagerCmd(msg.id, msg.name, msg.text)
	case execDone:
		if msg.tmp != "" {
			os.Remove(msg.tmp)
		}
		if msg.err != nil {
			m.status = fmt.Sprintf("✗ %s: %v", msg.what, msg.err)
		} else {
			m.status = "✓ " + msg.what
		}
		return m, tea.Batch(m.readSession(msg.id), m.refreshScreen())
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.PasteMsg:
		return m.paste(msg.Content)
	}
	return m, nil
}

// cleanRows keeps the rows of a screen page as plain text: control
// characters out, trailing blank rows dropped, at most previewLines.
func cleanRows(lines []string) []string {
	out := make([]string, 0, min(len(lines), previewLines))
	for _, l := range lines {
		out = append(out, stripControl(l))
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if len(out) > previewLines {
		out = out[len(out)-previewLines:]
	}
	return out
}

func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

func (m *model) name(id string) string {
	if r := m.rows[id]; r != nil {
		return render.SessionName(r.s)
	}
	return id
}
