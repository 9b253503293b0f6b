package delivery

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/vt"
)

func TestModeScanBracketedPaste(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"\x1b[?2004h", true},
		{"text\x1b[?25l\x1b[?2004h\x1b[?1004hmore", true},
		{"\x1b[?1004;2004;2031h", true},
		{"\x1b[?2004h\x1b[?2004l", false},
		{"\x1b[?2004h\x1b[?1004;2004l", false},
		{"\x1b[?20045h", false},
		{"\x1b[2004h", false},         // not a private mode
		{"\x1b[?2004$p", false},       // a query, not a set
		{"\x1b\x1b[?2004h", true},     // ESC ESC: the second one starts over
		{"\x1b[?99999999999h", false}, // overlong parameter, capped
	} {
		// Every split point: the pump's chunks end anywhere.
		for cut := 0; cut <= len(c.out); cut++ {
			var m modeScan
			m.scan([]byte(c.out[:cut]))
			m.scan([]byte(c.out[cut:]))
			if m.pasteMode != c.want {
				t.Errorf("%q cut at %d: paste mode %v, want %v", c.out, cut, m.pasteMode, c.want)
			}
		}
	}
}

// logBuffer collects a logger's lines for a test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fakeSession, fakeGen and fakeExec stand for the daemon's Session, its
// generation and its execution: what a Target is built from.
type fakeSession struct {
	termMu sync.Mutex
	screen *vt.Screen
	mu     sync.Mutex
	id     string
	exec   *fakeExec
}

type fakeGen struct {
	out    Watch
	exited chan struct{}
}

type fakeExec struct{ submitted, done chan struct{} }

func (e *fakeExec) confirm() { close(e.submitted) }

// fakeDaemon builds a Target the way the daemon does.
type fakeDaemon struct{ log *slog.Logger }

func (rt *fakeDaemon) target(s *fakeSession, g *fakeGen, write func([]byte) (int, error)) *Target {
	return &Target{
		Out: &g.out, Exited: g.exited, Write: write, Log: rt.log,
		Grid: func() ([]string, int, int) {
			s.termMu.Lock()
			defer s.termMu.Unlock()
			row, col := s.screen.Cursor()
			return s.screen.Live(), row, col
		},
		Who: func() (string, bool) { return s.id, false },
		Exec: func() (<-chan struct{}, <-chan struct{}, bool) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.exec == nil {
				return nil, nil, false
			}
			return s.exec.submitted, s.exec.done, true
		},
	}
}

func (rt *fakeDaemon) await(ctx context.Context, s *fakeSession, g *fakeGen, a harness.Await, mark uint64) error {
	_, err := rt.target(s, g, nil).Await(ctx, a, mark, 0)
	return err
}

func (rt *fakeDaemon) deliverWith(ctx context.Context, s *fakeSession, g *fakeGen, keys []harness.Keystroke, write func([]byte) (int, error)) error {
	return rt.target(s, g, write).Deliver(ctx, keys)
}

func (rt *fakeDaemon) retryUnconfirmedWith(ctx context.Context, s *fakeSession, g *fakeGen, k harness.Keystroke, write func([]byte) (int, error)) error {
	return rt.target(s, g, write).retryUnconfirmed(ctx, k)
}

