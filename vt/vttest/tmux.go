package vttest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNoTmux is returned by TmuxReplay when tmux is not on PATH.
var ErrNoTmux = errors.New("tmux not on PATH")

// TmuxScreen is what tmux made of a byte stream: the lines in its history
// (oldest first) and the visible grid, each with trailing blanks trimmed.
type TmuxScreen struct {
	History []string
	Grid    []string
}

// TmuxReplay plays data through a private tmux server in a rows×cols pane
// (no status line, the pane's tty in raw mode so that the bytes reach tmux
// as the TUI wrote them) and returns its history and grid: the oracle the
// vt package's history is compared against. scroll-on-clear is off, as
// dlgt never turns a clear into history. The server is killed before
// TmuxReplay returns.
func TmuxReplay(data []byte, rows, cols int) (*TmuxScreen, error) {
	return TmuxReplaySegments([]Segment{{Data: data, Rows: rows, Cols: cols}})
}

// Segment is a piece of a stream played at one terminal size: the pane is
// resized to Rows×Cols (once the previous segment is parsed) before Data.
type Segment struct {
	Data       []byte
	Rows, Cols int
}

// TmuxReplaySegments is TmuxReplay for a stream with resizes between its
// segments.
func TmuxReplaySegments(segs []Segment) (*TmuxScreen, error) {
	if len(segs) == 0 {
		return nil, errors.New("no segments")
	}
	srv, err := newTmuxDir("set -g status off\nset -g history-limit 1000000\nset -g scroll-on-clear off\nset -g remain-on-exit on\n")
	if err != nil {
		return nil, err
	}
	defer srv.close()
	dir, sock, tmux := srv.dir, srv.sock, srv.run
	// The pane plays segment i, signals played<i>, and waits for resized<i>
	// before the next one.
	var sh strings.Builder
	sh.WriteString("stty raw -echo -opost")
	for i, sg := range segs {
		in := filepath.Join(dir, fmt.Sprintf("in%d", i))
		if err := os.WriteFile(in, sg.Data, 0o600); err != nil {
			return nil, err
		}
		if i > 0 {
			fmt.Fprintf(&sh, "; tmux -S '%s' wait-for resized%d", sock, i)
		}
		fmt.Fprintf(&sh, "; cat '%s'; tmux -S '%s' wait-for -S played%d", in, sock, i)
	}
	sh.WriteString("; exec sleep 3600")
	if _, err := tmux("new-session", "-d", "-x", strconv.Itoa(segs[0].Cols), "-y", strconv.Itoa(segs[0].Rows), sh.String()); err != nil {
		return nil, err
	}
	var cur *TmuxScreen
	for i, sg := range segs {
		if i > 0 {
			if _, err := tmux("resize-window", "-x", strconv.Itoa(sg.Cols), "-y", strconv.Itoa(sg.Rows)); err != nil {
				return nil, err
			}
			if _, err := tmux("wait-for", "-S", fmt.Sprintf("resized%d", i)); err != nil {
				return nil, err
			}
		}
		done := make(chan error, 1)
		go func() { _, err := tmux("wait-for", fmt.Sprintf("played%d", i)); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				return nil, err
			}
		case <-time.After(60 * time.Second):
			return nil, fmt.Errorf("tmux did not finish replaying segment %d in 60 s", i)
		}
		// The pane's last bytes may still be on their way to the server
		// when the signal arrives: go on once two captures agree.
		if cur, err = settledCapture(tmux, sg.Rows); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

func settledCapture(tmux func(...string) ([]byte, error), rows int) (*TmuxScreen, error) {
	var prev *TmuxScreen
	for range 50 {
		cur, err := tmuxCapture(tmux, rows)
		if err != nil {
			return nil, err
		}
		if prev != nil && equalScreens(prev, cur) {
			return cur, nil
		}
		prev = cur
		time.Sleep(100 * time.Millisecond)
	}
	return nil, errors.New("tmux's capture kept changing")
}

func tmuxCapture(tmux func(...string) ([]byte, error), rows int) (*TmuxScreen, error) {
	out, err := tmux("display-message", "-p", "#{history_size} #{pane_height}")
	if err != nil {
		return nil, err
	}
	var hist, height int
	if _, err := fmt.Sscan(string(out), &hist, &height); err != nil {
		return nil, fmt.Errorf("tmux display-message: %q: %v", out, err)
	}
	if height != rows {
		return nil, fmt.Errorf("tmux pane has %d rows, want %d", height, rows)
	}
	out, err = tmux("capture-pane", "-p", "-S", "-", "-E", "-")
	if err != nil {
		return nil, err
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	if len(lines) != hist+height {
		return nil, fmt.Errorf("tmux captured %d lines, want history %d + %d rows", len(lines), hist, height)
	}
	return &TmuxScreen{History: lines[:hist], Grid: lines[hist:]}, nil
}

func equalScreens(a, b *TmuxScreen) bool {
	return strings.Join(a.History, "\n") == strings.Join(b.History, "\n") &&
		strings.Join(a.Grid, "\n") == strings.Join(b.Grid, "\n")
}

// TmuxIngest times tmux parsing data in a detached rows×cols pane: from
// starting the server until the pane has played it all (its `cat` exited),
// the way the daemon's ingest benchmark measures tmux.
func TmuxIngest(data []byte, rows, cols int) (time.Duration, error) {
	srv, err := newTmuxDir("set -g status off\nset -g history-limit 10000\n")
	if err != nil {
		return 0, err
	}
	defer srv.close()
	in := filepath.Join(srv.dir, "in")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return 0, err
	}
	start := time.Now()
	shell := fmt.Sprintf("stty raw -echo -opost; cat '%s'; tmux -S '%s' wait-for -S played; exec sleep 3600", in, srv.sock)
	if _, err := srv.run("new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), shell); err != nil {
		return 0, err
	}
	if _, err := srv.run("wait-for", "played"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// tmuxDir is a private tmux server's directory: its socket and its
// configuration. The server starts with the first run that makes a
// session.
type tmuxDir struct {
	dir, sock, cfg string
}

// newTmuxDir makes a tmuxDir whose configuration is conf; ErrNoTmux
// when tmux is not on PATH.
func newTmuxDir(conf string) (*tmuxDir, error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return nil, ErrNoTmux
	}
	// Unix socket paths are short: keep the directory near the root.
	dir, err := os.MkdirTemp("", "vtmux")
	if err != nil {
		return nil, err
	}
	d := &tmuxDir{dir: dir, sock: filepath.Join(dir, "s"), cfg: filepath.Join(dir, "conf")}
	if err := os.WriteFile(d.cfg, []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return d, nil
}

// run runs one tmux command on the server (UTF-8, outside any tmux) and
// returns its output.
func (d *tmuxDir) run(args ...string) ([]byte, error) {
	c := exec.Command("tmux", append([]string{"-u", "-S", d.sock, "-f", d.cfg}, args...)...)
	c.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TMUX=")
	out, err := c.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("tmux %s: %v: %s", args[0], err, out)
	}
	return out, nil
}

// close kills the server and removes the directory.
func (d *tmuxDir) close() {
	d.run("kill-server")
	os.RemoveAll(d.dir)
}
