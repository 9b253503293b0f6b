package main

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

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/dlgt-dev/dlgt/daemon"
	"github.com/dlgt-dev/dlgt/rpc"
)

// detachKey is Ctrl-] (as in telnet): typing it detaches.
const detachKey = 0x1d

const attachLong = `Attach this terminal to a Session's harness TUI.

The live screen is repainted, then everything the harness prints appears
here and (unless --read-only) everything typed goes to the harness: answer
a permission prompt, steer a turn, type a prompt of your own. Press Ctrl-]
to detach: the harness keeps running and this terminal is restored.

Writing takes the Session's exclusive input lease: while it is held,
session send answers SESSION_ATTACHED, and a second writer gets
ALREADY_ATTACHED. The lease ends with Ctrl-], when this command exits for
any reason, or when its connection drops. --read-only watches without the
lease; any number of observers may watch beside the writer. The harness
PTY takes this terminal's size while a writer is attached and gets its
previous size back on detach.

Needs a terminal on stdin and stdout; otherwise it prints
{"ok":false,"error":{"code":"INVALID_ARGUMENT",...}} and exits 1. After
detaching it prints {"ok":true,"session_id":...,"end":"detached"} ("exited"
when the harness process ended, "interrupted" on a signal).`

func newSessionAttachCommand(e *env) *cobra.Command {
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "attach SESSION [--read-only]",
		Short: "Take over a Session's terminal interactively (detach with Ctrl-])",
		Long:  attachLong,
		Example: `  dlgt session attach review
  dlgt session attach review --read-only`,
		Args: jsonArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.attach(cmd, args[0], readOnly)
		},
	}
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "watch without taking the input lease (keys other than Ctrl-] are ignored)")
	addPretty(cmd)
	return cmd
}

// fileIsTerminal reports whether f is an *os.File on a terminal.
func fileIsTerminal(f any) bool {
	fd, ok := fdOf(f)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

func fdOf(f any) (int, bool) {
	if c, ok := f.(clearFirst); ok {
		f = c.w
	}
	file, ok := f.(*os.File)
	if !ok || file == nil {
		return 0, false
	}
	return int(file.Fd()), true
}

// terminalSize is f's window size, if it is a terminal.
func terminalSize(f any) (rows, cols int, ok bool) {
	fd, isFile := fdOf(f)
	if !isFile {
		return 0, 0, false
	}
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 || ws.Col == 0 {
		return 0, 0, false
	}
	return int(ws.Row), int(ws.Col), true
}

// terminalWidth is w's column count, or 80.
func terminalWidth(w any) int {
	if _, cols, ok := terminalSize(w); ok {
		return cols
	}
	return 80
}

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
	enterAttach = "\x1b[?1049h"
	// The final ESC[J erases what a harness printed on the main screen
	// after leaving the alternate screen itself (Claude Code does on exit).
	leaveAttach = "\x1b[0m\x1b[r\x1b[?7h\x1b[?25h\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1016l\x1b[?1004l\x1b[?2031l\x1b[>4m\x1b[<u\x1b>\x1b[?1049l\x1b[J"
	// pasteOn: harness TUIs read bracketed paste; the harness turned it on
	// in its own terminal long ago, so this terminal is told again.
	pasteOn = "\x1b[?2004h"
)

func (e *env) attach(cmd *cobra.Command, ref string, readOnly bool) error {
	in, out := e.stdin, e.stdout
	if !e.terminal(in) || !e.terminal(out) {
		return printFailure(cmd, rpc.Errorf(rpc.CodeInvalidArgument, "attach needs a terminal"))
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()

	params := daemon.TerminalAttachParams{Session: ref, Mode: daemon.AttachWrite}
	if readOnly {
		params.Mode = daemon.AttachRead
	}
	if rows, cols, ok := terminalSize(out); ok && !readOnly {
		params.Rows, params.Cols = min(rows, 500), min(cols, 1000)
	}
	stream, err := e.connect(ctx)
	if err != nil {
		return printFailure(cmd, err)
	}
	defer stream.Close()
	var ctl *rpc.Client
	if !readOnly {
		if ctl, err = e.connect(ctx); err != nil {
			return printFailure(cmd, err)
		}
		defer ctl.Close()
	}
	rawAck, next, err := stream.Subscribe(ctx, rpc.MethodTerminalAttach, params)
	if err != nil {
		return printFailure(cmd, err)
	}
	var ack daemon.TerminalAttachAck
	if err := json.Unmarshal(rawAck, &ack); err != nil {
		return printFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected attach acknowledgement: %v", err))
	}
	paint, _ := base64.StdEncoding.DecodeString(ack.RepaintBase64)

	// From here on the terminal is ours: restore it however we leave.
	inFd, _ := fdOf(in)
	saved, err := makeRaw(inFd)
	if err != nil {
		return printFailure(cmd, rpc.Errorf(rpc.CodeInternal, "raw mode: %v", err))
	}
	var restoreOnce sync.Once
	restore := func() {
		restoreOnce.Do(func() {
			io.WriteString(out, leaveAttach)
			unix.IoctlSetTermios(inFd, unix.TCSETS, saved)
		})
	}
	defer restore()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	start := enterAttach
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
			var o daemon.TerminalOutput
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
				p := daemon.TerminalInputParams{Session: ack.SessionID, Token: ack.Token, DataBase64: base64.StdEncoding.EncodeToString(chunk)}
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
			if rows, cols, ok := terminalSize(out); ok && ctl != nil {
				p := daemon.TerminalResizeParams{Session: ack.SessionID, Token: ack.Token, Rows: min(rows, 500), Cols: min(cols, 1000)}
				go ctl.Call(ctx, rpc.MethodTerminalResize, p, nil)
			}
		}
	}
	if ctl != nil && end.why != "exited" {
		// Release now rather than when the connection closes, so the
		// caller's next command finds the lease free. Best effort.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		ctl.Call(dctx, rpc.MethodTerminalDetach, daemon.TerminalDetachParams{Session: ack.SessionID, Token: ack.Token}, nil)
		dcancel()
	}
	stream.Close()
	restore()
	if end.why == "" {
		if errors.Is(end.err, io.EOF) {
			end.err = rpc.Errorf(rpc.CodeRPCUnavailable, "the daemon closed the attach connection")
		}
		return printFailure(cmd, end.err)
	}
	return printOK(cmd, struct {
		SessionID string `json:"session_id"`
		Mode      string `json:"mode"`
		End       string `json:"end"`
	}{ack.SessionID, ack.Mode, end.why})
}