// deliveryRig is a Session with a live grid and a generation whose output
// the test plays, without a process.
func deliveryRig() (*fakeDaemon, *fakeSession, *fakeGen, *logBuffer) {
	logs := &logBuffer{}
	rt := &fakeDaemon{log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	s := &fakeSession{screen: vt.New(10, 40, vt.Callbacks{}), id: "claude:test"}
	g := &fakeGen{exited: make(chan struct{})}
	return rt, s, g, logs
}

// play is the pump: the grid takes the chunk, then the watch.
func play(s *fakeSession, g *fakeGen, out string) {
	s.termMu.Lock()
	s.screen.Write([]byte(out))
	s.termMu.Unlock()
	g.out.Observe([]byte(out))
}

const noFallback = time.Minute // a wait that ends before this ended on evidence

func awaitAsync(rt *fakeDaemon, s *fakeSession, g *fakeGen, a harness.Await, mark uint64) chan error {
	done := make(chan error, 1)
	go func() { done <- rt.await(context.Background(), s, g, a, mark) }()
	return done
}

func TestAwaitPasteMode(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	done := awaitAsync(rt, s, g, harness.Await{PasteMode: true, Timeout: noFallback}, 0)
	play(s, g, "starting up\r\n")
	select {
	case err := <-done:
		t.Fatalf("returned before bracketed paste was on: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	play(s, g, "\x1b[?25l\x1b[?2004h")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "fell back") {
		t.Fatalf("fell back: %s", logs)
	}
}

func TestAwaitPasteModeFallsBackOnce(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	if err := rt.await(context.Background(), s, g, harness.Await{PasteMode: true, Timeout: time.Millisecond}, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "prompt delivery fell back to its timeout") || !strings.Contains(logs.String(), "bracketed paste mode") {
		t.Fatalf("the fallback is not logged: %s", logs)
	}
	// The generation never showed it: the next prompt does not wait again.
	if err := rt.await(context.Background(), s, g, harness.Await{PasteMode: true, Timeout: noFallback}, 0); err != nil {
		t.Fatal(err)
	}
}

func TestAwaitEcho(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	a := harness.Await{Echo: []string{"", "WORD", "[Pasted text "}, Quiet: time.Millisecond, Timeout: noFallback}

	// Shown at the cursor, after the mark.
	play(s, g, "history\r\n> ")
	mark := g.out.State().Chunks
	done := awaitAsync(rt, s, g, a, mark)
	play(s, g, "\x1b[?2026h") // a redraw without the echo
	select {
	case err := <-done:
		t.Fatalf("returned before the echo: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	play(s, g, "two words WORD")
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A placeholder counts too, on the row above the cursor.
	play(s, g, "\r\n> ")
	mark = g.out.State().Chunks
	done = awaitAsync(rt, s, g, a, mark)
	play(s, g, "[Pasted text #1 +3 lines]\r\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "fell back") {
		t.Fatalf("fell back: %s", logs)
	}
}

func TestAwaitEchoNeedsNewOutputAtTheCursor(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	a := harness.Await{Echo: []string{"WORD"}, Timeout: 30 * time.Millisecond}
	// Already on screen before the write: not evidence for this paste.
	play(s, g, "> WORD")
	mark := g.out.State().Chunks
	if err := rt.await(context.Background(), s, g, a, mark); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "the paste echoed at the cursor") {
		t.Fatalf("stale echo taken as evidence: %s", logs)
	}
	// New output, but the word is only in history far above the cursor.
	play(s, g, "\r\nline\r\nline\r\n> ")
	mark = g.out.State().Chunks
	play(s, g, "x")
	if err := rt.await(context.Background(), s, g, a, mark); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "fell back"); n != 2 {
		t.Fatalf("history taken as the echo (%d fallbacks): %s", n, logs)
	}
}

func TestAwaitEndsWithTheGeneration(t *testing.T) {
	rt, s, g, _ := deliveryRig()
	close(g.exited)
	if err := rt.await(context.Background(), s, g, harness.Await{PasteMode: true, Timeout: noFallback}, 0); err != ErrExited {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, s, g, _ = deliveryRig()
	if err := rt.await(ctx, s, g, harness.Await{PasteMode: true, Timeout: noFallback}, 0); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// A TUI that keeps drawing (a spinner) after the echo is never quiet: the
// echo alone then ends the wait, with no fallback.
func TestAwaitEchoWithoutQuiet(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	play(s, g, "> ")
	mark := g.out.State().Chunks
	play(s, g, "prompt WORD")
	stop := make(chan struct{})
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				play(s, g, "\x1b7\x1b[1;1H"+string("|/-\\"[i%4])+"\x1b8")
			}
		}
	}()
	err := rt.await(context.Background(), s, g, harness.Await{Echo: []string{"WORD"}, Quiet: time.Hour, Timeout: noFallback}, mark)
	close(stop)
	<-spun
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "fell back") {
		t.Fatalf("fell back: %s", logs)
	}
}

// Settle holds the write for a time after the echo was seen, even while
// the TUI keeps drawing: it is counted from the echo, not from quiet.
func TestAwaitSettleAfterEcho(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	play(s, g, "> ")
	mark := g.out.State().Chunks
	const settle = 60 * time.Millisecond
	done := awaitAsync(rt, s, g, harness.Await{Echo: []string{"WORD"}, Settle: settle, Timeout: noFallback}, mark)
	select {
	case err := <-done:
		t.Fatalf("returned before the echo: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	play(s, g, "prompt WORD")
	echoed := time.Now()
	for i := 0; i < 3; i++ { // redraws after the echo do not restart it
		time.Sleep(10 * time.Millisecond)
		play(s, g, "\x1b7\x1b[1;1H-\x1b8")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(echoed); d < settle {
		t.Fatalf("the write was allowed %v after the echo, want at least %v", d, settle)
	}
	if strings.Contains(logs.String(), "fell back") {
		t.Fatalf("fell back: %s", logs)
	}
}

// Shown waits for the input box anywhere on the grid (a resumed Gemini
// turns bracketed paste on and reports ready before it has drawn it), and
// is met at once by a box already on the screen, with no new output.
func TestAwaitShown(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	a := harness.Await{PasteMode: true, Shown: []string{"", "Type your message"}, Timeout: noFallback}
	play(s, g, "\x1b[?2004h")
	done := awaitAsync(rt, s, g, a, g.out.State().Chunks)
	select {
	case err := <-done:
		t.Fatalf("returned before the input box was drawn: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	play(s, g, "history\r\n >   Type your message or @path\r\n footer")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := rt.await(context.Background(), s, g, a, g.out.State().Chunks); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "fell back") {
		t.Fatalf("fell back: %s", logs)
	}
}

// A keystroke with Retry is written again while the execution is not
// confirmed, at most Max times, and no more once it is.
func TestDeliverRetriesUntilConfirmed(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	var buf bytes.Buffer
	var mu sync.Mutex
	e := &fakeExec{submitted: make(chan struct{}), done: make(chan struct{})}
	s.exec = e
	write := func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) }
	key := harness.Keystroke{Data: []byte("\r"), Retry: &harness.Retry{After: time.Millisecond, Max: 3}}
	if err := rt.retryUnconfirmedWith(context.Background(), s, g, key, write); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "\r\r\r" || strings.Count(logs.String(), "writing the key again") != 3 {
		t.Fatalf("wrote %q after an unconfirmed prompt, want 3 more Enters; log %s", got, logs)
	}
	buf.Reset()
	e.confirm()
	key.Retry.After = noFallback
	if err := rt.retryUnconfirmedWith(context.Background(), s, g, key, write); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("wrote %q after the prompt was confirmed", buf.String())
	}
}

// tuiInput plays a TUI's input box for deliverWith: each write is
// recorded, and a bracketed paste is shown in the box unless drop says
// to lose it (the box is then drawn again empty, as Gemini CLI does when
// a resume's redraw swallows a paste).
type tuiInput struct {
	s      *fakeSession
	g      *fakeGen
	mu     sync.Mutex
	writes []string
	pastes int
	drop   func(paste int) bool
	blank  func() // a dropped paste clears the screen and draws later
}

const emptyBox = "\x1b[2J\x1b[H\x1b[?2004h > Type your message\r\x1b[3C"

func (u *tuiInput) write(p []byte) (int, error) {
	u.mu.Lock()
	u.writes = append(u.writes, string(p))
	paste := strings.HasPrefix(string(p), "\x1b[200~")
	if paste {
		u.pastes++
	}
	n := u.pastes
	u.mu.Unlock()
	if paste {
		if u.drop(n) && u.blank != nil {
			u.blank()
		} else if u.drop(n) {
			play(u.s, u.g, emptyBox)
		} else {
			play(u.s, u.g, "\x1b[2K\r > fix the WORD")
		}
	}
	return len(p), nil
}

func (u *tuiInput) written() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.writes...)
}

// deliveryKeys is a paste submission shaped like Gemini CLI's, with short
// fallbacks.
func deliveryKeys(repaste int) []harness.Keystroke {
	return []harness.Keystroke{
		{Data: []byte{0x15}, Await: &harness.Await{PasteMode: true, Shown: []string{"Type your message"}, Timeout: noFallback}},
		{Data: []byte("\x1b[200~fix the WORD\x1b[201~")},
		{Data: []byte{'\r'}, Await: &harness.Await{Echo: []string{"WORD", ""}, Timeout: 50 * time.Millisecond,
			Lost: []string{"Type your message"}, Repaste: repaste}},
	}
}

// A paste the TUI dropped (its input box drawn empty again, no echo) is
// written again from Ctrl-U, at most Repaste times; one that shows goes
// on to Enter at once.
func TestDeliverRepastesADroppedPaste(t *testing.T) {
	const clear, paste, enter = "\x15", "\x1b[200~fix the WORD\x1b[201~", "\r"
	for _, c := range []struct {
		name    string
		repaste int
		drop    func(int) bool
		want    []string
	}{
		{"shown", 2, func(int) bool { return false }, []string{clear, paste, enter}},
		{"dropped once", 2, func(n int) bool { return n == 1 }, []string{clear, paste, clear, paste, enter}},
		{"always dropped", 2, func(int) bool { return true }, []string{clear, paste, clear, paste, clear, paste, enter}},
		{"no repaste asked", 0, func(int) bool { return true }, []string{clear, paste, enter}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, s, g, logs := deliveryRig()
			play(s, g, emptyBox)
			u := &tuiInput{s: s, g: g, drop: c.drop}
			if err := rt.deliverWith(context.Background(), s, g, deliveryKeys(c.repaste), u.write); err != nil {
				t.Fatal(err)
			}
			if got := u.written(); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("wrote %q, want %q; log:\n%s", got, c.want, logs)
			}
			if n, want := strings.Count(logs.String(), "writing the input again"), len(c.want)/2-1; n != want {
				t.Fatalf("%d repastes logged, want %d:\n%s", n, want, logs)
			}
		})
	}
}

