// Package hookfwd is the forwarder that injected harness hooks run: it
// sends the hook's stdin JSON to the daemon's hook socket and returns.
// A harness runs it for every hook, synchronously, so it is kept to the
// least work a process can do: it imports nothing that has to initialise
// (no cobra, no configuration, no net package: raw socket calls), reads
// stdin, makes one write of one request line and reads the one response
// line. `dlgt hook` runs it before any of the CLI is set up (see
// cmd/dlgt/main.go).
package hookfwd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// MaxPayload bounds one hook's stdin; provider payloads are small, so
// anything larger is refused rather than buffered.
const MaxPayload = 4 << 20

// Timeout bounds the whole exchange with the daemon, so a stuck daemon
// never stalls the harness for long.
const Timeout = 10 * time.Second

// maxResponse bounds the daemon's answer (a short acknowledgement).
const maxResponse = 64 << 10

// Usage is the forwarder's command line after "hook".
const Usage = "hook --socket PATH --launch ID EVENT"

// DecisionWait bounds how long a forwarder whose hook opened a pending
// request (a permission the daemon can answer: see session.respond) waits
// for the answer. It is under the hook's own timeout (the PermissionRequest
// hook gets harness.ClaudePermissionTimeout from Claude Code and
// harness.CodexPermissionTimeout from Codex, 600 s each), so the forwarder
// always ends before the harness would kill it.
var DecisionWait = 570 * time.Second

// Main is `dlgt hook --socket PATH --launch ID EVENT` with the hook's JSON
// on stdin. It prints nothing on stdout (some harnesses take hook stdout
// as model context) except the decision of a pending request answered
// through the daemon, and always returns 0, so a daemon problem never
// breaks the harness; failures go to stderr (the harness's hook log).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	socket, launch, event, err := parseArgs(args)
	if err == nil {
		var payload []byte
		if payload, err = readPayload(stdin); err == nil {
			var pending string
			if pending, err = ForwardPending(socket, launch, event, payload, Timeout); err == nil && pending != "" {
				var out string
				if out, err = AwaitDecision(socket, launch, pending, DecisionWait); err == nil && out != "" {
					_, err = io.WriteString(stdout, out+"\n")
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "dlgt hook:", err)
	}
	return 0
}

// parseArgs reads --socket and --launch (as "--flag value" or
// "--flag=value") and exactly one event name.
func parseArgs(args []string) (socket, launch, event string, err error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var val *string
		name := a
		if j := indexByte(a, '='); j >= 0 && len(a) > 2 && a[:2] == "--" {
			name = a[:j]
		}
		switch name {
		case "--socket":
			val = &socket
		case "--launch":
			val = &launch
		default:
			if len(a) > 1 && a[0] == '-' {
				return "", "", "", fmt.Errorf("unknown flag %s (usage: dlgt %s)", a, Usage)
			}
			rest = append(rest, a)
			continue
		}
		switch {
		case name != a:
			*val = a[len(name)+1:]
		case i+1 < len(args):
			i++
			*val = args[i]
		default:
			return "", "", "", fmt.Errorf("flag %s needs a value (usage: dlgt %s)", a, Usage)
		}
	}
	switch {
	case socket == "" || launch == "":
		return "", "", "", fmt.Errorf("--socket and --launch are required (usage: dlgt %s)", Usage)
	case len(rest) != 1 || rest[0] == "":
		return "", "", "", fmt.Errorf("one EVENT name is required, got %d arguments (usage: dlgt %s)", len(rest), Usage)
	}
	return socket, launch, rest[0], nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func readPayload(stdin io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, MaxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("reading hook input: %w", err)
	}
	if len(data) > MaxPayload {
		return nil, fmt.Errorf("hook input exceeds %d bytes", MaxPayload)
	}
	return data, nil
}

// Request is the request line Forward writes: an internal.hook call whose
// params carry payload as it is, with its line breaks (whitespace between
// JSON tokens: inside strings they are escaped) made spaces so the
// request stays one line. payload must be valid JSON; it goes last, so it
// can only be a value.
func Request(launch, event string, payload []byte) ([]byte, error) {
	if !json.Valid(payload) {
		return nil, errors.New("hook input is not JSON")
	}
	line := make([]byte, 0, len(payload)+len(launch)+len(event)+96)
	line = append(line, `{"id":"1","method":"internal.hook","params":{"launch_id":`...)
	line = appendString(line, launch)
	line = append(line, `,"event":`...)
	line = appendString(line, event)
	line = append(line, `,"payload":`...)
	for _, b := range payload {
		if b == '\n' || b == '\r' {
			b = ' '
		}
		line = append(line, b)
	}
	return append(line, "}}\n"...), nil
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20 || c == 0x7f:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c) // UTF-8 passes through; invalid bytes the daemon refuses
		}
	}
	return append(dst, '"')
}

