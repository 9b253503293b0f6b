package daemon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Interactive attach (internal.terminal.*). A human at a terminal either
// takes the exclusive input lease of a Session (mode "write") or watches it
// (mode "read"). The attach request is a stream: its ack carries the lease
// token and a repaint of the live grid, then PTY output follows as
// {"data_base64":...} lines until the client detaches, the connection
// closes or the harness exits. Output is tailed from the Session's raw log,
// so the pump never waits for a viewer; a viewer that cannot keep up
// exceeds its connection's pending budget and is dropped (which also
// releases a write lease).

// Attach limits.
const (
	// maxAttachInput bounds one internal.terminal.input payload (decoded).
	maxAttachInput = 64 << 10
	// attachChunk bounds the raw bytes of one output line.
	attachChunk = 32 << 10
	// attachPoll paces an attach stream while output flows (what arrived
	// meanwhile goes in one read); an idle one waits for the next output.
	attachPoll = 15 * time.Millisecond
	// redrawPause separates the two resizes that make the harness redraw.
	redrawPause = 120 * time.Millisecond
)

// terminals serves the interactive attach methods. It sees the runtime
// only as its terminalHost.
type terminals struct {
	host terminalHost
	log  *slog.Logger
}

// terminalHost is what attach needs of the runtime: Sessions by
// reference, storing a Session's record (its terminal size), withdrawing
// its open request for a person taking the lease.
type terminalHost interface {
	resolve(ref string) (*session, error)
	persistLocked(s *session) error
	withdrawForPersonLocked(s *session)
}

// leaseState is what the daemon remembers about a held lease beyond its
// token: the generation it was taken on, the size to restore, and a
// channel closed on release. Kept beside session.attach (keyed by the
// lease) so the session struct stays small.
type leaseState struct {
	gen        *generation
	rows, cols int
	released   chan struct{}
}

var leases = struct {
	sync.Mutex
	m map[*attachLease]*leaseState
}{m: map[*attachLease]*leaseState{}}

// resizeMu serializes PTY+emulator resizes of every Session (they are rare),
// so the redraw nudge and a client's resize do not interleave.
var resizeMu sync.Mutex

func newAttachToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// terminalAttach starts an attach stream.
func (tm *terminals) terminalAttach(ctx context.Context, peer rpc.Peer, p rpc.TerminalAttachParams) (rpc.Reply[rpc.TerminalAttachAck], error) {
	switch p.Mode {
	case "":
		p.Mode = rpc.AttachWrite
	case rpc.AttachWrite, rpc.AttachRead:
	default:
		return rpc.Reply[rpc.TerminalAttachAck]{}, rpc.InvalidField("mode", "must be write or read")
	}
	if p.Rows < 0 || p.Cols < 0 || p.Rows > maxRows || p.Cols > maxCols {
		return rpc.Reply[rpc.TerminalAttachAck]{}, rpc.InvalidField("rows", "terminal size must be within 1..%d rows and 1..%d cols", maxRows, maxCols)
	}
	s, err := tm.host.resolve(p.Session)
	if err != nil {
		return rpc.Reply[rpc.TerminalAttachAck]{}, err
	}
	s.mu.Lock()
	g := s.gen
	if g == nil || terminal(s.rec.State) {
		state, id := s.rec.State, s.rec.ID
		s.mu.Unlock()
		msg := "the Session is " + string(state) + " and has no live terminal"
		if terminal(state) {
			// session.restart relaunches a stopped or failed Session
			// without a prompt (send --resume needs one).
			msg += "; relaunch it first: dlgt session restart " + id
		} else {
			msg += " yet; attach again once it has started"
		}
		return rpc.Reply[rpc.TerminalAttachAck]{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: id, Message: msg}
	}
	st := &attachStream{tm: tm, s: s, g: g, mode: p.Mode}
	if p.Mode == rpc.AttachWrite {
		if s.attach != nil {
			s.mu.Unlock()
			return rpc.Reply[rpc.TerminalAttachAck]{}, &rpc.Error{Code: rpc.CodeAlreadyAttached, SessionID: s.rec.ID, Message: "another client holds the attach lease (attach with --read-only to watch)"}
		}
		lease := &attachLease{token: newAttachToken()}
		s.attach = lease
		rows, cols := g.proc.Size()
		ls := &leaseState{gen: g, rows: int(rows), cols: int(cols), released: make(chan struct{})}
		leases.Lock()
		leases.m[lease] = ls
		leases.Unlock()
		st.lease, st.ls = lease, ls
		// The lease ends with the connection even if the stream never
		// runs (the ack could not be sent); Run releases it earlier.
		token := lease.token
		context.AfterFunc(ctx, func() { tm.releaseLease(s, token) })
		tm.log.Info("attach lease taken", "session", s.rec.ID, "peer_pid", peer.PID)
		tm.host.withdrawForPersonLocked(s)
	}
	ack := rpc.TerminalAttachAck{SessionID: s.rec.ID, Mode: p.Mode, State: string(s.rec.State)}
	if st.lease != nil {
		ack.Token = st.lease.token
	}
	s.mu.Unlock()

	if st.lease != nil && p.Rows > 0 && p.Cols > 0 {
		tm.resizeTerminal(s, g, p.Rows, p.Cols)
	}
	// Render the grid and note where streaming starts, under the emulator
	// lock so the pump is not between the two.
	s.termMu.Lock()
	if s.screen != nil {
		ack.RepaintBase64 = base64.StdEncoding.EncodeToString(repaint(s.screen.Live(), s.screen))
		ack.Rows, ack.Cols = s.screen.Size()
	}
	_, ack.Offset = s.raw.Bounds()
	s.termMu.Unlock()
	st.ack, st.offset = ack, ack.Offset
	return rpc.Streamed[rpc.TerminalAttachAck](st), nil
}

