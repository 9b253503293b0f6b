// Package attach is the terminal side of `dlgt session attach`: the
// harness TUI of a Session on this terminal (raw mode, the alternate
// screen, keys to the harness under the input lease, resizes) until
// Ctrl-] detaches, through the client's dial policy.
package attach

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// detachKey is Ctrl-] (as in telnet): typing it detaches.
const detachKey = 0x1d

// makeRaw puts fd in raw mode (cfmakeraw) and returns the previous state.
func makeRaw(fd int) (*unix.Termios, error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, err
	}
	return old, nil
}

// Terminal sequences around an attach. The alternate screen keeps the
// user's shell screen intact; on the way out every mode a harness TUI
// commonly turns on is turned off again.
const (
	Enter = "\x1b[?1049h"
	// The final ESC[J erases what a harness printed on the main screen
	// after leaving the alternate screen itself (Claude Code does on exit).
	Leave = "\x1b[0m\x1b[r\x1b[?7h\x1b[?25h\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1016l\x1b[?1004l\x1b[?2031l\x1b[>4m\x1b[<u\x1b>\x1b[?1049l\x1b[J"
	// pasteOn: harness TUIs read bracketed paste; the harness turned it on
	// in its own terminal long ago, so this terminal is told again.
	pasteOn = "\x1b[?2004h"
)

// Options are an attach: the Session, the client that reaches its
// daemon, and the terminal.
type Options struct {
	Client *client.Client
	// Session is the Session's id or alias (a provider-qualified id is
	// routed to the daemon that holds it).
	Session string
	// In and Out are the terminal; InFd is In's descriptor (put in raw
	// mode while attached, and restored however the attach ends).
	In   io.Reader
	InFd int
	Out  io.Writer
	// ReadOnly watches without the input lease.
	ReadOnly bool
	// Size is the terminal's size: the writer's PTY takes it, at the
	// start and on every SIGWINCH.
	Size func() (rows, cols int, ok bool)
}

// Ending is how an attach ended: End is "detached" (Ctrl-]), "exited"
// (the harness process ended) or "interrupted" (a signal).
type Ending struct {
	SessionID string `json:"session_id"`
	Mode      string `json:"mode"`
	End       string `json:"end"`
}

// Run attaches the terminal to the Session's harness TUI until it is
// detached, the harness exits or a signal comes, and restores the
// terminal before it returns. A failure before the terminal was taken
// over leaves it untouched.
func Run(ctx context.Context, o Options) (Ending, error) {
	in, out, readOnly := o.In, o.Out, o.ReadOnly
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	params := rpc.TerminalAttachParams{Session: o.Session, Mode: rpc.AttachWrite}
	if readOnly {
		params.Mode = rpc.AttachRead
	}
	if rows, cols, ok := o.Size(); ok && !readOnly {
		params.Rows, params.Cols = min(rows, 500), min(cols, 1000)
	}
	stream, err := o.Client.Dial(ctx, o.Session)
	if err != nil {
		return Ending{}, err
	}
	defer stream.Close()
	var ctl *rpc.Client
	if !readOnly {
		if ctl, err = o.Client.Dial(ctx, o.Session); err != nil {
			return Ending{}, err
		}
		defer ctl.Close()
	}
	rawAck, next, err := stream.Subscribe(ctx, rpc.MethodTerminalAttach, params)
	if err != nil {
		return Ending{}, err
	}
	var ack rpc.TerminalAttachAck
	if err := json.Unmarshal(rawAck, &ack); err != nil {
		return Ending{}, rpc.Errorf(rpc.CodeInternal, "unexpected attach acknowledgement: %v", err)
	}
	paint, _ := base64.StdEncoding.DecodeString(ack.RepaintBase64)

	// From here on the terminal is ours: restore it however we leave.
	inFd := o.InFd
	saved, err := makeRaw(inFd)
	if err != nil {
		return Ending{}, rpc.Errorf(rpc.CodeInternal, "raw mode: %v", err)
	}
	var restoreOnce sync.Once
	restore := func() {
		restoreOnce.Do(func() {
			io.WriteString(out, Leave)
			unix.IoctlSetTermios(inFd, unix.TCSETS, saved)
		})
	}
	defer restore()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	start := Enter
	if !readOnly {
		start += pasteOn
	}
	out.Write(append([]byte(start), paint...))

	type ending struct {
		why string
		err error
	}
	endc := make(chan ending, 3)
	// Output: stream lines to the terminal.
	go func() {
		for {
			line, err := next()
			if err != nil {
				endc <- ending{"", err}
				return
			}
			var o rpc.TerminalOutput
			if err := json.Unmarshal(line, &o); err != nil {
				continue
			}
			if o.DataBase64 != "" {
				data, _ := base64.StdEncoding.DecodeString(o.DataBase64)
				if _, err := out.Write(data); err != nil {
					endc <- ending{"", err}
					return
				}
			}
			if o.End != "" {
				endc <- ending{o.End, nil}
				return
			}
		}
	}()
	// Input: keys to the harness until the detach key.
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			chunk := buf[:n]
			i := bytes.IndexByte(chunk, detachKey)
			if i >= 0 {
				chunk = chunk[:i]
			}
			if len(chunk) > 0 && ctl != nil {
				p := rpc.TerminalInputParams{Session: ack.SessionID, Token: ack.Token, DataBase64: base64.StdEncoding.EncodeToString(chunk)}
				if cerr := ctl.Call(ctx, rpc.MethodTerminalInput, p, nil); cerr != nil {
					endc <- ending{"", cerr}
					return
				}
			}
			if i >= 0 {
				endc <- ending{"detached", nil}
				return
			}
			if err != nil {
				endc <- ending{"", err}
				return
			}
		}
	}()

	var end ending
wait:
	for {
		select {
		case end = <-endc:
			break wait
		case <-ctx.Done():
			end = ending{why: "interrupted"}
			break wait
		case sig := <-sigs:
			if sig != syscall.SIGWINCH {
				end = ending{why: "interrupted"}
				break wait
			}
			if rows, cols, ok := o.Size(); ok && ctl != nil {
				p := rpc.TerminalResizeParams{Session: ack.SessionID, Token: ack.Token, Rows: min(rows, 500), Cols: min(cols, 1000)}
				go ctl.Call(ctx, rpc.MethodTerminalResize, p, nil)
			}
		}
	}
	if ctl != nil && end.why != "exited" {
		// Release now rather than when the connection closes, so the
		// caller's next command finds the lease free. Best effort.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		ctl.Call(dctx, rpc.MethodTerminalDetach, rpc.TerminalDetachParams{Session: ack.SessionID, Token: ack.Token}, nil)
		dcancel()
	}
	stream.Close()
	restore()
	if end.why == "" {
		if errors.Is(end.err, io.EOF) {
			end.err = rpc.Errorf(rpc.CodeRPCUnavailable, "the daemon closed the attach connection")
		}
		return Ending{}, end.err
	}
	return Ending{SessionID: ack.SessionID, Mode: ack.Mode, End: end.why}, nil
}
