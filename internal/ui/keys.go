package ui

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// maxInput bounds a one-line input (a follow-up, a form field).
const maxInput = 8192

// line is a one-line input edited at its end.
type line struct{ r []rune }

func (l *line) String() string { return string(l.r) }
func (l *line) reset()         { l.r = l.r[:0] }

// edit applies an editing key; false when k is no editing key.
func (l *line) edit(k tea.KeyPressMsg) bool {
	switch k.String() {
	case "backspace":
		if len(l.r) > 0 {
			l.r = l.r[:len(l.r)-1]
		}
		return true
	case "ctrl+u":
		l.reset()
		return true
	case "ctrl+w":
		s := strings.TrimRight(string(l.r), " ")
		if i := strings.LastIndex(s, " "); i >= 0 {
			l.r = []rune(s[:i+1])
		} else {
			l.reset()
		}
		return true
	}
	if k.Text != "" && !k.Mod.Contains(tea.ModCtrl) && !k.Mod.Contains(tea.ModAlt) {
		l.insert(k.Text)
		return true
	}
	return false
}

// insert adds typed or pasted text at the end: line breaks and tabs as
// spaces, other control characters left out, at most maxInput runes.
func (l *line) insert(text string) {
	for _, r := range text {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		if len(l.r) < maxInput && r >= 0x20 && r != 0x7f {
			l.r = append(l.r, r)
		}
	}
}

// newForm is the new-delegation form: harness, directory, prompt.
type newForm struct {
	fields [3]line
	focus  int
}

var formLabels = [3]string{"harness", "cwd", "prompt"}

// makeForm is the form of a new delegation: the harness field holds the
// first harness the client knows (the registry's order), the directory
// field cwd.
func makeForm(harnesses []harness.Descriptor, cwd string) newForm {
	var f newForm
	if len(harnesses) > 0 {
		f.fields[0].r = []rune(harnesses[0].Name)
	}
	f.fields[1].r = []rune(cwd)
	return f
}

func (m *model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if k.String() == "ctrl+c" {
		return m, tea.Quit
	}
	if rs := []rune(k.Text); len(rs) > 1 && m.mode != modeSend && m.mode != modeDeny && m.mode != modeNew {
		// Several characters in one key message (Bubble Tea v1 made one
		// of a read holding "jj"; v2 makes one per key): each counts as
		// typed, in order. An input line takes them as text.
		cmds := make([]tea.Cmd, 0, len(rs))
		for _, r := range rs {
			_, cmd := m.key(runeKey(r))
			cmds = append(cmds, cmd)
		}
		return m, tea.Sequence(cmds...)
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeList
		if k.String() == "q" {
			return m, tea.Quit
		}
		return m, nil
	case modeConfirm:
		return m.confirmKey(k)
	case modeSend:
		return m.sendKey(k)
	case modeDeny:
		return m.denyKey(k)
	case modeNew:
		return m.formKey(k)
	}
	return m.listKey(k)
}

// runeKey is the key message of one typed character, as the terminal
// reader makes it (an upper case letter is its letter with shift).
func runeKey(r rune) tea.KeyPressMsg {
	k := tea.KeyPressMsg{Code: r, Text: string(r)}
	if lower := unicode.ToLower(r); lower != r {
		k.Code, k.ShiftedCode, k.Mod = lower, r, tea.ModShift
	}
	return k
}

// paste takes text the terminal marks as pasted (bracketed paste): into
// the line being edited; in the list only its selection keys (j k g G)
// count, each as if typed, so a paste cannot act on a Session, answer a
// question or quit; elsewhere it is ignored.
func (m *model) paste(text string) (tea.Model, tea.Cmd) {
	switch m.mode {
	case modeSend, modeDeny:
		m.input.insert(text)
	case modeNew:
		m.form.fields[m.form.focus].insert(text)
	case modeList:
		ignored := false
		for _, r := range text {
			switch r {
			case 'j':
				m.step(1)
			case 'k':
				m.step(-1)
			case 'g':
				m.step(-len(m.order))
			case 'G':
				m.step(len(m.order))
			case ' ', '\t', '\n', '\r':
			default:
				ignored = true
			}
		}
		if ignored {
			m.status = "a paste moves the selection only (j k g G); type other keys"
		}
		return m, m.selectionChanged()
	}
	return m, nil
}

// step moves the selection by delta rows, within the list.
func (m *model) step(delta int) {
	if len(m.order) > 0 {
		m.sel = m.order[max(0, min(len(m.order)-1, m.selIndex()+delta))]
	}
}

func (m *model) move(delta int) tea.Cmd {
	m.step(delta)
	return m.selectionChanged()
}