// cursorer is the part of vt.Screen repaint needs.
type cursorer interface{ Cursor() (int, int) }

// repaint draws rows on a cleared screen and places the cursor.
func repaint(rows []string, sc cursorer) []byte {
	var b strings.Builder
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	for i, r := range rows {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(r)
	}
	y, x := sc.Cursor()
	fmt.Fprintf(&b, "\x1b[%d;%dH", y+1, x+1)
	return []byte(b.String())
}

// attachStream is one attach: it owns its lease (if any) for its lifetime.
type attachStream struct {
	tm     *terminals
	s      *session
	g      *generation
	mode   string
	lease  *attachLease
	ls     *leaseState
	ack    rpc.TerminalAttachAck
	offset int64
}

func (a *attachStream) Ack() rpc.TerminalAttachAck { return a.ack }

func (a *attachStream) Run(ctx context.Context, emit func([]byte) error) error {
	if a.lease != nil {
		defer a.tm.releaseLease(a.s, a.lease.token)
	}
	go a.tm.nudgeRedraw(a.s, a.g)
	var released <-chan struct{}
	if a.ls != nil {
		released = a.ls.released
	}
	pace := time.NewTimer(attachPoll)
	defer pace.Stop()
	end := func(why string) error {
		line, _ := rpc.Marshal(rpc.TerminalOutput{End: why})
		return emit(line)
	}
	for {
		// Taken before the drain: output written after it closes this.
		grew := a.g.out.State().Wake
		// Drain what is there before looking at why we might stop, so the
		// last output of an exiting harness reaches the viewer.
		sent := false
		for {
			data, _, next, more, err := a.s.raw.ReadAt(a.offset, attachChunk)
			if err != nil {
				return end("exited")
			}
			if len(data) == 0 {
				break
			}
			line, _ := rpc.Marshal(rpc.TerminalOutput{DataBase64: base64.StdEncoding.EncodeToString(data), Offset: next - int64(len(data))})
			if err := emit(line); err != nil {
				return err // the client was dropped (too slow or gone)
			}
			a.offset, sent = next, true
			if !more {
				break
			}
		}
		// While output flows, look again after attachPoll; once it
		// stopped, sleep until the harness prints again.
		var paced <-chan time.Time
		if sent {
			pace.Reset(attachPoll)
			paced, grew = pace.C, nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-released:
			return end("detached")
		case <-a.g.exited:
			// Output is drained by the pump before exited closes.
			if data, _, _, _, err := a.s.raw.ReadAt(a.offset, 1); err == nil && len(data) > 0 {
				continue
			}
			return end("exited")
		case <-paced:
		case <-grew:
		}
	}
}

// nudgeRedraw makes the harness repaint: a same-size SIGWINCH is ignored,
// so the PTY grows by one row and shrinks back.
func (tm *terminals) nudgeRedraw(s *session, g *generation) {
	rows, cols := g.proc.Size()
	r, c := int(rows), int(cols)
	other := r + 1
	if other > maxRows {
		other = r - 1
	}
	if other < 1 {
		return
	}
	tm.resizeTerminal(s, g, other, c)
	select {
	case <-time.After(redrawPause):
	case <-g.exited:
		return
	}
	// Only undo our own change: a client resize in between wins.
	if nr, nc := g.proc.Size(); int(nr) == other && int(nc) == c {
		tm.resizeTerminal(s, g, r, c)
	}
}

// resizeTerminal sets the emulator and the PTY of generation g to rows×cols
// (emulator first, so the harness's redraw is parsed at the new size).
func (tm *terminals) resizeTerminal(s *session, g *generation, rows, cols int) {
	resizeMu.Lock()
	defer resizeMu.Unlock()
	s.mu.Lock()
	live := s.gen == g
	s.mu.Unlock()
	if !live {
		return
	}
	if r, c := g.proc.Size(); int(r) == rows && int(c) == cols {
		return
	}
	s.termMu.Lock()
	if s.screen != nil {
		s.screen.Resize(rows, cols) // may call Reset, which takes s.mu
	}
	s.termMu.Unlock()
	if err := g.proc.Resize(uint16(rows), uint16(cols)); err != nil {
		tm.log.Debug("pty resize", "session", s.uid, "err", err)
	}
	s.mu.Lock()
	if s.gen == g {
		s.rec.Rows, s.rec.Cols = rows, cols
		tm.host.persistLocked(s)
	}
	s.mu.Unlock()
}

