// Package notify is dlgt notify: a notification adapter on event.subscribe
// that tells a person which Session waits and what it asks (and,
// optionally, which turn ended or failed). It follows the events through
// internal/follow, so it survives daemon restarts and, with a state file,
// its own restarts, never losing an event nor telling one twice; each
// notification is delivered (a line, a desktop notification, a command)
// before its event counts as handled.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/follow"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The event kinds --on selects, and the default.
var (
	Kinds        = []string{"blocked", "failed", "idle"}
	DefaultKinds = []string{"blocked", "failed"}
)

// Bounds of what a notification and its command cost.
const (
	// maxMessage bounds the message line, in bytes.
	maxMessage = 400
	// maxDetail bounds the quoted tool input, question or final text.
	maxDetail = 160
	// execOutputCap bounds what one command's output costs in memory.
	execOutputCap = 16 << 10
	// readTimeout bounds the session.read behind one notification.
	readTimeout = 10 * time.Second
	// desktopTimeout bounds one notify-send.
	desktopTimeout = 10 * time.Second
)

// Options configure Run.
type Options struct {
	// On are the kinds to tell (Kinds); empty is DefaultKinds.
	On []string
	// Ref routes the calls ("" for this machine's daemon).
	Ref string
	// After is where to start (nil: StateFile's seq, else the latest).
	After *uint64
	// StateFile, when set, stores the last event seq handled.
	StateFile string
	// Exec, when set, runs with /bin/sh once per notification, one at a
	// time, killed after ExecTimeout (0: 30 s).
	Exec        string
	ExecTimeout time.Duration
	// Desktop sends each notification with notify-send (DesktopBin when
	// set, else notify-send on PATH).
	Desktop    bool
	DesktopBin string
	// Bell ends each printed line with a terminal bell.
	Bell bool
	// Out receives one line per notification; Stderr notices and the
	// commands' output.
	Out, Stderr io.Writer
	// RetryMin is the follower's first reconnect delay (0: its default).
	RetryMin time.Duration
	// NoWait fails when no daemon runs at the start instead of waiting
	// for one.
	NoWait bool
}

// Notice is one notification.
type Notice struct {
	Seq       uint64
	Event     string // the event type, session.blocked for example
	SessionID string
	Alias     string
	Title     string
	Harness   string
	// Message is the line told: "<alias or title> (<harness>) is waiting: …".
	Message string
}

// Pending is the pending request of a blocked Session as session.read
// may carry it (decoded tolerantly: a daemon without it sends none).
type Pending struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Tool     string          `json:"tool"`
	Input    string          `json:"input"`
	Question string          `json:"question"`
	Options  []PendingOption `json:"options"`
	AskedAt  int64           `json:"asked_at_ms"`
}

