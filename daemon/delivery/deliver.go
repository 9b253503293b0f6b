package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// Prompt delivery waits on evidence in the harness's own output
// (harness.Await) instead of fixed pauses: bracketed paste turned on by
// the TUI before the first key, the paste shown at the cursor before
// Enter. Each wait has a fallback timeout, logged when taken. The
// evidence is read from the byte stream (mode switches) and the live grid
// (the echo): the main screen and the alternate screen alike.

// Watch is what a generation's output showed so far, for delivery.
// The daemon's pump feeds it after the emulator took each chunk. The zero value
// is ready to use.
type Watch struct {
	mu     sync.Mutex
	chunks uint64    // chunks seen
	last   time.Time // when the last one arrived
	modes  modeScan
	// pasteFellBack records a wait for bracketed paste that timed out:
	// later prompts of the generation do not wait for it again.
	pasteFellBack bool
	wake          chan struct{} // closed and cleared on the next chunk
}

// Observe records one chunk of output.
func (w *Watch) Observe(p []byte) {
	w.mu.Lock()
	w.modes.scan(p)
	w.chunks++
	w.last = time.Now()
	if w.wake != nil {
		close(w.wake)
		w.wake = nil
	}
	w.mu.Unlock()
}

// State is a snapshot of an Watch.
type State struct {
	Chunks        uint64
	Last          time.Time
	PasteMode     bool
	PasteFellBack bool
	Wake          <-chan struct{} // closed when the next chunk arrives
}

func (w *Watch) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wake == nil {
		w.wake = make(chan struct{})
	}
	return State{Chunks: w.chunks, Last: w.last, PasteMode: w.modes.pasteMode, PasteFellBack: w.pasteFellBack, Wake: w.wake}
}

func (w *Watch) MarkPasteFellBack() {
	w.mu.Lock()
	w.pasteFellBack = true
	w.mu.Unlock()
}

// maxModeParam caps a DEC private mode number being parsed.
const maxModeParam = 1 << 16

// modeScan follows DEC private mode sets and resets (ESC [ ? Pm h / l)
// across chunk boundaries and keeps the bracketed paste mode (2004). It
// skips from ESC to ESC, so plain output costs one IndexByte per chunk.
type modeScan struct {
	state     uint8 // 0 ground, 1 ESC, 2 ESC [, 3 in ESC [ ? params
	param     int
	has2004   bool
	pasteMode bool
}

func (m *modeScan) scan(p []byte) {
	for i := 0; i < len(p); i++ {
		if m.state == 0 {
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				return
			}
			i += j
		}
		b := p[i]
		switch m.state {
		case 0:
			m.state = 1
		case 1:
			if b == '[' {
				m.state = 2
			} else {
				m.state = 0
				if b == 0x1b {
					m.state = 1
				}
			}
		case 2:
			if b == '?' {
				m.state, m.param, m.has2004 = 3, 0, false
			} else {
				m.state = 0
				if b == 0x1b {
					m.state = 1
				}
			}
		case 3:
			switch {
			case b >= '0' && b <= '9':
				if m.param < maxModeParam {
					m.param = m.param*10 + int(b-'0')
				}
			case b == ';':
				m.has2004 = m.has2004 || m.param == 2004
				m.param = 0
			case b == 'h' || b == 'l':
				if m.has2004 || m.param == 2004 {
					m.pasteMode = b == 'h'
				}
				m.state = 0
			default:
				m.state = 0
				if b == 0x1b {
					m.state = 1
				}
			}
		}
	}
}

// Target is what a delivery acts on: one generation of a Session, seen
// through what the daemon hands it.
type Target struct {
	// Out is the generation's output watch.
	Out *Watch
	// Exited is closed once the generation's process exited.
	Exited <-chan struct{}
	// Write writes to the harness's terminal.
	Write func([]byte) (int, error)
	// Grid is the live grid's rows and the cursor, taken under the
	// terminal's lock.
	Grid func() (live []string, row, col int)
	// Who is the Session's id, for the log, and whether it is a warm
	// spare (whose readiness waits on the same evidence).
	Who func() (id string, spare bool)
	// Exec is the active execution's channels, closed once the harness
	// confirmed its prompt and once it ended; ok is false without one.
	Exec func() (submitted, done <-chan struct{}, ok bool)
	Log  *slog.Logger
}

// maxQuietWait bounds the wait for quiet output once the rest of an
// Await holds: a TUI that animates (a spinner while its hook runs) is
// never quiet, and the echo already shows that the paste was taken.
const maxQuietWait = 50 * time.Millisecond

// ErrExited ends a delivery whose harness process is gone.
var ErrExited = errors.New("the harness exited during delivery")