func (m *model) listKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "q":
		return m, tea.Quit
	case "up", "k":
		return m, m.move(-1)
	case "down", "j":
		return m, m.move(1)
	case "pgup":
		return m, m.move(-max(1, m.listHeight()-1))
	case "pgdown":
		return m, m.move(max(1, m.listHeight()-1))
	case "home", "g":
		return m, m.move(-len(m.order))
	case "end", "G":
		return m, m.move(len(m.order))
	case "?":
		m.mode = modeHelp
		return m, nil
	case "N":
		m.mode = modeNew
		m.form.fields[2].reset()
		m.form.focus = 2
		return m, nil
	}
	r := m.selected()
	if r == nil {
		switch k.String() {
		case "a", "y", "n", "s", "c", "x", "r", "o":
			m.status = "no Session selected"
		}
		return m, nil
	}
	id, name := r.s.ID, render.SessionName(r.s)
	switch s := k.String(); s {
	case "a":
		m.status = "attaching to " + name + " (Ctrl-] detaches)"
		return m, m.attachCmd(id, name)
	case "y":
		return m, m.respond(r, true, "")
	case "n":
		// A deny can say why: a one-line reason for the model first.
		if params, said, ok := m.answer(r, false, ""); ok {
			m.mode = modeDeny
			m.deny.params, m.deny.said, m.deny.name = params, said, name
			m.input.reset()
		}
		return m, nil
	case "1", "2", "3", "4", "5", "6", "7", "8", "9":
		return m, m.respond(r, false, s)
	case "s":
		m.mode = modeSend
		m.sendBusy = r.s.State == rpc.StateBusy || r.s.State == rpc.StateBlocked || r.s.State == rpc.StateCanceling
		m.input.reset()
		return m, nil
	case "c", "x", "r":
		m.mode = modeConfirm
		m.confirm.verb, m.confirm.id, m.confirm.name = map[string]string{"c": "cancel", "x": "stop", "r": "restart"}[s], id, name
		m.confirm.force = s == "x" && (r.s.State == rpc.StateBusy || r.s.State == rpc.StateBlocked)
		return m, nil
	case "o":
		if !r.hasRes || r.res == nil {
			m.status = name + " has no result yet"
			return m, nil
		}
		if r.res.FinalText == nil {
			m.status = name + "'s last result has no final text (" + r.res.Status + ")"
			return m, nil
		}
		return m, m.openResult(id, name)
	}
	return m, nil
}

// openResult reads the whole latest result and shows it in $PAGER.
func (m *model) openResult(id, name string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.callCtx()
		defer cancel()
		res, err := m.c.SessionRead(ctx, rpc.SessionReadParams{Session: id})
		if err != nil {
			return actionMsg{id: id, err: err}
		}
		if res.Result == nil || res.Result.FinalText == nil {
			return actionMsg{id: id, text: name + " has no final text"}
		}
		return openMsg{id: id, name: name, text: *res.Result.FinalText}
	}
}

type openMsg struct{ id, name, text string }

// answer builds the answer to what the selected Session waits on: allow
// or deny a permission, or a question's option; false, with the reason on
// the status line, when it waits on nothing that answer fits.
func (m *model) answer(r *row, allow bool, option string) (rpc.SessionRespondParams, string, bool) {
	name, p := render.SessionName(r.s), r.s.Pending
	if r.s.State != rpc.StateBlocked || p == nil {
		m.status = name + " is not waiting for an answer"
		return rpc.SessionRespondParams{}, "", false
	}
	params := rpc.SessionRespondParams{Session: r.s.ID, PendingID: p.ID, RequestID: newRequestID()}
	var said string
	switch {
	case p.Kind == rpc.PendingPermission && option == "":
		params.Decision, said = rpc.DecisionDeny, "denied"
		if allow {
			params.Decision, said = rpc.DecisionAllow, "allowed"
		}
		said += " " + orWord(p.Tool, "the request")
	case p.Kind == rpc.PendingQuestion && option != "":
		i := int(option[0] - '1')
		if i >= len(p.Options) {
			m.status = fmt.Sprintf("%s's question has %d options", name, len(p.Options))
			return params, "", false
		}
		params.Option, said = p.Options[i].ID, "answered "+p.Options[i].Label
	case p.Kind == rpc.PendingQuestion:
		m.status = "answer the question with its number (1-" + fmt.Sprint(min(9, len(p.Options))) + ")"
		return params, "", false
	default:
		m.status = "y allows, n denies a permission request"
		return params, "", false
	}
	return params, said, true
}

func (m *model) respond(r *row, allow bool, option string) tea.Cmd {
	params, said, ok := m.answer(r, allow, option)
	if !ok {
		return nil
	}
	return m.sendAnswer(params, said, render.SessionName(r.s))
}

// sendAnswer sends session.respond; the status line says how it went.
func (m *model) sendAnswer(params rpc.SessionRespondParams, said, name string) tea.Cmd {
	m.status = "answering " + name + "…"
	return m.action(params.Session, func(ctx context.Context) (string, error) {
		if _, err := m.c.SessionRespond(ctx, params); err != nil {
			return "", err
		}
		return said + " for " + name, nil
	})
}