// Forward delivers one hook to the daemon listening on socket and waits
// for its answer (so that hooks a harness runs one after another reach
// the daemon in order). It fails on a daemon error.
func Forward(socket, launch, event string, payload []byte, timeout time.Duration) error {
	_, err := ForwardPending(socket, launch, event, payload, timeout)
	return err
}

// ForwardPending is Forward, and returns the id of the pending request
// the hook opened, if the daemon made one (then the caller waits for its
// answer with AwaitDecision).
func ForwardPending(socket, launch, event string, payload []byte, timeout time.Duration) (string, error) {
	line, err := Request(launch, event, payload)
	if err != nil {
		return "", err
	}
	resp, err := exchange(socket, line, timeout)
	if err != nil {
		return "", err
	}
	if err := responseError(resp); err != nil {
		return "", err
	}
	var ack struct {
		Result struct {
			PendingID string `json:"pending_id"`
		} `json:"result"`
	}
	json.Unmarshal(resp, &ack)
	return ack.Result.PendingID, nil
}

// AwaitDecision waits up to wait for the answer to pending and returns
// the hook's output for it, "" when nobody answered (the harness's own
// dialog stays for a person) or the request was withdrawn.
func AwaitDecision(socket, launch, pending string, wait time.Duration) (string, error) {
	line := make([]byte, 0, 160)
	line = append(line, `{"id":"2","method":"internal.hook.decision","params":{"launch_id":`...)
	line = appendString(line, launch)
	line = append(line, `,"pending_id":`...)
	line = appendString(line, pending)
	line = append(line, `,"wait_ms":`...)
	line = append(line, fmt.Sprint(wait.Milliseconds())...)
	line = append(line, "}}\n"...)
	resp, err := exchange(socket, line, wait+Timeout)
	if err != nil {
		return "", err
	}
	if err := responseError(resp); err != nil {
		return "", err
	}
	var dec struct {
		Result struct {
			Output string `json:"output"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &dec); err != nil {
		return "", fmt.Errorf("malformed answer from the daemon: %v", err)
	}
	return dec.Result.Output, nil
}

// exchange writes one request line to socket and reads the answer line.
func exchange(socket string, line []byte, timeout time.Duration) ([]byte, error) {
	if timeout <= 0 {
		return nil, errors.New("no time left to reach the daemon")
	}
	fd, err := dial(socket, timeout)
	if err != nil {
		return nil, fmt.Errorf("daemon socket %s: %w", socket, err)
	}
	defer syscall.Close(fd)
	if err := writeAll(fd, line); err != nil {
		return nil, fmt.Errorf("daemon socket %s: %w", socket, err)
	}
	resp, err := readLine(fd)
	if err != nil {
		return nil, fmt.Errorf("daemon socket %s: %w", socket, err)
	}
	return resp, nil
}

// dial connects a Unix stream socket with send and receive timeouts.
func dial(path string, timeout time.Duration) (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	tv := syscall.NsecToTimeval(timeout.Nanoseconds())
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("connect", err)
	}
	return fd, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("write", err)
		}
		b = b[n:]
	}
	return nil
}

// readLine reads up to the first newline (the daemon answers one line).
func readLine(fd int) ([]byte, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxResponse {
				return nil, fmt.Errorf("the daemon's answer exceeds %d bytes", maxResponse)
			}
			grown := make([]byte, len(buf), 2*cap(buf))
			copy(grown, buf)
			buf = grown
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return nil, errors.New("no answer from the daemon within the timeout")
		}
		if err != nil {
			return nil, os.NewSyscallError("read", err)
		}
		if n == 0 {
			return nil, errors.New("the daemon closed the connection without answering")
		}
		for i, b := range buf[len(buf) : len(buf)+n] {
			if b == '\n' {
				return buf[:len(buf)+i], nil
			}
		}
		buf = buf[:len(buf)+n]
	}
}

// responseError is the daemon's error in a response line, if any.
func responseError(line []byte) error {
	var resp struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("malformed answer from the daemon: %v", err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", resp.Error.Code, resp.Error.Message)
	}
	return nil
}