// A screen that shows no empty input box before lostWait (the TUI shows
// the paste in a way the echo missed) is not a dropped paste: Enter goes
// ahead, and nothing is pasted twice.
func TestDeliverNoRepasteWithoutAnEmptyBox(t *testing.T) {
	defer func(w time.Duration) { lostWait = w }(lostWait)
	lostWait = 200 * time.Millisecond
	rt, s, g, logs := deliveryRig()
	play(s, g, emptyBox)
	u := &tuiInput{s: s, g: g, drop: func(int) bool { return false }}
	keys := deliveryKeys(2)
	keys[2].Await.Echo = []string{"NOT-ON-SCREEN"}
	if err := rt.deliverWith(context.Background(), s, g, keys, u.write); err != nil {
		t.Fatal(err)
	}
	if got := u.written(); len(got) != 3 || got[2] != "\r" {
		t.Fatalf("wrote %q, want one paste and Enter; log:\n%s", got, logs)
	}
}

// A resumed Gemini CLI can clear the screen after taking the paste and
// stay blank a while before it draws the conversation and an empty box
// again: the judgement waits for that box, however long the blank lasts
// (within lostWait).
func TestDeliverRepasteWaitsForTheBoxAfterABlankScreen(t *testing.T) {
	rt, s, g, logs := deliveryRig()
	play(s, g, emptyBox)
	u := &tuiInput{s: s, g: g, drop: func(n int) bool { return n == 1 }}
	redrawn := u.redrawOnDrop("\x1b[2J\x1b[H", emptyBox, 3*lostSettle)
	if err := rt.deliverWith(context.Background(), s, g, deliveryKeys(2), u.write); err != nil {
		t.Fatal(err)
	}
	<-redrawn
	u.wantPastedTwice(t, logs)
}

