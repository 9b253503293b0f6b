package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// outputWatch is what a generation's output showed so far, for delivery.
// The pump feeds it after the emulator took each chunk. The zero value
// is ready to use.
type outputWatch struct {
	mu     sync.Mutex
	chunks uint64    // chunks seen
	last   time.Time // when the last one arrived
	modes  modeScan
	// pasteFellBack records a wait for bracketed paste that timed out:
	// later prompts of the generation do not wait for it again.
	pasteFellBack bool
	wake          chan struct{} // closed and cleared on the next chunk
}

// observe records one chunk of output.
func (w *outputWatch) observe(p []byte) {
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

// outputState is a snapshot of an outputWatch.
type outputState struct {
	chunks        uint64
	last          time.Time
	pasteMode     bool
	pasteFellBack bool
	wake          <-chan struct{} // closed when the next chunk arrives
}

func (w *outputWatch) state() outputState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wake == nil {
		w.wake = make(chan struct{})
	}
	return outputState{chunks: w.chunks, last: w.last, pasteMode: w.modes.pasteMode, pasteFellBack: w.pasteFellBack, wake: w.wake}
}

func (w *outputWatch) markPasteFellBack() {
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

// maxQuietWait bounds the wait for quiet output once the rest of an
// Await holds: a TUI that animates (a spinner while its hook runs) is
// never quiet, and the echo already shows that the paste was taken.
const maxQuietWait = 50 * time.Millisecond

// errGenerationExited ends a delivery whose harness process is gone.
var errGenerationExited = errors.New("the harness exited during delivery")

// deliver writes keys to generation g of s, holding each write for its
// awaited evidence.
func (rt *runtime) deliver(ctx context.Context, s *session, g *generation, keys []harness.Keystroke) error {
	return rt.deliverWith(ctx, s, g, keys, g.proc.Write)
}

// deliverWith is deliver writing through write (a test plays the TUI).
func (rt *runtime) deliverWith(ctx context.Context, s *session, g *generation, keys []harness.Keystroke, write func([]byte) (int, error)) error {
	mark := g.out.state().chunks
	base := rt.echoBase(s, keys, 0)
	repasted := 0
	for i := 0; i < len(keys); i++ {
		k := keys[i]
		if k.Await != nil {
			echoed, err := rt.awaitEvidence(ctx, s, g, *k.Await, mark, base)
			if err != nil {
				return err
			}
			if !echoed && repasted < k.Await.Repaste {
				lost, err := rt.pasteLost(ctx, s, g, *k.Await, base)
				if err != nil {
					return err
				}
				if lost {
					repasted++
					s.mu.Lock()
					id := s.rec.ID
					s.mu.Unlock()
					rt.log.Warn("the paste never showed and the input box is empty again; writing the input again",
						"session", id, "attempt", repasted)
					i = -1 // the loop's i++ starts over at the first keystroke
					mark = g.out.state().chunks
					base = rt.echoBase(s, keys, 0)
					continue
				}
			}
		}
		mark = g.out.state().chunks
		base = rt.echoBase(s, keys, i+1)
		if _, err := write(k.Data); err != nil {
			return err
		}
		if k.Retry != nil {
			if err := rt.retryUnconfirmedWith(ctx, s, g, k, write); err != nil {
				return err
			}
		}
	}
	return nil
}

// retryUnconfirmedWith writes k again (k.Retry) while s's execution is
// not confirmed: a TUI that dropped the key gets it again, and one that
// took it has confirmed the prompt by then.
func (rt *runtime) retryUnconfirmedWith(ctx context.Context, s *session, g *generation, k harness.Keystroke, write func([]byte) (int, error)) error {
	s.mu.Lock()
	e := s.exec
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	for i := 0; i < k.Retry.Max; i++ {
		t := time.NewTimer(k.Retry.After)
		select {
		case <-e.submitted:
			t.Stop()
			return nil
		case <-e.done:
			t.Stop()
			return nil
		case <-g.exited:
			t.Stop()
			return errGenerationExited
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		s.mu.Lock()
		id := s.rec.ID
		s.mu.Unlock()
		rt.log.Info("prompt not confirmed; writing the key again", "session", id, "after", k.Retry.After, "attempt", i+1)
		if _, err := write(k.Data); err != nil {
			return err
		}
	}
	return nil
}

// await waits until g's output shows a, or a.Timeout passed (logged as a
// fallback). mark is the chunk count at the previous write: the echo must
// come after it.
func (rt *runtime) await(ctx context.Context, s *session, g *generation, a harness.Await, mark uint64) error {
	_, err := rt.awaitEvidence(ctx, s, g, a, mark, 0)
	return err
}

// echoBase is how many times the echo keys[i] awaits shows on the live
// grid now, before the write it follows (0 when it awaits none): an echo
// is seen only once the grid shows it more often than that (echoShown).
func (rt *runtime) echoBase(s *session, keys []harness.Keystroke, i int) int {
	if i >= len(keys) || keys[i].Await == nil {
		return 0
	}
	return rt.echoCount(s, nonEmpty(keys[i].Await.Echo))
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

// awaitEvidence is await, reporting also whether a.Echo was seen (true
// when a has none). base is how often the echo showed on the grid at the
// previous write (echoBase).
func (rt *runtime) awaitEvidence(ctx context.Context, s *session, g *generation, a harness.Await, mark uint64, base int) (bool, error) {
	start := time.Now()
	s.mu.Lock()
	id := s.rec.ID
	what := "prompt delivery" // a warm spare's readiness waits on the same evidence
	if s.spare != nil {
		what = "warm spare readiness"
	}
	s.mu.Unlock()
	deadline := time.NewTimer(a.Timeout)
	defer deadline.Stop()
	var quiet, settle *time.Timer
	defer func() {
		for _, t := range []*time.Timer{quiet, settle} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	echo := nonEmpty(a.Echo)
	echoed := len(echo) == 0
	var echoAt time.Time // when the echo was seen (or the wait began, without one)
	for {
		st := g.out.state()
		waiting := ""
		if a.PasteMode && !st.pasteMode && !st.pasteFellBack {
			waiting = "bracketed paste mode"
		}
		if waiting == "" && len(a.Shown) > 0 && !rt.shownAnywhere(s, a.Shown) {
			waiting = "the input box on the screen"
		}
		if waiting == "" && !echoed {
			if st.chunks > mark && rt.echoShown(s, echo, base) {
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
			if rest := a.Quiet - time.Since(st.last); rest > 0 {
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
			rt.log.Debug(what+": evidence seen", "session", id, "waited", time.Since(start))
			return true, nil
		}
		select {
		case <-st.wake:
		case <-quietC:
		case <-settleC:
		case <-deadline.C:
			if a.PasteMode && !st.pasteMode {
				g.out.markPasteFellBack()
			}
			args := []any{"session", id, "waiting_for", waiting, "timeout", a.Timeout}
			if !echoed {
				args = append(args, "echo", echo, "near_cursor", rt.nearCursor(s))
			}
			rt.log.Warn(what+" fell back to its timeout", args...)
			return echoed, nil
		case <-g.exited:
			return false, errGenerationExited
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

// pasteLost reports whether, once g's output has settled, the grid shows
// one of a.Lost (the TUI's empty input box) and not a.Echo at the cursor:
// the paste whose echo never came was dropped.
func (rt *runtime) pasteLost(ctx context.Context, s *session, g *generation, a harness.Await, base int) (bool, error) {
	echo := nonEmpty(a.Echo)
	deadline := time.NewTimer(lostWait)
	defer deadline.Stop()
	settle := time.NewTimer(lostSettle)
	defer settle.Stop()
	for {
		st := g.out.state()
		var settleC <-chan time.Time
		if echoed, empty := rt.echoShown(s, echo, base), rt.shownAnywhere(s, a.Lost); echoed || empty {
			rest := lostSettle - time.Since(st.last)
			if rest <= 0 {
				return empty && !echoed, nil
			}
			settle.Reset(rest)
			settleC = settle.C
		}
		select {
		case <-st.wake:
		case <-settleC:
		case <-deadline.C:
			return false, nil
		case <-g.exited:
			return false, errGenerationExited
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
func (rt *runtime) echoShown(s *session, echo []string, base int) bool {
	s.termMu.Lock()
	live := s.screen.Live()
	row, _ := s.screen.Cursor()
	s.termMu.Unlock()
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

// echoCount is how many times the live grid shows the strings of echo.
func (rt *runtime) echoCount(s *session, echo []string) int {
	if len(echo) == 0 {
		return 0
	}
	s.termMu.Lock()
	live := s.screen.Live()
	s.termMu.Unlock()
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
func (rt *runtime) shownAnywhere(s *session, shown []string) bool {
	s.termMu.Lock()
	live := s.screen.Live()
	s.termMu.Unlock()
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
func (rt *runtime) nearCursor(s *session) string {
	s.termMu.Lock()
	live := s.screen.Live()
	row, col := s.screen.Cursor()
	s.termMu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "cursor %d,%d", row, col)
	for r := max(0, row-3); r < min(len(live), row+2); r++ {
		fmt.Fprintf(&b, " | %d:%q", r, strings.TrimRight(live[r], " "))
	}
	return b.String()
}