// releaseLease frees s's lease if token still names it, restoring the PTY
// size from before the attach. It reports whether the token was current.
func (tm *terminals) releaseLease(s *session, token string) bool {
	s.mu.Lock()
	l := s.attach
	if l == nil || subtle.ConstantTimeCompare([]byte(l.token), []byte(token)) != 1 {
		s.mu.Unlock()
		return false
	}
	s.attach = nil
	id := s.rec.ID
	s.mu.Unlock()
	leases.Lock()
	ls := leases.m[l]
	delete(leases.m, l)
	leases.Unlock()
	if ls != nil {
		close(ls.released)
		tm.resizeTerminal(s, ls.gen, ls.rows, ls.cols)
	}
	tm.log.Info("attach lease released", "session", id)
	return true
}

// leaseHolder checks token against s's lease and returns the generation
// it was taken on.
func leaseHolder(s *session, token string) (*generation, error) {
	s.mu.Lock()
	l := s.attach
	g := s.gen
	id := s.rec.ID
	s.mu.Unlock()
	if l == nil || token == "" || subtle.ConstantTimeCompare([]byte(l.token), []byte(token)) != 1 {
		return nil, &rpc.Error{Code: rpc.CodeInvalidArgument, SessionID: id, Message: "token does not hold this Session's attach lease (it was released or never taken)"}
	}
	if g == nil {
		return nil, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: id, Message: "the harness process has exited"}
	}
	return g, nil
}

func (tm *terminals) terminalInput(ctx context.Context, peer rpc.Peer, p rpc.TerminalInputParams) (rpc.TerminalInputResult, error) {
	if base64.StdEncoding.DecodedLen(len(p.DataBase64)) > maxAttachInput+3 {
		return rpc.TerminalInputResult{}, rpc.InvalidField("data_base64", "input is limited to %d bytes per call", maxAttachInput)
	}
	data, err := base64.StdEncoding.DecodeString(p.DataBase64)
	if err != nil {
		return rpc.TerminalInputResult{}, rpc.InvalidField("data_base64", "not base64: %v", err)
	}
	if len(data) > maxAttachInput {
		return rpc.TerminalInputResult{}, rpc.InvalidField("data_base64", "input is limited to %d bytes per call", maxAttachInput)
	}
	s, err := tm.host.resolve(p.Session)
	if err != nil {
		return rpc.TerminalInputResult{}, err
	}
	g, err := leaseHolder(s, p.Token)
	if err != nil {
		return rpc.TerminalInputResult{}, err
	}
	if len(data) > 0 {
		if _, err := g.proc.Write(data); err != nil {
			return rpc.TerminalInputResult{}, &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.snapshot().ID, Message: "writing to the harness: " + err.Error()}
		}
	}
	return rpc.TerminalInputResult{Written: len(data)}, nil
}

func (tm *terminals) terminalResize(ctx context.Context, peer rpc.Peer, p rpc.TerminalResizeParams) (rpc.TerminalResizeResult, error) {
	if p.Rows < 1 || p.Rows > maxRows {
		return rpc.TerminalResizeResult{}, rpc.InvalidField("rows", "must be within 1..%d", maxRows)
	}
	if p.Cols < 1 || p.Cols > maxCols {
		return rpc.TerminalResizeResult{}, rpc.InvalidField("cols", "must be within 1..%d", maxCols)
	}
	s, err := tm.host.resolve(p.Session)
	if err != nil {
		return rpc.TerminalResizeResult{}, err
	}
	g, err := leaseHolder(s, p.Token)
	if err != nil {
		return rpc.TerminalResizeResult{}, err
	}
	tm.resizeTerminal(s, g, p.Rows, p.Cols)
	return rpc.TerminalResizeResult{Rows: p.Rows, Cols: p.Cols}, nil
}

func (tm *terminals) terminalDetach(ctx context.Context, peer rpc.Peer, p rpc.TerminalDetachParams) (rpc.TerminalDetachResult, error) {
	s, err := tm.host.resolve(p.Session)
	if err != nil {
		return rpc.TerminalDetachResult{}, err
	}
	if !tm.releaseLease(s, p.Token) {
		return rpc.TerminalDetachResult{}, &rpc.Error{Code: rpc.CodeInvalidArgument, SessionID: s.snapshot().ID, Message: "token does not hold this Session's attach lease (it was released or never taken)"}
	}
	return rpc.TerminalDetachResult{Detached: true, Session: s.snapshot()}, nil
}