// PendingOption is one choice of a pending question.
type PendingOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// sessionRead is the part of a session.read answer notify reads.
type sessionRead struct {
	Session struct {
		ID      string `json:"id"`
		Alias   string `json:"alias"`
		Title   string `json:"title"`
		Harness string `json:"harness"`
		State   string `json:"state"`
		// Pending is decoded on its own: a shape this version does not
		// know leaves the rest of the answer usable.
		Pending json.RawMessage `json:"pending"`
	} `json:"session"`
	Result *struct {
		ExecutionSeq uint64  `json:"execution_seq"`
		Status       string  `json:"status"`
		FinalText    *string `json:"final_text"`
		Error        *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"result"`
}

// ParseOn parses a --on list ("blocked,failed"): each a kind of Kinds,
// no repeats.
func ParseOn(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(Kinds, k) {
			return nil, rpc.InvalidField("on", "%q is not one of %s", clip(k, 32), strings.Join(Kinds, ", "))
		}
		if slices.Contains(out, k) {
			return nil, rpc.InvalidField("on", "%q is given twice", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// Run follows the events through c and tells each selected one until ctx
// ends (nil then), or until it cannot follow (the follower's error, or a
// failure to write to Out).
func Run(ctx context.Context, c *client.Client, opts Options) error {
	on := opts.On
	if len(on) == 0 {
		on = DefaultKinds
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.ExecTimeout <= 0 {
		opts.ExecTimeout = 30 * time.Second
	}
	if opts.Desktop && opts.DesktopBin == "" {
		bin, err := exec.LookPath("notify-send")
		if err != nil {
			fmt.Fprintln(opts.Stderr, "dlgt notify: notify-send is not on PATH: no desktop notifications, lines only")
			opts.Desktop = false
		} else {
			opts.DesktopBin = bin
		}
	}
	if opts.StateFile != "" {
		unlock, err := lockState(opts.StateFile)
		if err != nil {
			return err
		}
		defer unlock()
	}
	p := rpc.EventReadParams{After: opts.After}
	if p.After == nil && opts.StateFile != "" {
		n, ok, err := follow.ReadState(opts.StateFile)
		if err != nil {
			return err
		}
		if ok {
			p.After = &n
		}
	}
	return follow.Run(ctx, c, opts.Ref, follow.Options{
		Params: p, StateFile: opts.StateFile, Stderr: opts.Stderr, RetryMin: opts.RetryMin, Wait: !opts.NoWait, Name: "dlgt notify",
		Emit: func(line []byte) error {
			var ev rpc.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				return nil // the follower already checked it is an event
			}
			kind, ok := strings.CutPrefix(ev.Type, "session.")
			if !ok || !slices.Contains(on, kind) {
				return nil
			}
			raw, err := readSession(ctx, c, opts.Ref, ev.SessionID)
			if ctx.Err() != nil {
				return ctx.Err() // not handled: told after a restart
			}
			if err != nil {
				fmt.Fprintf(opts.Stderr, "dlgt notify: cannot read Session %s: %v\n", clip(ev.SessionID, 80), err)
			}
			// A command cut short by the end of the follow leaves the
			// event unhandled (told again after a restart).
			return deliver(ctx, opts, Describe(ev, raw), line)
		},
	})
}

// lockState takes path+".lock" for this process: two notifiers on one
// state file would tell every event twice.
func lockState(path string) (func(), error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "--state %s: %v", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "--state %s is in use by another dlgt notify (%v); give each its own --state", path, err)
	}
	return func() { f.Close() }, nil
}

// readSession is the raw session.read answer for id, from a running
// daemon only (never one started for it).
func readSession(ctx context.Context, c *client.Client, ref, id string) (json.RawMessage, error) {
	if id == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rc, err := c.DialExisting(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	var raw json.RawMessage
	err = rc.Call(ctx, rpc.MethodSessionRead, rpc.SessionReadParams{Session: id}, &raw)
	return raw, err
}

// Describe makes the notice for ev from the Session's session.read answer
// (nil or undecodable: the event alone).
func Describe(ev rpc.Event, read json.RawMessage) Notice {
	n := Notice{Seq: ev.Seq, Event: ev.Type, SessionID: ev.SessionID}
	var rd sessionRead
	if len(read) == 0 || json.Unmarshal(read, &rd) != nil || rd.Session.ID != ev.SessionID {
		rd = sessionRead{}
	}
	n.Alias, n.Title, n.Harness = clean(rd.Session.Alias, 64), clean(rd.Session.Title, 80), clean(rd.Session.Harness, 32)
	name := n.Alias
	if name == "" {
		name = n.Title
	}
	if name == "" {
		name = clean(ev.SessionID, 80)
	}
	if n.Harness != "" {
		name += " (" + n.Harness + ")"
	}
	var what string
	switch ev.Type {
	case rpc.EventSessionBlocked:
		var p *Pending
		if len(rd.Session.Pending) > 0 && json.Unmarshal(rd.Session.Pending, &p) != nil {
			p = nil
		}
		what = blockedText(ev, p)
		if st := rd.Session.State; st != "" && st != rpc.StateBlocked {
			what += " (now " + clean(st, 16) + ")"
		}
	case rpc.EventSessionFailed:
		what = "failed"
		detail := ev.Reason
		if r := rd.Result; r != nil && r.ExecutionSeq == ev.ExecutionSeq && r.Error != nil && r.Error.Message != "" {
			detail = r.Error.Message
		}
		if d := clean(firstLine(detail), maxDetail); d != "" {
			what += ": " + d
		}
	case rpc.EventSessionIdle:
		what = "finished"
		if ev.ExecutionSeq != 0 {
			what += " #" + strconv.FormatUint(ev.ExecutionSeq, 10)
		}
		if ev.ResultStatus != "" {
			what += " (" + clean(ev.ResultStatus, 32) + ")"
		}
		if r := rd.Result; r != nil && r.ExecutionSeq == ev.ExecutionSeq && r.FinalText != nil {
			if d := clean(firstLine(*r.FinalText), maxDetail); d != "" {
				what += ": " + d
			}
		}
	default:
		what = clean(ev.Type, 40)
	}
	n.Message = clip(name+" "+what, maxMessage)
	return n
}

// blockedText is what a blocked Session asks: its pending request when
// the daemon reports one, else the tool and command the event names.
func blockedText(ev rpc.Event, p *Pending) string {
	if p != nil {
		if p.Kind == "question" && p.Question != "" {
			s := "is waiting: " + clean(firstLine(p.Question), maxDetail)
			var labels []string
			for _, o := range p.Options {
				if l := clean(o.Label, 40); l != "" && len(labels) < 6 {
					labels = append(labels, l)
				}
			}
			if len(labels) > 0 {
				s += " [" + strings.Join(labels, " | ") + "]"
			}
			return s
		}
		if p.Tool != "" || p.Input != "" {
			return strings.TrimSpace("is waiting: " + clean(p.Tool, 40) + " " + clean(firstLine(p.Input), maxDetail))
		}
	}
	if ev.Tool != "" || ev.Command != "" {
		return strings.TrimSpace("is blocked: " + clean(ev.Tool, 40) + " " + clean(firstLine(ev.Command), maxDetail))
	}
	return "is blocked"
}

// firstLine is s up to its first line break, with "…" when more follows.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// clean makes untrusted text one safe line: control and format
// characters (escape sequences included) become spaces, runs of space
// one, and it is clipped to n bytes.
func clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
		if b.Len() > 4*n {
			break
		}
	}
	return clip(strings.TrimSpace(b.String()), n)
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// deliver tells one notice: the line (and bell), the desktop
// notification, the command. A failure to write the line ends the follow,
// as does a command cut short because the follow ends (ctx's error); a
// failing command is reported and the next event is told.
func deliver(ctx context.Context, opts Options, n Notice, line []byte) error {
	out := n.Message
	if opts.Bell {
		out += "\a"
	}
	if _, err := io.WriteString(opts.Out, out+"\n"); err != nil {
		return err
	}
	if opts.Desktop {
		title := n.Alias
		if title == "" {
			title = n.Title
		}
		if err := run(ctx, opts, desktopTimeout, "notify-send", []string{opts.DesktopBin, "-a", "dlgt", "--", clip("dlgt: "+title, 100), n.Message}, nil, nil, n); err != nil {
			return err
		}
	}
	if opts.Exec != "" {
		env := append(os.Environ(),
			"DLGT_SESSION="+n.SessionID,
			"DLGT_ALIAS="+n.Alias,
			"DLGT_HARNESS="+n.Harness,
			"DLGT_EVENT="+n.Event,
			"DLGT_EVENT_SEQ="+strconv.FormatUint(n.Seq, 10),
			"DLGT_MESSAGE="+n.Message,
		)
		return run(ctx, opts, opts.ExecTimeout, "--exec", []string{"/bin/sh", "-c", opts.Exec}, env, append(slices.Clone(line), '\n'), n)
	}
	return nil
}

// run runs argv (env nil: this process's environment) with stdin, killing
// it after timeout (or when parent ends: parent's error then);
// its output (the first execOutputCap bytes) goes to opts.Stderr.
func run(parent context.Context, opts Options, timeout time.Duration, what string, argv, env []string, stdin []byte, n Notice) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = env
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	out := &follow.Capped{N: execOutputCap}
	c.Stdout, c.Stderr = out, out
	c.WaitDelay = time.Second
	err := c.Run()
	if len(out.Bytes()) > 0 {
		opts.Stderr.Write(out.Bytes())
		if !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			fmt.Fprintln(opts.Stderr)
		}
	}
	if err != nil {
		if parent.Err() != nil {
			return parent.Err()
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("killed after %s", timeout)
		}
		fmt.Fprintf(opts.Stderr, "dlgt notify: %s for event %d (%s) failed: %v\n", what, n.Seq, n.Event, err)
	}
	return nil
}