// redrawOnDrop makes a dropped paste draw first at once and screen after
// d; the channel is closed once screen is drawn.
func (u *tuiInput) redrawOnDrop(first, screen string, d time.Duration) <-chan struct{} {
	redrawn := make(chan struct{})
	u.blank = func() {
		play(u.s, u.g, first)
		go func() {
			time.Sleep(d)
			play(u.s, u.g, screen)
			close(redrawn)
		}()
	}
	return redrawn
}

// wantPastedTwice checks that the input was written twice from Ctrl-U,
// then Enter once.
func (u *tuiInput) wantPastedTwice(t *testing.T, logs *logBuffer) {
	t.Helper()
	want := []string{"\x15", "\x1b[200~fix the WORD\x1b[201~", "\x15", "\x1b[200~fix the WORD\x1b[201~", "\r"}
	if got := u.written(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("wrote %q, want %q; log:\n%s", got, want, logs)
	}
}

// A resumed Gemini CLI draws its conversation again after a paste it
// dropped: a line of that conversation ending in the prompt's echo token,
// with the cursor after it, is not the paste's echo (the grid shows the
// token no more often than before the paste). The paste is written again
// once the empty box is back, not followed by an Enter into that box.
func TestDeliverEchoIsNotAConversationLine(t *testing.T) {
	const history = "\x1b[2J\x1b[H\x1b[?2004h> an earlier turn that ended in WORD"
	const screen = history + "\r\n > Type your message\r\x1b[3C"
	rt, s, g, logs := deliveryRig()
	play(s, g, screen)
	u := &tuiInput{s: s, g: g, drop: func(n int) bool { return n == 1 }}
	// The cursor stops after "WORD" a while.
	redrawn := u.redrawOnDrop(history, screen, 100*time.Millisecond)
	if err := rt.deliverWith(context.Background(), s, g, deliveryKeys(2), u.write); err != nil {
		t.Fatal(err)
	}
	<-redrawn
	u.wantPastedTwice(t, logs)
}

// The same redraw when the paste was written before the conversation was
// drawn (its count of the echo token taken on a screen without the
// conversation's lines): a line ending in the token, with the cursor
// after it and then in the empty box below it, is not the echo either,
// as long as the empty box shows. Before, Enter followed into the empty
// box and the send stayed pending (the restart scenario's Gemini row).
func TestDeliverEchoIsNotARedrawBeforeTheBox(t *testing.T) {
	const history = "\x1b[2J\x1b[H\x1b[?2004h> an earlier turn that ended in WORD"
	const screen = history + "\r\n > Type your message\r\x1b[3C"
	rt, s, g, logs := deliveryRig()
	play(s, g, emptyBox)
	u := &tuiInput{s: s, g: g, drop: func(n int) bool { return n == 1 }}
	redrawn := u.redrawOnDrop(history, screen, 10*time.Millisecond)
	keys := deliveryKeys(2)
	keys[2].Await.Settle = 30 * time.Millisecond // Gemini CLI's paste guard
	if err := rt.deliverWith(context.Background(), s, g, keys, u.write); err != nil {
		t.Fatal(err)
	}
	<-redrawn
	u.wantPastedTwice(t, logs)
}
