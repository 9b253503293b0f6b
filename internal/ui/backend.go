package ui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Bounds of what the UI asks for and keeps.
const (
	// eventQueue bounds the events waiting for the Update loop; a full
	// queue stops reading the subscription (the daemon may then drop the
	// slow subscriber, and the reconnect reloads the whole list).
	eventQueue = 64
	// maxResultReads bounds the session.read calls of one resultsCmd (the
	// LAST column of Sessions past it stays empty until they change).
	maxResultReads = 200
	// readParallel bounds the concurrent session.read calls of a load.
	readParallel = 8
	// previewLines bounds the rows one preview read asks for.
	previewLines = 200
	// callTimeout bounds one RPC the UI makes on a key or an event
	// (cancel and stop may take their own grace period).
	callTimeout = 30 * time.Second
	// retryMin and retryMax bound the reconnect backoff.
	retryMin = 100 * time.Millisecond
	retryMax = 2 * time.Second
)

// Messages from the RPC side to the Update loop.
type (
	// connMsg says the event subscription is up (a fresh list load
	// follows) or lost (the UI says "reconnecting…").
	connMsg struct {
		up  bool
		err error
	}
	eventMsg struct{ ev rpc.Event }
	listMsg  struct {
		sessions []rpc.Session
		err      error
	}
	resultsMsg struct{ results map[string]*rpc.Result }
	readMsg    struct {
		id  string
		res rpc.SessionReadResult
		err error
	}
	screenMsg struct {
		id   string
		page rpc.ScrollbackPage
		err  error
	}
	// actionMsg is the outcome of a key's action: text for the status
	// line (or err), and the Session to read again.
	actionMsg struct {
		id   string
		text string
		err  error
	}
	tickMsg        struct{}
	previewTickMsg struct{ gen int }
)

// subscribe follows event.subscribe until ctx ends, handing connection
// changes and events to out. The first dial may start the daemon (as
// every dlgt command does); a redial never does.
func subscribe(ctx context.Context, c *client.Client, out chan<- tea.Msg) {
	send := func(m tea.Msg) bool {
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	delay, first, down := retryMin, true, false
	for ctx.Err() == nil {
		var rc *rpc.Client
		var err error
		if first {
			rc, err = c.Dial(ctx, "")
		} else {
			rc, err = c.DialExisting(ctx, "")
		}
		first = false
		if err == nil {
			var next func() ([]byte, error)
			if _, next, err = rc.Subscribe(ctx, rpc.EventSubscribe.Name, rpc.EventReadParams{}); err == nil {
				down, delay = false, retryMin
				if !send(connMsg{up: true}) {
					rc.Close()
					return
				}
				for {
					line, nerr := next()
					if nerr != nil {
						err = nerr
						break
					}
					var ev rpc.Event
					if json.Unmarshal(line, &ev) == nil && !send(eventMsg{ev}) {
						rc.Close()
						return
					}
				}
			}
			rc.Close()
		}
		if ctx.Err() != nil {
			return
		}
		if !down {
			down = true
			if !send(connMsg{err: err}) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, retryMax)
	}
}

// waitMsg hands on the next message of ch.
func waitMsg(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg { return <-ch }
}

func (m *model) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, callTimeout)
}

func (m *model) listCmd() tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.callCtx()
		defer cancel()
		res, err := m.c.SessionList(ctx, rpc.SessionListParams{All: true})
		return listMsg{sessions: res.Sessions, err: err}
	}
}

// resultsCmd reads the latest result of each Session (bounded in number
// and concurrency).
func (m *model) resultsCmd(ids []string) tea.Cmd {
	if len(ids) > maxResultReads {
		ids = ids[:maxResultReads]
	}
	return func() tea.Msg {
		ctx, cancel := m.callCtx()
		defer cancel()
		var mu sync.Mutex
		out := map[string]*rpc.Result{}
		sem := make(chan struct{}, readParallel)
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				r, err := m.c.SessionRead(ctx, rpc.SessionReadParams{Session: id})
				if err == nil {
					mu.Lock()
					out[id] = r.Result
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return resultsMsg{out}
	}
}

func (m *model) readCmd(id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.callCtx()
		defer cancel()
		r, err := m.c.SessionRead(ctx, rpc.SessionReadParams{Session: id})
		return readMsg{id: id, res: r, err: err}
	}
}

func (m *model) screenCmd(id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.callCtx()
		defer cancel()
		p, err := m.c.ScrollbackRead(ctx, rpc.ScrollbackReadParams{Session: id, Lines: previewLines})
		return screenMsg{id: id, page: p, err: err}
	}
}

// action runs f as a tea.Cmd: its text or error goes to the status line.
func (m *model) action(id string, f func(ctx context.Context) (string, error)) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.callCtx()
		defer cancel()
		text, err := f(ctx)
		return actionMsg{id: id, text: text, err: err}
	}
}

func newRequestID() string { return client.NewRequestID("ui") }

// errText is an error for the status line: an RPC error's message.
func errText(err error) string {
	var re *rpc.Error
	if errors.As(err, &re) {
		return re.Message
	}
	return err.Error()
}

// isNotFound reports a Session the daemon no longer holds.
func isNotFound(err error) bool {
	var re *rpc.Error
	return errors.As(err, &re) && re.Code == rpc.CodeNotFound
}

// execDone is the end of a program the UI handed the terminal to.
type execDone struct {
	id   string
	what string
	err  error
	tmp  string // a file to remove
}

// attachCmd hands the terminal to `dlgt session attach` until it ends
// (Ctrl-] detaches). It prints no end line (it would be left on the
// shell's screen after the UI quits) and its failure goes to stderr,
// kept here for the status line.
func (m *model) attachCmd(id, name string) tea.Cmd {
	cmd := exec.Command(m.exe, append(slices.Clone(m.exeArgs), "session", "attach", "--no-end-line", id)...)
	stderr := &tailBuffer{max: maxAttachStderr}
	cmd.Stderr = stderr
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		if err != nil {
			if msg := failureMessage(stderr.String()); msg != "" {
				err = errors.New(msg)
			}
		}
		return execDone{id: id, what: "detached from " + name, err: err}
	})
}

// maxAttachStderr bounds what the UI keeps of attach's stderr.
const maxAttachStderr = 64 << 10

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// failureMessage is the message of the last {"ok":false,...} line of a
// dlgt command's output, or "".
func failureMessage(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var f struct {
			OK    bool       `json:"ok"`
			Error *rpc.Error `json:"error"`
		}
		if json.Unmarshal([]byte(lines[i]), &f) == nil && !f.OK && f.Error != nil && f.Error.Message != "" {
			return f.Error.Message
		}
	}
	return ""
}

// pagerCmd shows text in $PAGER (less when unset).
func pagerCmd(id, name, text string) tea.Cmd {
	f, err := os.CreateTemp("", "dlgt-ui-result-*.txt")
	if err != nil {
		return func() tea.Msg { return actionMsg{id: id, err: err} }
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return func() tea.Msg { return actionMsg{id: id, err: err} }
	}
	pager := os.Getenv("PAGER")
	if pager == "" {
		pager = "less"
	}
	cmd := exec.Command("/bin/sh", "-c", pager+` "$1"`, "sh", f.Name())
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		return execDone{id: id, what: "closed the result of " + name, err: err, tmp: f.Name()}
	})
}