// denyKey edits the reason of a deny: Enter denies (with the reason, if
// any), Esc leaves the request waiting.
func (m *model) denyKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.mode = modeList
		m.status = "did not deny " + m.deny.name
		return m, nil
	case "enter":
		m.mode = modeList
		params := m.deny.params
		params.Message = strings.TrimSpace(m.input.String())
		return m, m.sendAnswer(params, m.deny.said, m.deny.name)
	}
	m.input.edit(k)
	return m, nil
}

func orWord(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func (m *model) confirmKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.mode = modeList
	verb, id, name, force := m.confirm.verb, m.confirm.id, m.confirm.name, m.confirm.force
	if k.String() != "y" && k.String() != "Y" {
		m.status = "did not " + verb + " " + name
		return m, nil
	}
	switch verb {
	case "cancel":
		m.status = "canceling " + name + "…"
		return m, m.action(id, func(ctx context.Context) (string, error) {
			res, err := m.c.SessionCancel(ctx, rpc.SessionCancelParams{Session: id})
			if err != nil {
				return "", err
			}
			text := "canceled " + name + ": " + res.Session.State
			if res.Result != nil {
				text += " (" + res.Result.Status + ")"
			}
			return text, nil
		})
	case "restart":
		m.status = "restarting " + name + "…"
		return m, m.action(id, func(ctx context.Context) (string, error) {
			res, err := m.c.SessionRestart(ctx, rpc.SessionRestartParams{Session: id, Environment: m.c.LaunchEnvironment()})
			if err != nil {
				return "", err
			}
			return "restarted " + name + ": " + res.Session.State, nil
		})
	default:
		m.status = "stopping " + name + "…"
		return m, m.action(id, func(ctx context.Context) (string, error) {
			res, err := m.c.SessionStop(ctx, rpc.SessionStopParams{Session: id, Force: force})
			if err != nil {
				return "", err
			}
			return "stopped " + name + ": " + res.Session.State, nil
		})
	}
}

func (m *model) sendKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.mode = modeList
		m.status = "sent nothing"
		return m, nil
	case "enter", "tab":
		if k.String() == "tab" && !m.sendBusy {
			break // an idle Session has nothing to queue behind
		}
		m.mode = modeList
		prompt := strings.TrimSpace(m.input.String())
		r := m.selected()
		if prompt == "" || r == nil {
			m.status = "sent nothing"
			return m, nil
		}
		id, name := r.s.ID, render.SessionName(r.s)
		steer, queue := m.sendBusy && k.String() == "enter", k.String() == "tab"
		m.status = "sending to " + name + "…"
		return m, m.action(id, func(ctx context.Context) (string, error) {
			var rc rpc.Receipt
			var err error
			switch {
			case steer:
				rc, err = m.c.SessionSteer(ctx, id, prompt, newRequestID())
			case queue:
				rc, err = m.c.SessionQueue(ctx, id, prompt, newRequestID())
			default:
				rc, err = m.c.SessionSend(ctx, rpc.SessionSendParams{Session: id, Prompt: prompt, RequestID: newRequestID()})
			}
			if err != nil {
				return "", err
			}
			switch {
			case rc.Steered:
				return fmt.Sprintf("steered %s's running execution %d", name, rc.ExecutionSeq), nil
			case rc.Queued:
				return fmt.Sprintf("queued for %s as execution %d, after the running one", name, rc.ExecutionSeq), nil
			}
			return fmt.Sprintf("sent to %s (execution %d, %s)", name, rc.ExecutionSeq, rc.Submission), nil
		})
	}
	m.input.edit(k)
	return m, nil
}

func (m *model) formKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	f := &m.form
	switch k.String() {
	case "esc":
		m.mode = modeList
		m.status = "started nothing"
		return m, nil
	case "tab", "down":
		f.focus = (f.focus + 1) % len(f.fields)
		return m, nil
	case "shift+tab", "up":
		f.focus = (f.focus + len(f.fields) - 1) % len(f.fields)
		return m, nil
	case "enter":
		if f.focus < len(f.fields)-1 {
			f.focus++
			return m, nil
		}
		harness := strings.TrimSpace(f.fields[0].String())
		cwd := strings.TrimSpace(f.fields[1].String())
		prompt := strings.TrimSpace(f.fields[2].String())
		if harness == "" || prompt == "" {
			m.status = "a new delegation needs a harness and a prompt"
			return m, nil
		}
		m.mode = modeList
		m.status = "starting a " + harness + " Session…"
		return m, m.action("", func(ctx context.Context) (string, error) {
			l, err := m.c.ResolveLaunch(client.LaunchSpec{Harness: harness, Cwd: cwd, Prompt: prompt,
				Title: client.TitleFrom(prompt), RequestID: newRequestID()})
			if err != nil {
				return "", err
			}
			rc, err := m.c.Launch(ctx, l)
			if err != nil {
				return "", err
			}
			return "started " + render.SessionName(rc.Session) + " (" + rc.Session.Harness + ")", nil
		})
	}
	f.fields[f.focus].edit(k)
	return m, nil
}