// Deliver writes keys to the target, holding each write for its awaited
// evidence.
func (t *Target) Deliver(ctx context.Context, keys []harness.Keystroke) error {
	mark := t.Out.State().Chunks
	base := t.echoBase(keys, 0)
	repasted := 0
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		if k.Await != nil {
			echoed, err := t.Await(ctx, *k.Await, mark, base)
			if err != nil {
				return err
			}
			if !echoed && repasted < k.Await.Repaste {
				lost, err := t.pasteLost(ctx, *k.Await, base)
				if err != nil {
					return err
				}
				if lost {
					repasted++
					id, _ := t.Who()
					t.Log.Warn("the paste never showed and the input box is empty again; writing the input again",
						"session", id, "attempt", repasted)
					i = -1 // the loop's i++ starts over at the first keystroke
					mark = t.Out.State().Chunks
					base = t.echoBase(keys, 0)
					continue
				}
			}
		}
		mark = t.Out.State().Chunks
		base = t.echoBase(keys, i+1)
		if _, err := t.Write(k.Data); err != nil {
			return err
		}
		if k.Retry != nil {
			if err := t.retryUnconfirmed(ctx, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// retryUnconfirmed writes k again (k.Retry) while the target's execution
// is not confirmed: a TUI that dropped the key gets it again, and one that
// took it has confirmed the prompt by then.
func (t *Target) retryUnconfirmed(ctx context.Context, k harness.Keystroke) error {
	submitted, done, ok := t.Exec()
	if !ok {
		return nil
	}
	for i := 0; i < k.Retry.Max; i++ {
		timer := time.NewTimer(k.Retry.After)
		select {
		case <-submitted:
			timer.Stop()
			return nil
		case <-done:
			timer.Stop()
			return nil
		case <-t.Exited:
			timer.Stop()
			return ErrExited
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		id, _ := t.Who()
		t.Log.Info("prompt not confirmed; writing the key again", "session", id, "after", k.Retry.After, "attempt", i+1)
		if _, err := t.Write(k.Data); err != nil {
			return err
		}
	}
	return nil
}

// echoBase is how many times the echo keys[i] awaits shows on the live
// grid now, before the write it follows (0 when it awaits none): an echo
// is seen only once the grid shows it more often than that (echoShown).
func (t *Target) echoBase(keys []harness.Keystroke, i int) int {
	if i >= len(keys) || keys[i].Await == nil {
		return 0
	}
	return t.echoCount(nonEmpty(keys[i].Await.Echo))
}

// nonEmpty is ss without its empty strings.
func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, e := range ss {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Await waits until the target's output shows a, or a.Timeout passed
// (logged as a fallback), and reports whether a.Echo was seen (true when
// a has none). mark is the chunk count at the previous write: the echo
// must come after it; base is how often the echo showed on the grid at
// the previous write (echoBase; 0 when there was none).
func (t *Target) Await(ctx context.Context, a harness.Await, mark uint64, base int) (bool, error) {
	start := time.Now()
	id, spare := t.Who()
	what := "prompt delivery" // a warm spare's readiness waits on the same evidence
	if spare {
		what = "warm spare readiness"
	}
	deadline := time.NewTimer(a.Timeout)
	defer deadline.Stop()
	var quiet, settle *time.Timer
	defer func() {
		for _, tm := range []*time.Timer{quiet, settle} {
			if tm != nil {
				tm.Stop()
			}
		}
	}()
	echo := nonEmpty(a.Echo)
	echoed := len(echo) == 0
	var echoAt time.Time // when the echo was seen (or the wait began, without one)
	for {
		st := t.Out.State()
		waiting := ""
		if a.PasteMode && !st.PasteMode && !st.PasteFellBack {
			waiting = "bracketed paste mode"
		}
		if waiting == "" && len(a.Shown) > 0 && !t.shownAnywhere(a.Shown) {
			waiting = "the input box on the screen"
		}
		if echoed && len(echo) > 0 && t.boxEmpty(a) {
			// The TUI drew its empty input box after the echo was seen:
			// what was seen was a line of a redraw, not the paste.
			echoed, echoAt = false, time.Time{}
		}
		if waiting == "" && !echoed {
			if st.Chunks > mark && t.pasteShown(a, echo, base) {
				echoed = true
			} else {
				waiting = "the paste echoed at the cursor"
			}
		}
		if echoed && echoAt.IsZero() {
			echoAt = time.Now()
		}
		var quietC <-chan time.Time
		if waiting == "" && a.Quiet > 0 && time.Since(echoAt) < maxQuietWait {
			if rest := a.Quiet - time.Since(st.Last); rest > 0 {
				waiting = "quiet output"
				if quiet == nil {
					quiet = time.NewTimer(rest)
				} else {
					quiet.Reset(rest)
				}
				quietC = quiet.C
			}
		}
		var settleC <-chan time.Time
		if waiting == "" && a.Settle > 0 {
			if rest := a.Settle - time.Since(echoAt); rest > 0 {
				waiting = "the settle time after the echo"
				if settle == nil {
					settle = time.NewTimer(rest)
				} else {
					settle.Reset(rest)
				}
				settleC = settle.C
			}
		}
		if waiting == "" {
			t.Log.Debug(what+": evidence seen", "session", id, "waited", time.Since(start))
			return true, nil
		}
		select {
		case <-st.Wake:
		case <-quietC:
		case <-settleC:
		case <-deadline.C:
			if a.PasteMode && !st.PasteMode {
				t.Out.MarkPasteFellBack()
			}
			args := []any{"session", id, "waiting_for", waiting, "timeout", a.Timeout}
			if !echoed {
				args = append(args, "echo", echo, "near_cursor", t.nearCursor())
			}
			t.Log.Warn(what+" fell back to its timeout", args...)
			return echoed, nil
		case <-t.Exited:
			return false, ErrExited
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// A dropped paste (harness.Await.Lost) is judged on a settled screen:
// once the grid shows the empty input box or the echo and the output has
// been quiet lostSettle. lostWait bounds the judgement: a TUI that shows
// neither by then (a screen cleared and not drawn again, a TUI that keeps
// drawing) is not judged, and the write goes ahead.
const lostSettle = 500 * time.Millisecond

var lostWait = 10 * time.Second // a variable for the tests

// pasteLost reports whether, once the target's output has settled, the grid shows
// one of a.Lost (the TUI's empty input box) and not a.Echo at the cursor:
// the paste whose echo never came was dropped.
func (t *Target) pasteLost(ctx context.Context, a harness.Await, base int) (bool, error) {
	echo := nonEmpty(a.Echo)
	deadline := time.NewTimer(lostWait)
	defer deadline.Stop()
	settle := time.NewTimer(lostSettle)
	defer settle.Stop()
	for {
		st := t.Out.State()
		var settleC <-chan time.Time
		if echoed, empty := t.pasteShown(a, echo, base), t.shownAnywhere(a.Lost); echoed || empty {
			rest := lostSettle - time.Since(st.Last)
			if rest <= 0 {
				return empty && !echoed, nil
			}
			settle.Reset(rest)
			settleC = settle.C
		}
		select {
		case <-st.Wake:
		case <-settleC:
		case <-deadline.C:
			return false, nil
		case <-t.Exited:
			return false, ErrExited
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// echoShown reports whether the live grid shows one of echo on the
// cursor's row or the row above it, and shows the echo strings more often
// than base times in all: a line of the conversation that holds them (a
// resumed Gemini CLI draws its history again, with the cursor passing the
// end of each line) is not the paste's echo. The prompt of the
// restart test, "the second turn, after the restart", echoes as
// "restart", which ends the first turn's lines too: a redraw that dropped
// the paste, caught with the cursor after such a line, passed for the
// echo, and Enter went to an empty box (the send stayed pending).
func (t *Target) echoShown(echo []string, base int) bool {
	live, row, _ := t.Grid()
	if countIn(live, echo) <= base {
		return false
	}
	for r := row; r >= 0 && r >= row-1; r-- {
		if r >= len(live) {
			continue
		}
		for _, e := range echo {
			if strings.Contains(live[r], e) {
				return true
			}
		}
	}
	return false
}

// boxEmpty reports whether the grid shows one of a.Lost, the TUI's
// empty input box: a box showing it holds no paste.
func (t *Target) boxEmpty(a harness.Await) bool {
	return len(a.Lost) > 0 && t.shownAnywhere(a.Lost)
}

// pasteShown is echoShown for a's echo, and not while the grid shows the
// empty input box (a.Lost): a resumed Gemini CLI that dropped the paste
// redraws its conversation, whose lines can end in the echo token, and
// the box, empty, after them; a wait that began before that redraw took
// its count (base) from a screen without those lines.
func (t *Target) pasteShown(a harness.Await, echo []string, base int) bool {
	return !t.boxEmpty(a) && t.echoShown(echo, base)
}

// echoCount is how many times the live grid shows the strings of echo.
func (t *Target) echoCount(echo []string) int {
	if len(echo) == 0 {
		return 0
	}
	live, _, _ := t.Grid()
	return countIn(live, echo)
}

// countIn counts the occurrences of the strings of ss in rows.
func countIn(rows, ss []string) int {
	n := 0
	for _, row := range rows {
		for _, e := range ss {
			n += strings.Count(row, e)
		}
	}
	return n
}

// shownAnywhere reports whether the live grid shows one of shown (empty
// strings ignored) on any row.
func (t *Target) shownAnywhere(shown []string) bool {
	live, _, _ := t.Grid()
	for _, row := range live {
		for _, w := range shown {
			if w != "" && strings.Contains(row, w) {
				return true
			}
		}
	}
	return false
}

// nearCursor renders the cursor's row and the rows around it, trimmed,
// for the log of a fallback.
func (t *Target) nearCursor() string {
	live, row, col := t.Grid()
	var b strings.Builder
	fmt.Fprintf(&b, "cursor %d,%d", row, col)
	for r := max(0, row-3); r < min(len(live), row+2); r++ {
		fmt.Fprintf(&b, " | %d:%q", r, strings.TrimRight(live[r], " "))
	}
	return b.String()
}
